// The live follower in-process, with the socket's path broken on purpose: polling covers a
// socket that never connects, and a dropped socket reconnects and fills the gap over HTTP.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, connect, type Server, type Socket } from "node:net";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { changeTask } from "../../src/modules/tasks/store";
import { ApiClient } from "../../src/cli/client/http";
import { followTask } from "../../src/cli/client/follow";
import type { TaskEvent } from "../../src/cli/client/types";

let s: TestServer;
let owner: Session;
let projectId: string;

beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  projectId = (await s.api("POST", `/orgs/${owner.orgId}/projects`, { body: { name: "follow" }, token: owner.accessToken })).body.id;
});
afterAll(() => s.stop());

/** A client whose WebSocket goes to `wsBase` instead of the server. */
function clientVia(wsBase: string): ApiClient {
  const client = new ApiClient(s.url, { kind: "token", token: "" });
  Object.assign(client, { accessToken: async () => owner.accessToken, wsUrl: () => `${wsBase}/api/v1/ws` });
  return client;
}

async function newTask(): Promise<string> {
  return (await s.api("POST", `/orgs/${owner.orgId}/tasks`, { body: { projectId, title: "t", prompt: "p" }, token: owner.accessToken })).body.id;
}

function logLine(taskId: string, line: string) {
  return changeTask(s.core, owner.orgId, taskId, () => ({ events: [{ type: "log", data: { line } }] }));
}

function finish(taskId: string) {
  return changeTask(s.core, owner.orgId, taskId, (row) => ({ patch: { status: "completed" }, events: [{ type: "status", data: { from: row.status, to: "completed" } }] }));
}

/** A TCP relay to the server whose connections can be cut. */
function relay(): Promise<{ url: string; cut(): void; close(): void; connections(): number }> {
  const port = Number(new URL(s.url).port);
  const open = new Set<Socket>();
  let total = 0;
  const server: Server = createServer((down) => {
    total++;
    const up = connect(port, "127.0.0.1");
    for (const sock of [down, up]) {
      open.add(sock);
      sock.on("close", () => open.delete(sock));
      sock.on("error", () => {});
    }
    down.pipe(up);
    up.pipe(down);
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () => {
      const { port: relayPort } = server.address() as { port: number };
      resolve({
        url: `ws://127.0.0.1:${relayPort}`,
        cut: () => open.forEach((sock) => sock.destroy()),
        close: () => server.close(),
        connections: () => total,
      });
    }),
  );
}

describe("followTask", () => {
  test("no socket at all: polling alone shows every event once and ends at the terminal state", async () => {
    const id = await newTask();
    const seen: TaskEvent[] = [];
    const following = followTask({
      client: clientVia("ws://127.0.0.1:1"),
      orgId: owner.orgId,
      taskId: id,
      pollMs: 50,
      onEvent: (e) => seen.push(e),
      done: (t) => t.status === "completed",
    });
    await Bun.sleep(120);
    for (let i = 0; i < 3; i++) await logLine(id, `line ${i}`);
    await Bun.sleep(120);
    await finish(id);
    const final = await following;
    expect(final.status).toBe("completed");
    expect(seen.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
  });

  test("a dropped socket reconnects; events missed meanwhile are read over HTTP on resubscribe", async () => {
    const r = await relay();
    try {
      const id = await newTask();
      const seen: number[] = [];
      let resolveSeen: (() => void) | null = null;
      const following = followTask({
        client: clientVia(r.url),
        orgId: owner.orgId,
        taskId: id,
        // Polls are too slow to matter here: only the socket and the resubscribe catch-up deliver.
        pollMs: 60_000,
        safetyPollMs: 60_000,
        onEvent: (e) => {
          seen.push(e.seq);
          resolveSeen?.();
        },
        done: (t) => t.status === "completed",
      });
      const until = async (n: number) => {
        while (seen.length < n) await new Promise<void>((res) => (resolveSeen = res));
      };
      await until(1);
      for (let i = 0; i < 50 && r.connections() === 0; i++) await Bun.sleep(10);
      await Bun.sleep(50); // subscribed
      await logLine(id, "live");
      await until(2);

      r.cut();
      await Bun.sleep(20);
      await logLine(id, "missed one");
      await logLine(id, "missed two");
      await until(4); // delivered after the reconnect
      expect(r.connections()).toBeGreaterThanOrEqual(2);
      await finish(id);
      expect((await following).status).toBe("completed");
      expect(seen).toEqual([1, 2, 3, 4, 5]);
    } finally {
      r.close();
    }
  }, 15_000);

  test("another org's task: the refusal ends the follow with the server's code", async () => {
    const client = clientVia(s.url.replace(/^http/, "ws"));
    const following = followTask({ client, orgId: "org_someoneelse", taskId: "tsk_x", pollMs: 60_000, onEvent() {}, done: () => false });
    await expect(following).rejects.toMatchObject({ code: expect.stringMatching(/forbidden|not_found/) });
  });
});
