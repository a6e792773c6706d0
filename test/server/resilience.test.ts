// Errors outside a request (a timer, a socket handler, a listener after commit) are logged and the
// server keeps serving: Bun would otherwise end the process on an uncaught exception.
import { afterEach, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { CoreEvents } from "../../src/server/core";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { createAdmin } from "../helpers/identity";
import { makeWorker, ProtocolClient } from "../workers/helpers";

let s: TestServer | null = null;
afterEach(async () => {
  await s?.stop();
  s = null;
});

function capture() {
  const lines: string[] = [];
  const logger = { info() {}, warn: (m: string) => void lines.push(`warn ${m}`), error: (m: string) => void lines.push(`error ${m}`) };
  return { lines, logger };
}

describe("resilience", () => {
  test("a failing listener does not reach the emitter; the other listeners still run", () => {
    const failures: string[] = [];
    const events = new CoreEvents((name) => failures.push(name));
    const heard: string[] = [];
    events.on("task.action", () => {
      throw new Error("boom");
    });
    events.on("task.action", () => void heard.push("second"));
    expect(() => events.emit("task.action", {} as never)).not.toThrow();
    expect(failures).toEqual(["task.action"]);
    expect(heard).toEqual(["second"]);
  });

  test("a listener that throws after a task was created: the create still answers 201", async () => {
    const { lines, logger } = capture();
    s = await startTestServer({ logger });
    const owner = await createAdmin(s);
    s.core.events.on("task.changed", () => {
      throw new Error("listener bug");
    });
    const project = await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: "p" } });
    const created = await s.api("POST", `/orgs/${owner.orgId}/tasks`, {
      token: owner.accessToken,
      body: { projectId: project.body.id, title: "t", prompt: "p" },
    });
    expect(created.status).toBe(201);
    const read = await s.api("GET", `/orgs/${owner.orgId}/tasks/${created.body.id}`, { token: owner.accessToken });
    expect(read.status).toBe(200);
    expect(lines.some((l) => l.startsWith("error listener of task.changed failed"))).toBe(true);
  });

  test("a socket handler that throws closes that socket; the server keeps serving", async () => {
    const { lines, logger } = capture();
    s = await startTestServer({ logger });
    s.core.sockets.register("/api/v1/test-throw", {
      upgrade: () => ({}),
      message: () => {
        throw new Error("handler bug");
      },
    });
    const ws = new WebSocket(s.url.replace("http", "ws") + "/api/v1/test-throw");
    await new Promise((r) => (ws.onopen = r));
    const closed = new Promise<number>((r) => (ws.onclose = (e) => r(e.code)));
    ws.send("hello");
    expect(await closed).toBe(1011);
    expect((await s.api("GET", "/health")).status).toBe(200);
    expect(lines.some((l) => l.includes("socket message on /api/v1/test-throw failed"))).toBe(true);
  });

  // SQLite's file lock (BEGIN EXCLUSIVE from another connection, busy_timeout); PostgreSQL locks rows, not the database.
  test.skipIf(onPostgres)("the database locked by another process for a while: timers log and retry, the server lives", async () => {
    const { lines, logger } = capture();
    s = await startTestServer({ logger, workerTimeouts: { offerMs: 10_000, offlineMs: 200, heartbeatMs: 10_000 } });
    // Make a locked database fail fast instead of waiting out the usual 5 s.
    s.core.sqlite.exec("PRAGMA busy_timeout = 20");
    const other = new Database(join(s.dataDir, "ao.db"));
    other.exec("BEGIN EXCLUSIVE");
    await Bun.sleep(1500); // the callback relay polls every second, worker presence every 50 ms
    other.exec("ROLLBACK");
    other.close();
    s.core.sqlite.exec("PRAGMA busy_timeout = 5000");
    expect(lines.some((l) => l.includes("callback relay could not read the outbox") || l.includes("failed"))).toBe(true);
    expect((await s.api("GET", "/health")).status).toBe(200);
  });
});

/** A TCP pass-through to PostgreSQL that the test can cut (every connection closed, new ones refused) and restore. */
function cuttablePostgres(url: string) {
  const target = new URL(url);
  const open = new Set<{ end(): void }>();
  const start = (port = 0) =>
    Bun.listen<{ upstream?: Awaited<ReturnType<typeof Bun.connect>>; early: Uint8Array[] }>({
      hostname: "127.0.0.1",
      port,
      socket: {
        async open(client) {
          client.data = { early: [] };
          open.add(client);
          const upstream = await Bun.connect({
            hostname: target.hostname,
            port: Number(target.port),
            socket: { data: (_, chunk) => void client.write(chunk), close: () => void client.end(), error: () => void client.end() },
          });
          open.add(upstream);
          client.data.upstream = upstream;
          for (const chunk of client.data.early) upstream.write(chunk);
        },
        data(client, chunk) {
          if (client.data.upstream) client.data.upstream.write(chunk);
          else client.data.early.push(new Uint8Array(chunk));
        },
        close: (client) => void client.data.upstream?.end(),
      },
    });
  let listener = start();
  const port = listener.port;
  return {
    url: Object.assign(new URL(url), { port: String(port) }).toString(),
    cut() {
      listener.stop(true);
      for (const s of open) s.end();
      open.clear();
    },
    restore: () => void (listener = start(port)),
    stop: () => listener.stop(true),
  };
}

describe.skipIf(!onPostgres)("PostgreSQL out of reach", () => {
  test("requests that need it answer 503 unavailable with Retry-After, logged once; they work again when it is back", async () => {
    const { freshDatabase } = await import("../helpers/postgres");
    const pg = cuttablePostgres(await freshDatabase());
    const { lines, logger } = capture();
    try {
      s = await startTestServer({ logger, databaseUrl: pg.url });
      const admin = await createAdmin(s);
      expect((await s.api("GET", "/me", { token: admin.accessToken })).status).toBe(200);
      // A worker connected before: its socket stays up, its requests need the database.
      const worker = await makeWorker(s, admin.orgId);
      const socket = await ProtocolClient.connect(s, worker.credential);
      pg.cut();
      for (let i = 0; i < 3; i++) {
        const r = await s.api("GET", "/me", { token: admin.accessToken });
        expect([r.status, r.body.error.code]).toEqual([503, "unavailable"]);
        expect(r.body.error.message).toBe("the database cannot be reached; try again shortly");
        expect(r.headers.get("retry-after")).toBe("5");
      }
      socket.send({ type: "request", id: 1, op: "claim", taskId: "tsk_anything", body: { offerId: "off_anything" } });
      const reply = await socket.next("reply", (m) => m.id === 1);
      expect([reply.status, reply.body.error.code]).toEqual([503, "unavailable"]);
      socket.close();
      expect(lines.filter((l) => l === "error the database cannot be reached")).toHaveLength(1);
      expect(lines.filter((l) => l.includes("unhandled error"))).toEqual([]);
      pg.restore();
      let r = await s.api("GET", "/me", { token: admin.accessToken });
      while (r.status === 503) r = await s.api("GET", "/me", { token: admin.accessToken });
      expect(r.status).toBe(200);
    } finally {
      await s?.stop();
      s = null;
      pg.stop();
    }
  }, 60_000);
});
