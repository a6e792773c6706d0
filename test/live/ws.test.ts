// GET /api/v1/ws (SPEC §6): authentication (header or first message, within the window),
// subscribe / unsubscribe with authorization on every subscribe, garbage, no duplicates,
// task.updated and task.event for creation, actions and artifacts, revocation.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, login, makeToken } from "../helpers/identity";
import { makeTask, makeWorld, putInState, type World } from "../tasks/fixtures";
import { storeArtifact } from "../../src/modules/tasks/artifacts";
import { defaultConfig } from "../../src/server/config";

const AUTH_MS = 300;
const RECHECK_MS = 150;
let s: TestServer;
let w: World;
let wsUrl: string;
beforeAll(async () => {
  s = await startTestServer({ liveTimeouts: { authMs: AUTH_MS, recheckMs: RECHECK_MS } });
  w = await makeWorld(s);
  wsUrl = s.url.replace("http", "ws") + "/api/v1/ws";
});
afterAll(() => s.stop());

type Msg = Record<string, any>;

/** A test client: every message is kept; next() waits for the first unread one matching. */
class Client {
  ws: WebSocket;
  messages: Msg[] = [];
  read = 0;
  closed: { code: number; reason: string } | null = null;
  opened: Promise<void>;
  private waiters: (() => void)[] = [];

  constructor(token?: string) {
    this.ws = new WebSocket(wsUrl, token ? ({ headers: { authorization: `Bearer ${token}` } } as unknown as string[]) : undefined);
    this.opened = new Promise((resolve, reject) => {
      this.ws.onopen = () => resolve();
      this.ws.onerror = () => reject(new Error("socket error"));
    });
    this.ws.onmessage = (e) => {
      this.messages.push(JSON.parse(String(e.data)));
      this.wake();
    };
    this.ws.onclose = (e) => {
      this.closed = { code: e.code, reason: e.reason };
      this.wake();
    };
  }

  private wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  send(message: unknown) {
    this.ws.send(typeof message === "string" ? message : JSON.stringify(message));
  }

