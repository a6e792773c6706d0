// Helpers for integration tests: people and a project made through the API, signatures computed
// here with node:crypto (independently of src/), deliveries over real HTTP, and a real callback
// receiver on loopback whose answer each test scripts.
import { createHmac } from "node:crypto";
import { afterEach, expect } from "bun:test";
import type { Server } from "bun";
import type { TestServer } from "../helpers/server";
import { addMember, createAdmin, newOrg, type Session } from "../helpers/identity";
import { changeTask, type TaskPatch } from "../../src/modules/tasks/store";
import type { TaskStatus } from "../../src/db/schema";
import { get } from "../../src/db/query";

export interface World {
  owner: Session;
  member: Session;
  other: Session;
  projectId: string;
  otherProjectId: string;
}

export async function makeProject(s: TestServer, who: Pick<Session, "orgId" | "accessToken">, name: string): Promise<string> {
  const r = await s.api("POST", `/orgs/${who.orgId}/projects`, { token: who.accessToken, body: { name } });
  expect(r.status).toBe(201);
  return r.body.id;
}

export async function makeWorld(s: TestServer): Promise<World> {
  const owner = await createAdmin(s);
  const [member, other] = await Promise.all([addMember(s, owner, "member"), newOrg(s)]);
  const projectId = await makeProject(s, owner, `p-${Math.random().toString(36).slice(2, 8)}`);
  const otherProjectId = await makeProject(s, other, "theirs");
  return { owner, member, other, projectId, otherProjectId };
}

export async function makeIntegration(s: TestServer, who: Session, body: Record<string, unknown>) {
  const r = await s.api("POST", `/orgs/${who.orgId}/integrations`, { token: who.accessToken, body });
  if (r.status !== 201) throw new Error(`create integration -> ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as { id: string; secret: string; [k: string]: unknown };
}

export const hmacHex = (secret: string, data: string | Uint8Array) => createHmac("sha256", secret).update(data).digest("hex");
export const githubSignature = (secret: string, body: string | Uint8Array) => `sha256=${hmacHex(secret, body)}`;
export const nowSec = () => Math.floor(Date.now() / 1000);
export function svcSignature(secret: string, body: string | Uint8Array, t = nowSec()) {
  return `t=${t},v1=${createHmac("sha256", secret).update(`${t}.`).update(body).digest("hex")}`;
}

/** POST /hooks/:id with a raw body and headers. */
export async function deliver(s: TestServer, id: string, body: string | Uint8Array, headers: Record<string, string>) {
  const res = await fetch(`${s.url}/api/v1/hooks/${id}`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {}
  return { status: res.status, body: parsed };
}

export async function taskRow(s: TestServer, id: string) {
  return (await s.core.store.read(get<any>("SELECT * FROM tasks WHERE id = ?", id)))!;
}

export async function countTasksOf(s: TestServer, integrationId: string): Promise<number> {
  return (await s.core.store.read(get<{ n: number }>("SELECT COUNT(*) AS n FROM tasks WHERE created_by_type = 'integration' AND created_by_id = ?", integrationId)))!.n;
}

/** Moves a task to `status` through the task store, as a worker's report would. */
export function putInState(s: TestServer, taskId: string, status: TaskStatus, extra: TaskPatch = {}) {
  const now = new Date().toISOString();
  const shape: Partial<Record<TaskStatus, TaskPatch>> = {
    running: { worker_id: "wkr_test", attempt: 1, started_at: now },
    needs_input: { needs: JSON.stringify({ kind: "input", message: "Which branch?" }) },
    needs_approval: { needs: JSON.stringify({ kind: "approval", message: "Push to main?" }) },
    completed: { summary: "All done", finished_at: now, worker_id: null },
    failed: { summary: "It broke", finished_at: now, worker_id: null },
  };
  return changeTask(s.core, null, taskId, (row) => ({
    patch: { ...shape[status], status, ...extra },
    events: [{ type: "status", data: { from: row.status, to: status } }],
  }));
}

export interface Received {
  at: number;
  url: string;
  headers: Record<string, string>;
  body: string;
}

/**
 * A callback receiver on loopback. `answer` decides each response (default 200); every request
 * is recorded, including those it answers with an error.
 */
export class Receiver {
  readonly requests: Received[] = [];
  answer: (req: Received, n: number) => Response | Promise<Response> = () => new Response("ok");
  private server: Server<undefined>;
  private waiters: { n: number; resolve: () => void }[] = [];

  constructor(port = 0) {
    this.server = Bun.serve({
      port,
      hostname: "127.0.0.1",
      idleTimeout: 30,
      fetch: async (request) => {
        const rec: Received = {
          at: Date.now(),
          url: request.url,
          headers: Object.fromEntries(request.headers.entries()),
          body: await request.text(),
        };
        this.requests.push(rec);
        for (const w of this.waiters.filter((w) => this.requests.length >= w.n)) w.resolve();
        this.waiters = this.waiters.filter((w) => this.requests.length < w.n);
        return this.answer(rec, this.requests.length);
      },
    });
  }

  get port(): number {
    return this.server.port!;
  }
  url(path = "/callback"): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** Resolves once `n` requests have arrived (or rejects after `timeoutMs`). */
  waitFor(n: number, timeoutMs = 5000): Promise<void> {
    if (this.requests.length >= n) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`receiver got ${this.requests.length} of ${n} requests in ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        n,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  stop() {
    return this.server.stop(true);
  }
}

/** Polls until `check` returns a truthy value. */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 5000, stepMs = 20): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A maker of receivers for a test file; each one made is stopped after the test that made it. */
export function receiversStoppedAfterEach(): (port?: number) => Receiver {
  const open: Receiver[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((r) => r.stop()));
  });
  return (port?: number) => {
    const r = new Receiver(port);
    open.push(r);
    return r;
  };
}
