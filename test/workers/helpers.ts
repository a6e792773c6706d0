// Helpers for worker tests: an org with a project, workers made directly (the pairing flow has its
// own tests), and a protocol client that speaks the worker socket like `ao worker` does.
import { expect } from "bun:test";
import type { TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { createWorker } from "../../src/modules/workers/registry";
import { newId } from "../../src/lib/ids";
import { iso } from "../../src/lib/time";
import { PROTOCOL_VERSION } from "../../src/protocol/messages";
import { forgetProjects } from "../../src/modules/projects/cache";
import { run } from "../../src/db/query";

export const FAST = { offerMs: 400, offlineMs: 800, heartbeatMs: 200 };
/**
 * For scenarios that wait for neither an offer to run out nor a worker to go silent: on a loaded
 * machine a test's worker (in the server's process) can miss FAST's 0.8 s and lose its lease
 * mid-scenario, and a slow claim can miss a 0.4 s offer.
 */
export const STEADY = { ...FAST, offerMs: 2000, offlineMs: 10_000 };

export async function orgWithProject(s: TestServer, owner?: Session, policy: Record<string, unknown> = {}) {
  const session = owner ?? (await createAdmin(s));
  const r = await s.api("POST", `/orgs/${session.orgId}/projects`, { token: session.accessToken, body: { name: `p-${newId("prj").slice(-8)}`, policy } });
  expect(r.status).toBe(201);
  return { session, orgId: session.orgId, projectId: r.body.id as string, token: session.accessToken };
}

/** Adds a repository row directly (local file:// remotes are refused by the API's URL rules). */
export async function addRepositoryRow(s: TestServer, orgId: string, projectId: string, url: string, opts: { branch?: string; name?: string; primary?: boolean } = {}) {
  const id = newId("rep");
  const now = iso();
  await s.core.store.write(run(
    "INSERT INTO repositories (id, org_id, project_id, url, name, branch, is_primary, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
    id, orgId, projectId, url, opts.name ?? "repo", opts.branch ?? "main", opts.primary === false ? 0 : 1, now, now,
  ));
  // A write behind the services' back: tell the project cache, as their own writers do.
  forgetProjects(s.core);
  return id;
}

export async function makeWorker(s: TestServer, orgId: string, opts: { labels?: string[]; approved?: boolean; name?: string } = {}) {
  const { worker, credential } = await s.core.store.write(createWorker(s.core, {
    orgId,
    name: opts.name ?? "w",
    hostname: "host",
    labels: opts.labels ?? [],
    approved: opts.approved ?? true,
    pairedBy: "usr_test",
    pairedFromIp: null,
  }));
  return { workerId: worker.id, credential };
}

export async function createTaskApi(s: TestServer, p: { orgId: string; projectId: string; token: string }, extra: Record<string, unknown> = {}) {
  const r = await s.api("POST", `/orgs/${p.orgId}/tasks`, { token: p.token, body: { projectId: p.projectId, title: "t", prompt: "do it", ...extra } });
  expect(r.status).toBe(201);
  return r.body as { id: string; status: string; attempt: number; updatedAt: string };
}

export function workerApi(s: TestServer, credential: string) {
  return (method: string, path: string, body?: unknown, headers?: Record<string, string>) => s.api(method, path, { token: credential, body, headers });
}

type Msg = { type: string; [k: string]: any };

/** A worker socket client that records every message and can wait for one. */
export class ProtocolClient {
  messages: Msg[] = [];
  closed: { code: number; reason: string } | null = null;
  private waiters: { pred: (m: Msg) => boolean; resolve: (m: Msg) => void }[] = [];
  private closeWaiters: ((c: { code: number; reason: string }) => void)[] = [];
  ws!: WebSocket;
  /** What the heartbeats report as running; the client beats every FAST.heartbeatMs like a real worker. */
  running: { taskId: string; attempt: number }[] = [];
  beats = true;
  private beat?: ReturnType<typeof setInterval>;

  static async connect(s: TestServer, credential: string, hello: Partial<Msg> | null = {}): Promise<ProtocolClient> {
    const c = new ProtocolClient();
    const url = s.url.replace("http", "ws") + "/api/v1/worker/ws";
    c.ws = new WebSocket(url, { headers: { authorization: `Bearer ${credential}` } } as any);
    c.ws.onmessage = (e) => c.receive(JSON.parse(String(e.data)));
    c.ws.onclose = (e) => {
      clearInterval(c.beat);
      c.closed = { code: e.code, reason: e.reason };
      for (const w of c.closeWaiters.splice(0)) w(c.closed);
    };
    await new Promise<void>((resolve, reject) => {
      c.ws.onopen = () => resolve();
      c.ws.onerror = () => reject(new Error("socket error"));
    });
    if (hello) {
      c.send({ type: "hello", protocol: PROTOCOL_VERSION, version: "test", tools: [], agents: [], providers: [], capacity: 1, running: [], ...hello });
      await c.next("welcome");
    }
    return c;
  }

  private receive(m: Msg) {
    this.messages.push(m);
    if (m.type === "welcome" && !this.beat) this.beat = setInterval(() => this.beats && this.send({ type: "heartbeat", running: this.running }), FAST.heartbeatMs);
    const i = this.waiters.findIndex((w) => w.pred(m));
    if (i >= 0) this.waiters.splice(i, 1)[0].resolve(m);
  }

  send(m: unknown) {
    this.ws.send(typeof m === "string" ? m : JSON.stringify(m));
  }

  /** The next message of `type` (matching `pred`) not yet consumed, waiting up to `ms`. */
  next(type: string, pred: (m: Msg) => boolean = () => true, ms = 3000): Promise<Msg> {
    const match = (m: Msg) => m.type === type && !(m as any).__used && pred(m);
    const found = this.messages.find(match);
    if (found) {
      (found as any).__used = true;
      return Promise.resolve(found);
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        pred: match,
        resolve: (m: Msg) => {
          clearTimeout(timer);
          (m as any).__used = true;
          resolve(m);
        },
      };
      // A waiter that timed out leaves: left behind, it would consume the next match unseen (a
      // quiet() followed by next() then missed the message it waited for).
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`no ${type} message within ${ms} ms; got ${JSON.stringify(this.messages.map((m) => m.type))}`));
      }, ms);
      this.waiters.push(waiter);
    });
  }

  /** True when no unconsumed message of `type` arrives within `ms`. */
  async quiet(type: string, ms = 300): Promise<boolean> {
    try {
      await this.next(type, () => true, ms);
      return false;
    } catch {
      return true;
    }
  }

  waitClose(ms = 3000): Promise<{ code: number; reason: string }> {
    if (this.closed) return Promise.resolve(this.closed);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("socket not closed")), ms);
      this.closeWaiters.push((c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
  }

  close() {
    clearInterval(this.beat);
    if (!this.closed) this.ws.close();
  }
}

export async function until<T>(fn: () => T | Promise<T>, ms = 3000, step = 20): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    await Bun.sleep(step);
  }
  throw new Error(`condition not met within ${ms} ms${last ? `: ${last}` : ""}`);
}
