// The baseline for bench/vs-bullmq.ts --server bare: the least a server can do for ao's lifecycle
// on this machine, speaking the same protocol to the same simulated workers: Bun.serve, HTTP
// create, offers and worker requests on the socket, and the same rows written into ao's own schema
// (its migrations, pragmas and indexes), group-committed per event-loop turn as ao does. Nothing
// else: no auth, no validation, no reads (leases and the queue live in memory), no fan-out, no
// logs or metrics, no checkpointer thread (SQLite checkpoints inline, its default).
//   bun bench/lifecycle-bare-server.ts <port> <dataDir>
import type { ServerWebSocket } from "bun";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../src/db";
import { benchBunArgs, freePort, serverProcess, type AoServer, type Identity } from "./tasks-support";
import type { Paired } from "./workers-support";

export const BARE_ORG = "org_bare";
export const BARE_PROJECT = "prj_bare";

/** What the benchmark's clients need to talk to it: the ids it made, and workers it takes unpaired. */
export const BARE_IDENTITY: Identity = { orgId: BARE_ORG, projectId: BARE_PROJECT, accessToken: "", apiToken: "none" };
export const barePaired = (n: number): Paired[] => Array.from({ length: n }, (_, i) => ({ workerId: `wkr_${i}`, credential: "none" }));

/** Starts the bare server as a process of its own, on a fresh data directory. */
export function startBare(): Promise<AoServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "ao-bare-"));
  const port = freePort();
  return serverProcess([process.execPath, ...benchBunArgs(), import.meta.path, String(port), dataDir], port, dataDir);
}

const COLUMNS = [
  "id", "org_id", "project_id", "title", "prompt", "priority", "priority_rank", "kind", "status", "attempt", "run_mode",
  "created_by_type", "created_by_id", "last_seq", "created_at", "updated_at",
];
const EVENT = "(?, ?, ?, ?, ?, ?, ?, ?)";
const EVENTS_SQL = (n: number) => `INSERT INTO task_events (task_id, seq, type, at, actor, data, attempt, worker_seq) VALUES ${Array(n).fill(EVENT).join(", ")}`;

