// (b) GET /orgs/:orgId/tasks with 1,000,000 tasks in the org (generated directly in SQLite):
// the first page and a deep cursor page (90% of the way down), unfiltered and filtered by
// status. Target: p99 < 5 ms.
//   bun bench/tasks-list.ts [--tasks 1000000] [--rate 500] [--seconds 10] [--binary dist/ao]
// Latency: an open-loop Bun client at a fixed rate (from send, and from when due). Throughput:
// wrk (Debian package) with 8 connections when installed. Server in its own process, loopback.
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { newId } from "../src/lib/ids";
import { conditions, fixedRate, hasWrk, identity, ms, startAo, wrk } from "./tasks-support";

const { values } = parseArgs({
  options: {
    tasks: { type: "string", default: "1000000" },
    rate: { type: "string", default: "500" },
    seconds: { type: "string", default: "10" },
    binary: { type: "string" },
  },
});
const total = Number(values.tasks);
const rate = Number(values.rate);
const seconds = Number(values.seconds);

console.log(`# tasks-list · ${conditions()}`);
// The server makes the schema, the owner, the project and the token; then it is stopped while the
// tasks are generated straight into its database file, and started again on it.
const first = await startAo(values.binary);
const who = await identity(first.url);
await first.stop(true);
const db = new Database(join(first.dataDir, "ao.db"), { strict: true });
db.exec("PRAGMA busy_timeout = 10000");
db.exec("PRAGMA synchronous = OFF");
const otherProject = newId("prj");
db.query("INSERT INTO projects (id, org_id, name, knowledge, policy, archived, created_at, updated_at) VALUES (?, ?, 'second', '', '{}', 0, ?, ?)").run(
  otherProject,
  who.orgId,
  new Date().toISOString(),
  new Date().toISOString(),
);
const insert = db.query(
  `INSERT INTO tasks (id, org_id, project_id, title, prompt, priority, priority_rank, kind, status, attempt, run_mode, created_by_type, created_by_id, last_seq, created_at, updated_at)
   VALUES (?, ?, ?, ?, ?, 'MEDIUM', 1, ?, ?, 1, 'fresh', 'user', 'usr_bench', 1, ?, ?)`,
);
const STATUSES = ["completed", "completed", "completed", "failed", "cancelled", "completed", "running", "queued", "completed", "needs_input"];
const started = performance.now();
const at = new Date().toISOString();
for (let done = 0; done < total; ) {
  const n = Math.min(50_000, total - done);
  db.transaction(() => {
    for (let i = 0; i < n; i++) {
      const k = done + i;
      insert.run(
        newId("tsk"),
        who.orgId,
        k % 4 === 0 ? otherProject : who.projectId,
        `Generated task ${k}`,
        `Do step ${k} of the migration and report what changed in the summary.`,
        k % 20 === 1 ? "plan" : "task",
        STATUSES[k % STATUSES.length],
        at,
        at,
      );
    }
  })();
  done += n;
}
db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
const genSeconds = (performance.now() - started) / 1000;
const cursorAt = (where: string, offset: number, ...args: string[]) => {
  const row = db.query<{ id: string }, string[]>(`SELECT id FROM tasks WHERE org_id = ? ${where} ORDER BY id DESC LIMIT 1 OFFSET ${offset}`).get(who.orgId, ...args);
  return Buffer.from(row!.id).toString("base64url");
};
const deep = cursorAt("", Math.floor(total * 0.9));
const deepRunning = cursorAt("AND status = ?", Math.floor((total / 10) * 0.9), "running");
db.close();
console.log(`generated ${total} tasks in ${genSeconds.toFixed(1)} s`);
const ao = await startAo(values.binary, first.dataDir);

const base = `${ao.url}/api/v1/orgs/${who.orgId}/tasks`;
const cases: [string, string][] = [
  ["first page (limit 50)", `${base}?limit=50`],
  [`deep page, ${Math.floor(total * 0.9).toLocaleString("en-US")} down (cursor, limit 50)`, `${base}?limit=50&cursor=${deep}`],
  ["status=running, first page", `${base}?limit=50&status=running`],
  ["status=running, deep page (cursor)", `${base}?limit=50&status=running&cursor=${deepRunning}`],
  ["projectId + kind=plan, first page", `${base}?limit=50&projectId=${who.projectId}&kind=plan`],
];
const headers = { authorization: `Bearer ${who.apiToken}` };

console.log(`\n| request | items | from send p50 | p90 | p99 | p99.9 | from due p99 | wrk req/s (8 conn) | wrk p99 |\n|---|---|---|---|---|---|---|---|---|`);
for (const [name, url] of cases) {
  const probe = await fetch(url, { headers });
  const page = (await probe.json()) as { items: unknown[] };
  if (probe.status !== 200) throw new Error(`${name}: ${probe.status}`);
  await fixedRate(rate, 1, () => fetch(url, { headers })); // warm up
  const r = await fixedRate(rate, seconds, () => fetch(url, { headers }));
  const w = hasWrk() ? await wrk(url, { headers, connections: 8, seconds: 5 }) : null;
  console.log(
    `| ${name} | ${page.items.length} | ${ms(r.service.p50)} | ${ms(r.service.p90)} | ${ms(r.service.p99)} | ${ms(r.service.p999)} | ${ms(r.p99)} | ${w ? w.rps.toFixed(0) : "-"} | ${w ? ms(w.p99) : "-"} |`,
  );
}
console.log(`\nopen loop: ${rate} req/s for ${seconds} s per row (${rate * seconds} requests), p99 target < 5 ms`);
await ao.stop();
