// Live sockets stop in the same moment access is removed (SPEC §4: a revoked session stops at
// once): logout, refresh-token reuse, a deleted API token, a removed member. The periodic re-check
// is set to 10 minutes here, so only the immediate path can pass these scenarios. "No event after
// the answer": a task is made after the revoking request answered; the socket is closed by then,
// or a ping answered after that task shows its update never came before the pong.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, login } from "../helpers/identity";
import { makeTask, makeWorld, type World } from "../tasks/fixtures";

let s: TestServer;
let w: World;
let wsUrl: string;
beforeAll(async () => {
  s = await startTestServer({ liveTimeouts: { authMs: 10_000, recheckMs: 10 * 60_000 } });
  w = await makeWorld(s);
  wsUrl = s.url.replace("http", "ws") + "/api/v1/ws";
});
afterAll(() => s.stop());

type Msg = Record<string, any>;

/** A socket whose messages and close are kept; waits are on events, with a deadline only to fail. */
class Client {
  readonly ws: WebSocket;
  readonly messages: Msg[] = [];
  closeCode: number | null = null;
  readonly closed: Promise<number>;
  private waiters: (() => void)[] = [];

  constructor(token: string) {
    this.ws = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${token}` } } as unknown as string[]);
    this.ws.onmessage = (e) => {
      this.messages.push(JSON.parse(String(e.data)));
      for (const wake of this.waiters.splice(0)) wake();
    };
    this.closed = new Promise((resolve) => {
      this.ws.onclose = (e) => {
        this.closeCode = e.code;
        for (const wake of this.waiters.splice(0)) wake();
        resolve(e.code);
      };
    });
  }

  opened() {
    return new Promise<void>((resolve, reject) => {
      this.ws.onopen = () => resolve();
      this.ws.onerror = () => reject(new Error("socket error"));
    });
  }

  async next(match: (m: Msg) => boolean, timeoutMs = 3000): Promise<Msg> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.messages.find(match);
      if (found) return found;
      if (this.closeCode !== null) throw new Error(`closed (${this.closeCode}); got ${JSON.stringify(this.messages)}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out; got ${JSON.stringify(this.messages)}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, left);
        this.waiters.push(() => (clearTimeout(t), r()));
      });
    }
  }

  async ask(message: Msg): Promise<Msg> {
    const id = Math.random().toString(36).slice(2);
    this.ws.send(JSON.stringify({ ...message, id }));
    return this.next((m) => m.id === id);
  }

  /** The close code, or a failure when the socket is still open after the deadline. */
  closedWithin(ms = 3000): Promise<number> {
    return Promise.race([this.closed, new Promise<number>((_, reject) => setTimeout(() => reject(new Error("the socket is still open")), ms))]);
  }

  mentions(taskId: string) {
    return this.messages.some((m) => m.type?.startsWith("task.") && JSON.stringify(m).includes(taskId));
  }
}

const clients: Client[] = [];
async function subscribed(token: string, orgId = w.owner.orgId): Promise<Client> {
  const c = new Client(token);
  clients.push(c);
  await c.opened();
  expect(await c.ask({ type: "subscribe", orgId })).toMatchObject({ type: "subscribed", orgId });
  return c;
}
afterAll(() => clients.forEach((c) => c.ws.close()));

/** A task made after the revocation, and seen by a socket that still has access (so it was published). */
async function taskSeenByWitness() {
  const witness = await subscribed(w.owner.accessToken);
  const t = await makeTask(s, w.owner, w.project.id);
  await witness.next((m) => m.type === "task.updated" && m.task.id === t.id);
  witness.ws.close();
  return t;
}