if (import.meta.main) {
  const [port, dir] = process.argv.slice(2);
  const sqlite = openDatabase(join(dir, "ao.db")).$client;
  const at0 = new Date().toISOString();
  sqlite.query("INSERT INTO orgs (id, name, created_at, updated_at) VALUES (?, 'bare', ?, ?)").run(BARE_ORG, at0, at0);
  sqlite.query("INSERT INTO projects (id, org_id, name, created_at, updated_at) VALUES (?, ?, 'bare', ?, ?)").run(BARE_PROJECT, BARE_ORG, at0, at0);
  const insertTask = sqlite.prepare(`INSERT INTO tasks (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map(() => "?").join(", ")})`);
  const insertEvent = sqlite.prepare(EVENTS_SQL(1));
  const insertEvents = new Map<number, ReturnType<typeof sqlite.prepare>>();
  const claim = sqlite.prepare("UPDATE tasks SET status = 'running', attempt = 1, worker_id = ?, lease_token_hash = ?, started_at = ?, last_seq = 2, updated_at = ? WHERE id = ?");
  const lastSeq = sqlite.prepare("UPDATE tasks SET last_seq = ?, updated_at = ? WHERE id = ?");
  const complete = sqlite.prepare("UPDATE tasks SET status = 'completed', summary = ?, finished_at = ?, last_seq = ?, updated_at = ? WHERE id = ?");

  // Group commit: the writes of one event-loop turn share a transaction; answers go after it.
  let batch: (() => void)[] | null = null;
  let after: (() => void)[] = [];
  const flush = sqlite.transaction((writes: (() => void)[]) => writes.forEach((w) => w()));
  function write(w: () => void, then: () => void) {
    if (!batch) {
      batch = [];
      setImmediate(() => {
        const writes = batch!;
        const answers = after;
        batch = null;
        after = [];
        flush.immediate(writes);
        answers.forEach((a) => a());
      });
    }
    batch.push(w);
    after.push(then);
  }

  type Worker = { id: string; free: number; ws: ServerWebSocket<Worker> };
  interface Held {
    lease: string;
    seq: number;
  }
  const idle: Worker[] = [];
  const queue: string[] = [];
  const held = new Map<string, Held>();
  let n = 0;
  let offers = 0;

  function offer(taskId: string) {
    const w = idle.find((x) => x.free > 0);
    if (!w) return void queue.push(taskId);
    w.free--;
    w.ws.send(JSON.stringify({ type: "offer", offerId: `ofr_${++offers}`, taskId, attempt: 1 }));
  }

  function request(w: Worker, m: { id: number; op: string; taskId: string; body: any }) {
    const reply = (status: number, body: unknown) => w.ws.send(JSON.stringify({ type: "reply", id: m.id, status, body }));
    const at = new Date().toISOString();
    const t = m.taskId;
    if (m.op === "claim") {
      const lease = `lease_${t}`;
      const data = JSON.stringify({ from: "queued", to: "running", attempt: 1, workerId: w.id });
      return write(
        () => {
          claim.run(w.id, lease, at, at, t);
          insertEvent.run(t, 2, "status", at, JSON.stringify({ type: "worker", id: w.id }), data, null, null);
        },
        () => (held.set(t, { lease, seq: 2 }), reply(200, { taskId: t, attempt: 1, leaseToken: lease })),
      );
    }
    const h = held.get(t);
    if (!h || m.body?.leaseToken !== h.lease) return reply(409, { error: { code: "conflict", message: "lease" } });
    if (m.op === "events") {
      const events = m.body.events as { seq: number; type: string; data: unknown }[];
      const params: (string | number | null)[] = [];
      events.forEach((e, i) => params.push(t, h.seq + 1 + i, e.type, at, JSON.stringify({ type: "worker", id: w.id }), JSON.stringify(e.data ?? null), 1, e.seq));
      h.seq += events.length;
      let insert = insertEvents.get(events.length);
      if (!insert) insertEvents.set(events.length, (insert = sqlite.prepare(EVENTS_SQL(events.length))));
      const seq = h.seq;
      return write(
        () => {
          insert.run(...params);
          lastSeq.run(seq, at, t);
        },
        () => reply(200, { accepted: events.length }),
      );
    }
    if (m.op === "transition") {
      const seq = ++h.seq;
      held.delete(t);
      return write(
        () => {
          complete.run(m.body.summary ?? null, at, seq, at, t);
          insertEvent.run(t, seq, "status", at, JSON.stringify({ type: "worker", id: w.id }), JSON.stringify({ from: "running", to: "completed" }), null, null);
        },
        () => {
          reply(200, { status: "completed" });
          w.free++;
          const next = queue.shift();
          if (next) offer(next);
        },
      );
    }
    reply(404, { error: { code: "not_found", message: m.op } });
  }

  process.on("SIGTERM", () => process.exit(0)); // an exit, so that a --cpu-prof is written
  Bun.serve<Worker>({
    port: Number(port),
    hostname: "127.0.0.1",
    async fetch(req, server) {
      const path = new URL(req.url).pathname;
      if (path === "/api/v1/health") return Response.json({ status: "ok" });
      if (path === "/api/v1/worker/ws") {
        const id = `wkr_${++n}`;
        return server.upgrade(req, { data: { id, free: 0 } as Worker }) ? undefined : new Response("no", { status: 400 });
      }
      if (req.method === "POST" && path.endsWith("/tasks")) {
        const body = (await req.json()) as { title: string; prompt: string };
        const at = new Date().toISOString();
        const id = `tsk_${Date.now().toString(36)}${(++n).toString(36).padStart(12, "0")}`;
        return new Promise<Response>((resolve) =>
          write(
            () => {
              insertTask.run(id, BARE_ORG, BARE_PROJECT, body.title, body.prompt, "MEDIUM", 2, "task", "queued", 0, "fresh", "token", "tok_bare", 1, at, at);
              insertEvent.run(id, 1, "status", at, JSON.stringify({ type: "token", id: "tok_bare" }), JSON.stringify({ from: null, to: "queued" }), null, null);
            },
            () => {
              resolve(Response.json({ id, status: "queued", createdAt: at }, { status: 201 }));
              offer(id);
            },
          ),
        );
      }
      return new Response("not found", { status: 404 });
    },
    websocket: {
      open(ws) {
        ws.data.ws = ws;
      },
      message(ws, raw) {
        const m = JSON.parse(String(raw));
        if (m.type === "hello") {
          ws.data.free = m.capacity;
          idle.push(ws.data);
          ws.send(JSON.stringify({ type: "welcome", requests: ["claim", "events", "transition"] }));
          while (queue.length > 0 && ws.data.free > 0) offer(queue.shift()!);
        } else if (m.type === "request") request(ws.data, m);
      },
      close(ws) {
        const i = idle.indexOf(ws.data);
        if (i >= 0) idle.splice(i, 1);
      },
    },
  });
}