  async next(match: (m: Msg) => boolean = () => true, timeoutMs = 2000): Promise<Msg> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      for (let i = this.read; i < this.messages.length; i++) {
        if (match(this.messages[i])) {
          this.read = i + 1;
          return this.messages[i];
        }
      }
      if (this.closed) throw new Error(`socket closed (${this.closed.code}) while waiting; got ${JSON.stringify(this.messages.slice(this.read))}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; unread: ${JSON.stringify(this.messages.slice(this.read))}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => (clearTimeout(t), r()));
      });
    }
  }

  /** Sends and returns the answer (the next message echoing this id). */
  async ask(message: Msg): Promise<Msg> {
    const id = Math.random().toString(36).slice(2);
    this.send({ ...message, id });
    return this.next((m) => m.id === id);
  }

  async waitClosed(timeoutMs = 2000) {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < deadline) await Bun.sleep(10);
    return this.closed;
  }

  /** Lets in-flight messages arrive, then returns the unread ones. */
  async drain(ms = 100): Promise<Msg[]> {
    await Bun.sleep(ms);
    const rest = this.messages.slice(this.read);
    this.read = this.messages.length;
    return rest;
  }

  close() {
    this.ws.close();
  }
}

const clients: Client[] = [];
async function connect(token?: string) {
  const c = new Client(token);
  clients.push(c);
  await c.opened;
  return c;
}
afterAll(() => clients.forEach((c) => c.close()));

const isUpdate = (taskId: string) => (m: Msg) => m.type === "task.updated" && m.task.id === taskId;
const isEvent = (taskId: string) => (m: Msg) => m.type === "task.event" && m.taskId === taskId;

describe("authentication", () => {
  test("Authorization header with an access token: subscribe at once", async () => {
    const c = await connect(w.viewer.accessToken);
    expect(await c.ask({ type: "subscribe", orgId: w.owner.orgId })).toMatchObject({ type: "subscribed", orgId: w.owner.orgId });
  });

  test("Authorization header with an aot_ token", async () => {
    const c = await connect(w.ownerToken);
    expect(await c.ask({ type: "subscribe", orgId: w.owner.orgId })).toMatchObject({ type: "subscribed" });
    // A token works only in its org.
    expect(await c.ask({ type: "subscribe", orgId: w.other.orgId })).toMatchObject({ type: "error", code: "forbidden" });
  });

  test("first message {type: auth} (browsers), then subscribe in the same breath", async () => {
    const c = await connect();
    c.send({ type: "auth", token: w.member.accessToken });
    c.send({ type: "subscribe", orgId: w.owner.orgId, id: "s1" });
    expect(await c.next()).toMatchObject({ type: "authenticated", userId: w.member.userId });
    expect(await c.next()).toEqual({ type: "subscribed", orgId: w.owner.orgId, id: "s1" });
  });

  test("the window is 10 s unless configured (tests shorten it)", () => {
    expect(defaultConfig({ dataDir: "/tmp/unused" }).liveTimeouts.authMs).toBe(10_000);
  });

  test("no auth within the window: error unauthorized, then closed with 4401", async () => {
    const c = await connect();
    const started = Date.now();
    expect(await c.next(() => true, AUTH_MS + 1000)).toMatchObject({ type: "error", code: "unauthorized" });
    expect(await c.waitClosed()).toMatchObject({ code: 4401 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(AUTH_MS - 20);
  });

  test("subscribing before auth is refused (the socket stays until the window ends)", async () => {
    const c = await connect();
    expect(await c.ask({ type: "subscribe", orgId: w.owner.orgId })).toMatchObject({ type: "error", code: "unauthorized" });
    expect(await c.ask({ type: "auth", token: w.owner.accessToken })).toMatchObject({ type: "authenticated" });
    expect(await c.ask({ type: "subscribe", orgId: w.owner.orgId })).toMatchObject({ type: "subscribed" });
    await Bun.sleep(AUTH_MS + 50);
    expect(c.closed).toBeNull(); // authenticated in time: the timer no longer applies
  });

  test("a bad token in the auth message: error and close", async () => {
    for (const token of ["nonsense", "aot_" + "x".repeat(36), "eyJhbGciOiJIUzI1NiJ9.e30.bad"]) {
      const c = await connect();
      c.send({ type: "auth", token });
      expect(await c.next()).toMatchObject({ type: "error", code: "unauthorized" });
      expect(await c.waitClosed()).toMatchObject({ code: 4401 });
    }
  });

  test("upgrade refused with a bad header: 401 JSON; a worker credential: 403; plain GET: 400", async () => {
    const upgrade = { connection: "Upgrade", upgrade: "websocket", "sec-websocket-version": "13", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==" };
    const bad = await fetch(wsUrl.replace("ws", "http"), { headers: { ...upgrade, authorization: "Bearer garbage" } });
    expect(bad.status).toBe(401);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
    const basic = await fetch(wsUrl.replace("ws", "http"), { headers: { ...upgrade, authorization: "Basic abc" } });
    expect(basic.status).toBe(401);
    const worker = await fetch(wsUrl.replace("ws", "http"), { headers: { ...upgrade, authorization: "Bearer aow_abc" } });
    expect(worker.status).toBe(403);
    const plain = await fetch(wsUrl.replace("ws", "http"));
    expect(plain.status).toBe(400);
    await expect(connect("garbage")).rejects.toThrow();
  });
});

describe("garbage never breaks the socket", () => {
  const garbage: [string, string | Uint8Array][] = [
    ["not JSON", "hello"],
    ["JSON array", "[1,2]"],
    ["JSON null", "null"],
    ["type not a string", '{"type":5}'],
    ["unknown type", '{"type":"dance"}'],
    ["binary", new Uint8Array([1, 2, 3])],
    ["subscribe without orgId", '{"type":"subscribe"}'],
    ["orgId not a string", '{"type":"subscribe","orgId":7}'],
    ["taskId not a string", '{"type":"subscribe","orgId":"org_x","taskId":{}}'],
    ["auth without token", '{"type":"auth"}'],
    ["huge", JSON.stringify({ type: "subscribe", orgId: "x".repeat(20_000) })],
  ];
  test("each gets error validation_failed, and ping still answers after all of them", async () => {
    const c = await connect(w.owner.accessToken);
    for (const [name, message] of garbage) {
      c.ws.send(message);
      const m = await c.next();
      expect([name, m.type, m.code]).toEqual([name, "error", "validation_failed"]);
    }
    expect(await c.ask({ type: "ping" })).toMatchObject({ type: "pong" });
    expect(c.closed).toBeNull();
  });
});

describe("authorization on subscribe", () => {
  test("someone of another org: forbidden, and no updates of ours arrive", async () => {
    const c = await connect(w.other.accessToken);
    expect(await c.ask({ type: "subscribe", orgId: w.owner.orgId })).toMatchObject({ type: "error", code: "forbidden", orgId: w.owner.orgId });
    expect(await c.ask({ type: "subscribe", orgId: "org_01m819v1y3mtqcaxscm9ekgxqf" })).toMatchObject({ type: "error", code: "forbidden" });
    const t = await makeTask(s, w.owner, w.project.id);
    const got = await c.drain();
    expect(got.filter((m) => m.type?.startsWith("task."))).toEqual([]);
    expect(JSON.stringify(got)).not.toContain(t.id);
  });

  test("a task of another org (under our org, or theirs while not a member): not_found / forbidden", async () => {
    const theirs = await makeTask(s, w.other, w.otherProject.id);
    const c = await connect(w.owner.accessToken);
    expect(await c.ask({ type: "subscribe", orgId: w.owner.orgId, taskId: theirs.id })).toMatchObject({ type: "error", code: "not_found" });
    expect(await c.ask({ type: "subscribe", orgId: w.other.orgId, taskId: theirs.id })).toMatchObject({ type: "error", code: "forbidden" });
    await putInState(s, theirs.id, "running");
    expect((await c.drain()).filter((m) => m.type?.startsWith("task."))).toEqual([]);
  });
});

describe("updates", () => {
  test("create and action: task.updated and task.event reach an org subscriber", async () => {
    const c = await connect(w.viewer.accessToken);
    await c.ask({ type: "subscribe", orgId: w.owner.orgId });
    const t = await makeTask(s, w.owner, w.project.id);
    const created = await c.next(isUpdate(t.id));
    expect(created).toEqual({ type: "task.updated", orgId: w.owner.orgId, task: t });
    expect(await c.next(isEvent(t.id))).toEqual({
      type: "task.event",
      orgId: w.owner.orgId,
      taskId: t.id,
      event: { seq: 1, type: "status", at: t.createdAt, actor: { type: "user", id: w.owner.userId, name: "Admin" }, data: { from: null, to: "queued" } },
    });
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks/${t.id}/actions`, { token: w.member.accessToken, body: { action: "pause", reason: "wait" } });
    expect(r.status).toBe(200);
    const updated = await c.next(isUpdate(t.id));
    expect(updated.task).toEqual(r.body);
    const action = await c.next(isEvent(t.id));
    expect(action.event).toMatchObject({ seq: 2, type: "action", actor: { type: "user", id: w.member.userId }, data: { action: "pause", reason: "wait" } });
    const status = await c.next(isEvent(t.id));
    expect(status.event).toMatchObject({ seq: 3, type: "status", data: { from: "queued", to: "paused" } });
  });

  test("an artifact: task.updated with it listed, and an artifact event", async () => {
    const t = await makeTask(s, w.owner, w.project.id);
    const c = await connect(w.owner.accessToken);
    await c.ask({ type: "subscribe", orgId: w.owner.orgId, taskId: t.id });
    await storeArtifact(s.core, null, t.id, "shot.png", new Uint8Array([1, 2, 3]), 1);
    expect((await c.next(isUpdate(t.id))).task.artifacts).toEqual([{ name: "shot.png", contentType: "image/png", size: 3, createdAt: expect.any(String), attempt: 1 }]);
    expect((await c.next(isEvent(t.id))).event).toMatchObject({ type: "artifact", data: { name: "shot.png", size: 3 } });
  });

  test("a task subscription gets that task only", async () => {
    const mine = await makeTask(s, w.owner, w.project.id);
    const c = await connect(w.member.accessToken);
    expect(await c.ask({ type: "subscribe", orgId: w.owner.orgId, taskId: mine.id })).toMatchObject({ type: "subscribed", taskId: mine.id });
    const other = await makeTask(s, w.owner, w.project.id);
    await putInState(s, other.id, "running");
    await putInState(s, mine.id, "running");
    await c.next(isUpdate(mine.id));
    const rest = await c.drain();
    expect(rest.every((m) => m.taskId === mine.id || m.task?.id === mine.id)).toBe(true);
  });

  test("org + task subscriptions never deliver twice; unsubscribing the org keeps the task's", async () => {
    const t = await makeTask(s, w.owner, w.project.id);
    const c = await connect(w.owner.accessToken);
    await c.ask({ type: "subscribe", orgId: w.owner.orgId, taskId: t.id });
    await c.ask({ type: "subscribe", orgId: w.owner.orgId });
    await c.ask({ type: "subscribe", orgId: w.owner.orgId, taskId: t.id }); // again, after the org
    await putInState(s, t.id, "running");
    const got = await c.drain(150);
    expect(got.filter(isUpdate(t.id))).toHaveLength(1);
    expect(got.filter(isEvent(t.id))).toHaveLength(1);

    expect(await c.ask({ type: "unsubscribe", orgId: w.owner.orgId })).toMatchObject({ type: "unsubscribed", orgId: w.owner.orgId });
    const other = await makeTask(s, w.owner, w.project.id);
    await putInState(s, t.id, "needs_input");
    const after = await c.drain(150);
    expect(after.filter(isUpdate(t.id))).toHaveLength(1);
    expect(after.filter((m) => m.task?.id === other.id || m.taskId === other.id)).toEqual([]);

    await c.ask({ type: "unsubscribe", orgId: w.owner.orgId, taskId: t.id });
    await putInState(s, t.id, "running");
    expect((await c.drain(150)).filter((m) => m.type?.startsWith("task."))).toEqual([]);
  });
});

