// The baseline for bench/tasks-live.ts: the least a server can do for "an action reaches every
// subscriber": Bun.serve, one bun:sqlite UPDATE per action (same pragmas as ao), Bun's own
// pub/sub to the org's subscribers, three messages of the sizes ao sends for a pause (the record
// and two events). No auth, no timeline rows, no names, no response schema.
//   bun bench/tasks-live-bare-server.ts <port> <dataDir>
import { Database } from "bun:sqlite";
import { join } from "node:path";

const [port, dir] = process.argv.slice(2);
const db = new Database(join(dir, "bare-live.db"), { create: true, strict: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec("PRAGMA busy_timeout = 5000");
db.exec("CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, title TEXT NOT NULL, status TEXT NOT NULL, updated_at TEXT NOT NULL)");
const insert = db.query("INSERT INTO tasks (id, title, status, updated_at) VALUES (?, ?, 'queued', ?)");
const pause = db.query<{ id: string; title: string; status: string; updated_at: string }, [string, string]>(
  "UPDATE tasks SET status = 'paused', updated_at = ? WHERE id = ? RETURNING id, title, status, updated_at",
);
let n = 0;
const ORG = "org_bare";
// The fields of a task record, so the message is the size of ao's.
const record = (row: { id: string; title: string; status: string; updated_at: string }) => ({
  id: row.id, orgId: ORG, projectId: "prj_01m8bwsexzc6dyzt4f6mcrsz3r", parentId: null, title: row.title, prompt: "wait",
  priority: "MEDIUM", kind: "task", review: null, status: row.status, pausedFrom: "queued", attempt: 0, runMode: "agent",
  workerId: null, agent: null, needs: null, summary: null, error: null, plan: null, changes: null, pullRequest: null,
  createdBy: { type: "token", id: "tok_01m8bwsf2hd5bf2vanp50t4q1a", name: "admin@example.com (token bench)" },
  artifacts: [], usage: null, allowanceUsd: null, waitingReason: null, lastSeq: 3,
  createdAt: row.updated_at, updatedAt: row.updated_at, startedAt: null, finishedAt: null,
});

const server = Bun.serve({
  port: Number(port),
  hostname: "127.0.0.1",
  async fetch(req, srv) {
    const path = new URL(req.url).pathname;
    if (path === "/ws") return srv.upgrade(req) ? undefined : new Response("upgrade expected", { status: 400 });
    if (req.method === "POST" && path === "/tasks") {
      const id = `tsk_${(++n).toString(36).padStart(22, "0")}`;
      insert.run(id, `live ${n}`, new Date().toISOString());
      return Response.json({ id }, { status: 201 });
    }
    const m = /^\/tasks\/([^/]+)\/pause$/.exec(path);
    if (req.method === "POST" && m) {
      await req.arrayBuffer();
      const at = new Date().toISOString();
      const row = pause.get(at, m[1]);
      if (!row) return Response.json({ error: "not found" }, { status: 404 });
      const task = record(row);
      server.publish(ORG, JSON.stringify({ type: "task.updated", orgId: ORG, task }));
      const actor = { type: "token", id: "tok_01m8bwsf2hd5bf2vanp50t4q1a", name: "admin@example.com (token bench)" };
      server.publish(ORG, JSON.stringify({ type: "task.event", orgId: ORG, taskId: row.id, event: { seq: 2, type: "action", at, actor, data: { action: "pause" } } }));
      server.publish(ORG, JSON.stringify({ type: "task.event", orgId: ORG, taskId: row.id, event: { seq: 3, type: "status", at, actor, data: { from: "queued", to: "paused" } } }));
      return Response.json(task);
    }
    return new Response("not found", { status: 404 });
  },
  websocket: {
    message(ws, message) {
      if (String(message).includes('"subscribe"')) {
        ws.subscribe(ORG);
        ws.send(JSON.stringify({ type: "subscribed", orgId: ORG }));
      }
    },
  },
});
