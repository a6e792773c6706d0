// The baseline for bench/tasks-create.ts: the least a task-creating HTTP server can do on this
// machine: Bun.serve, JSON parse, one prepared bun:sqlite INSERT (same pragmas as ao), a JSON
// answer. No auth, no validation, no timeline, no fan-out.
//   bun bench/tasks-bare-server.ts <port> <dataDir>
import { Database } from "bun:sqlite";
import { join } from "node:path";

const [port, dir] = process.argv.slice(2);
const db = new Database(join(dir, "bare.db"), { create: true, strict: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec("PRAGMA busy_timeout = 5000");
db.exec("CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, project_id TEXT NOT NULL, title TEXT NOT NULL, prompt TEXT NOT NULL, created_at TEXT NOT NULL)");
const insert = db.query("INSERT INTO tasks (id, project_id, title, prompt, created_at) VALUES (?, ?, ?, ?, ?)");
let n = 0;

Bun.serve({
  port: Number(port),
  hostname: "127.0.0.1",
  async fetch(req) {
    const body = (await req.json()) as { projectId: string; title: string; prompt: string };
    const task = { id: `tsk_${Date.now().toString(36)}${(++n).toString(36).padStart(16, "0")}`, ...body, createdAt: new Date().toISOString() };
    insert.run(task.id, body.projectId, body.title, body.prompt, task.createdAt);
    return Response.json(task, { status: 201 });
  },
});
