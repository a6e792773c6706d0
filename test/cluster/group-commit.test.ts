// Group commit on PostgreSQL (tasks/batch.ts, PgStore.writeEach): a worker's claims, events and
// transitions sent together through the HTTP API share write transactions, and keep every
// guarantee of one transaction per write: a refused write (stale lease, another worker, unknown
// task) gets its own error and changes nothing, each accepted one is in the database with a
// gap-free timeline. Transactions are counted by PostgreSQL itself: a test trigger records the
// top-level transaction id of every write to a task row.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { SQL } from "bun";
import { startCluster, type Cluster } from "../helpers/cluster";
import type { TestServer } from "../helpers/server";
import { FAST, ProtocolClient, createTaskApi, makeWorker, orgWithProject, workerApi } from "../workers/helpers";

const TASKS = 12;
let cluster: Cluster;
let s: TestServer;
let db: SQL;
const clients: ProtocolClient[] = [];
beforeAll(async () => {
  cluster = await startCluster(1, { workerTimeouts: { ...FAST, offerMs: 30_000, offlineMs: 5000 } });
  [s] = cluster.servers;
  db = new SQL({ url: cluster.databaseUrl, max: 1 });
  // pg_current_xact_id() is the top-level transaction's id, also inside a savepoint.
  await db.unsafe(`
    CREATE TABLE test_task_writes (n bigserial PRIMARY KEY, xid text NOT NULL, task_id text NOT NULL);
    CREATE FUNCTION test_task_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN INSERT INTO test_task_writes (xid, task_id) VALUES (pg_current_xact_id()::text, NEW.id); RETURN NEW; END $$;
    CREATE TRIGGER test_task_write AFTER INSERT OR UPDATE ON tasks FOR EACH ROW EXECUTE FUNCTION test_task_write();
  `);
}, 60_000);
afterAll(async () => {
  for (const c of clients) c.close();
  await db?.close();
  await cluster?.stop();
});

/** The task writes the trigger recorded after the `after`th, and the transactions they made. */
async function writesSince(after: number) {
  const rows = (await db.unsafe("SELECT n, xid FROM test_task_writes WHERE n > $1", [after])) as { n: string; xid: string }[];
  return { last: Math.max(after, ...rows.map((r) => Number(r.n))), writes: rows.length, transactions: new Set(rows.map((r) => r.xid)).size };
}

test("a worker's concurrent task writes share transactions; refused ones change nothing and get their own error", async () => {
  const p = await orgWithProject(s);
  const w = await makeWorker(s, p.orgId);
  const other = await makeWorker(s, p.orgId);
  const c = await ProtocolClient.connect(s, w.credential, { capacity: TASKS });
  clients.push(c);
  const api = workerApi(s, w.credential);
  const otherApi = workerApi(s, other.credential);
  const ids: string[] = [];
  for (let i = 0; i < TASKS; i++) ids.push((await createTaskApi(s, p)).id);
  const offers = await Promise.all(ids.map((id) => c.next("offer", (m) => m.taskId === id, 10_000)));
  c.running.push(...offers.map((o) => ({ taskId: o.taskId as string, attempt: o.attempt as number })));
  const start = (await writesSince(0)).last;

  // Every claim at once.
  const claims = await Promise.all(ids.map((id, i) => api("POST", `/worker/tasks/${id}/claim`, { offerId: offers[i]!.offerId })));
  for (const r of claims) expect(r.body.error).toBeUndefined();
  const leases = claims.map((r) => r.body.leaseToken as string);

  // Then, at once: each task's events, and beside them writes that must be refused.
  const events = (from: number) => [1, 2, 3].map((k) => ({ seq: from + k, type: "log", data: { line: `line ${from + k}` } }));
  const good = ids.map((id, i) => api("POST", `/worker/tasks/${id}/events`, { leaseToken: leases[i], events: events(0) }));
  const staleLease = ids.map((id) => api("POST", `/worker/tasks/${id}/events`, { leaseToken: "not-the-lease", events: events(100) }));
  const otherWorker = ids.map((id, i) => otherApi("POST", `/worker/tasks/${id}/events`, { leaseToken: leases[i], events: events(200) }));
  const staleTransition = ids.map((id) => api("POST", `/worker/tasks/${id}/transition`, { leaseToken: "not-the-lease", to: "failed", error: "no" }));
  const unknown = ids.map(() => api("POST", `/worker/tasks/tsk_missing/events`, { leaseToken: leases[0], events: events(300) }));
  const [goodR, staleR, otherR, staleTR, unknownR] = await Promise.all([good, staleLease, otherWorker, staleTransition, unknown].map((rs) => Promise.all(rs)));
  for (const r of goodR) expect(r.body).toEqual({ written: 3, duplicates: 0 });
  for (const r of [...staleR, ...otherR, ...staleTR]) {
    expect(r.status).toBe(409);
    expect(r.body.error.details.reason).toBe("stale_lease");
  }
  for (const r of unknownR) expect(r.status).toBe(404);

  // Then every attempt completes, at once.
  const done = await Promise.all(ids.map((id, i) => api("POST", `/worker/tasks/${id}/transition`, { leaseToken: leases[i], to: "completed", summary: "done" })));
  for (const r of done) expect(r.body).toEqual({ status: "completed", attempt: 1 });

  // In the database: exactly the accepted writes, each timeline gap-free.
  for (const id of ids) {
    const [task] = (await db.unsafe("SELECT status, attempt, last_seq FROM tasks WHERE id = $1", [id])) as { status: string; attempt: number; last_seq: number }[];
    expect(task!.status).toBe("completed");
    const timeline = (await db.unsafe("SELECT seq, type, worker_seq FROM task_events WHERE task_id = $1 ORDER BY seq", [id])) as { seq: number; type: string; worker_seq: number | null }[];
    expect(timeline.map((e) => Number(e.seq))).toEqual(Array.from({ length: Number(task!.last_seq) }, (_, k) => k + 1));
    expect(timeline.filter((e) => e.worker_seq !== null).map((e) => Number(e.worker_seq))).toEqual([1, 2, 3]);
    expect(timeline.filter((e) => e.type === "status").length).toBe(3); // created, claimed, completed
  }

  // Claims, events and completions: one task write each, in fewer transactions than writes.
  const { writes, transactions } = await writesSince(start);
  expect(writes).toBe(TASKS * 3);
  expect(transactions).toBeLessThan(writes);
}, 60_000);