describe("a revoked credential closes its sockets at once", () => {
  test("logout", async () => {
    const u = await addMember(s, w.owner, "member");
    const c = await subscribed(u.accessToken);
    expect((await s.api("POST", "/auth/logout", { token: u.accessToken })).status).toBe(204);
    const t = await taskSeenByWitness();
    expect(await c.closedWithin()).toBe(4401);
    expect(c.mentions(t.id)).toBe(false);
    expect(c.messages.at(-1)).toMatchObject({ type: "error", code: "unauthorized" });
  });

  test("logout closes only that sign-in's sockets; another sign-in of the same person keeps its updates", async () => {
    const u = await addMember(s, w.owner, "member");
    const other = await login(s, u.email);
    const gone = await subscribed(u.accessToken);
    const stays = await subscribed(other.accessToken);
    expect((await s.api("POST", "/auth/logout", { token: u.accessToken })).status).toBe(204);
    expect(await gone.closedWithin()).toBe(4401);
    const t = await makeTask(s, w.owner, w.project.id);
    await stays.next((m) => m.type === "task.updated" && m.task.id === t.id);
  });

  test("a reused refresh token revokes the family: its sockets close", async () => {
    const u = await addMember(s, w.owner, "member");
    const c = await subscribed(u.accessToken);
    const first = await s.api("POST", "/auth/refresh", { body: { refreshToken: u.refreshToken } });
    expect(first.status).toBe(200);
    // The socket lives on across a normal rotation: the session is the same.
    expect(await c.ask({ type: "ping" })).toMatchObject({ type: "pong" });
    const reuse = await s.api("POST", "/auth/refresh", { body: { refreshToken: u.refreshToken } });
    expect(reuse.body.error.code).toBe("refresh_token_reused");
    const t = await taskSeenByWitness();
    expect(await c.closedWithin()).toBe(4401);
    expect(c.mentions(t.id)).toBe(false);
  });

  test("DELETE /me/tokens/:id closes the token's sockets, not the owner's session sockets", async () => {
    const u = await addMember(s, w.owner, "member");
    const made = await s.api("POST", "/me/tokens", { token: u.accessToken, body: { name: "ci", orgId: w.owner.orgId } });
    expect(made.status).toBe(201);
    const viaToken = await subscribed(made.body.token);
    const viaSession = await subscribed(u.accessToken);
    expect((await s.api("DELETE", `/me/tokens/${made.body.id}`, { token: u.accessToken })).status).toBe(204);
    const t = await taskSeenByWitness();
    expect(await viaToken.closedWithin()).toBe(4401);
    expect(viaToken.mentions(t.id)).toBe(false);
    await viaSession.next((m) => m.type === "task.updated" && m.task.id === t.id);
  });
});

describe("a removed member's sockets drop the org at once", () => {
  test("the session socket is told forbidden, the token socket closed (a removal revokes the person's tokens of that org); no update of a task made after the answer", async () => {
    const u = await addMember(s, w.owner, "member");
    const made = await s.api("POST", "/me/tokens", { token: u.accessToken, body: { name: "ci", orgId: w.owner.orgId } });
    const viaSession = await subscribed(u.accessToken);
    const viaToken = await subscribed(made.body.token);
    expect((await s.api("DELETE", `/orgs/${w.owner.orgId}/members/${u.userId}`, { token: w.owner.accessToken })).status).toBe(204);
    const t = await taskSeenByWitness();
    // Had the socket still been subscribed, the update (published before the task's answer) would precede this pong.
    expect(await viaSession.ask({ type: "ping" })).toMatchObject({ type: "pong" });
    expect(viaSession.mentions(t.id)).toBe(false);
    expect(viaSession.messages.find((m) => m.type === "error")).toMatchObject({ code: "forbidden", orgId: w.owner.orgId });
    expect(await viaToken.closedWithin()).toBe(4401);
    expect(viaToken.mentions(t.id)).toBe(false);
  });

  test("a role change keeps access: the socket still gets updates", async () => {
    const u = await addMember(s, w.owner, "member");
    const c = await subscribed(u.accessToken);
    expect((await s.api("PATCH", `/orgs/${w.owner.orgId}/members/${u.userId}`, { token: w.owner.accessToken, body: { role: "viewer" } })).status).toBe(200);
    const t = await makeTask(s, w.owner, w.project.id);
    await c.next((m) => m.type === "task.updated" && m.task.id === t.id);
    expect(c.messages.some((m) => m.type === "error")).toBe(false);
  });
});