describe("revocation", () => {
  test("a signed-out session: the next subscribe is refused and the socket closed", async () => {
    const u = await addMember(s, w.owner, "member");
    const second = await login(s, u.email);
    const c = await connect(second.accessToken);
    await c.ask({ type: "subscribe", orgId: w.owner.orgId });
    expect((await s.api("POST", "/auth/logout", { token: second.accessToken })).status).toBeLessThan(300);
    c.send({ type: "subscribe", orgId: w.owner.orgId });
    expect(await c.next((m) => m.type === "error")).toMatchObject({ code: "unauthorized" });
    expect(await c.waitClosed()).toMatchObject({ code: 4401 });
  });

  test("the periodic re-check closes a socket whose session was revoked, even when it says nothing", async () => {
    const u = await addMember(s, w.owner, "member");
    const second = await login(s, u.email);
    const c = await connect(second.accessToken);
    await c.ask({ type: "subscribe", orgId: w.owner.orgId });
    await s.api("POST", "/auth/logout", { token: second.accessToken });
    expect(await c.waitClosed(RECHECK_MS * 10)).toMatchObject({ code: 4401 });
  });

  test("a removed member's socket stops getting that org's updates", async () => {
    const u = await addMember(s, w.owner, "viewer");
    const token = await makeToken(s, u);
    const viaSession = await connect(u.accessToken);
    const viaToken = await connect(token);
    for (const c of [viaSession, viaToken]) await c.ask({ type: "subscribe", orgId: w.owner.orgId });
    const del = await s.api("DELETE", `/orgs/${w.owner.orgId}/members/${u.userId}`, { token: w.owner.accessToken });
    expect(del.status).toBeLessThan(300);
    expect(await viaSession.next((m) => m.type === "error", RECHECK_MS * 10)).toMatchObject({ code: "forbidden", orgId: w.owner.orgId });
    // The token's owner left the org, so the token has no role there: forbidden too (or closed).
    const tokenAnswer = await Promise.race([viaToken.next((m) => m.type === "error", RECHECK_MS * 10), viaToken.waitClosed(RECHECK_MS * 10)]);
    expect(tokenAnswer).toBeTruthy();
    const t = await makeTask(s, w.owner, w.project.id);
    for (const c of [viaSession, viaToken]) expect(JSON.stringify(await c.drain())).not.toContain(t.id);
  });
});
