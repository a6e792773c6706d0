// A project's daily budget across servers: two servers on one PostgreSQL database, a worker
// connected to B. Usage reported on A holds the project's queue on B, which had read the cost
// before; a budget raised on A releases it on B at once, and B's live subscribers hear why the
// task no longer waits.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startCluster, type Cluster } from "../helpers/cluster";
import type { TestServer } from "../helpers/server";
import { createAdmin, newOrg } from "../helpers/identity";
import { LiveClient } from "../helpers/live-client";
import { FAST, ProtocolClient, createTaskApi, makeWorker, orgWithProject, workerApi } from "../workers/helpers";

let cluster: Cluster;
let a: TestServer;
let b: TestServer;
const closing: { close(): void }[] = [];
beforeAll(async () => {
  // A longer offline timeout than FAST's: a claim across servers must not race the heartbeats.
  cluster = await startCluster(2, { workerTimeouts: { ...FAST, offlineMs: 1500 } });
  [a, b] = cluster.servers;
  await createAdmin(a);
}, 60_000);
afterAll(async () => {
  for (const c of closing) c.close();
  await cluster?.stop();
});

const USAGE = { inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0, model: "m" };
const HELD = "project over its daily budget ($0.06 of $0.05)";

test("usage reported on A holds the project's queue on B; a budget raised on A releases it on B at once", async () => {
  const p = await orgWithProject(a, await newOrg(a), { budget: { perDayUsd: 0.05 } });
  const free = await a.api("POST", `/orgs/${p.orgId}/projects`, { token: p.token, body: { name: `free-${Date.now()}` } });
  expect(free.status).toBe(201);
  const w = await makeWorker(a, p.orgId);
  const c = await ProtocolClient.connect(b, w.credential, { capacity: 3 });
  closing.push(c);
  const onA = workerApi(a, w.credential);

  // B offers the first task, so it has read the project's cost today (nothing yet).
  const first = await createTaskApi(a, p);
  const offer = await c.next("offer", (m) => m.taskId === first.id, 5000);
  c.beats = false; // a heartbeat that does not list the task yet would count as a miss
  const claim = await workerApi(b, w.credential)("POST", `/worker/tasks/${first.id}/claim`, { offerId: offer.offerId });
  expect(claim.status).toBe(200);
  c.running = [{ taskId: first.id, attempt: offer.attempt }];
  c.beats = true;
  // Its usage and its end go to A.
  const usage = await onA("POST", `/worker/tasks/${first.id}/usage`, { leaseToken: claim.body.leaseToken, usage: { ...USAGE, costUsd: 0.06 } });
  expect(usage.status).toBe(200);
  expect((await onA("POST", `/worker/tasks/${first.id}/transition`, { leaseToken: claim.body.leaseToken, to: "completed" })).status).toBe(200);
  c.running = [];

  // B holds the project's next task (its worker has room for three), and not another project's.
  const held = await createTaskApi(a, p);
  const other = await createTaskApi(a, { ...p, projectId: free.body.id });
  await c.next("offer", (m) => m.taskId === other.id, 5000);
  expect(c.messages.filter((m) => m.type === "offer" && m.taskId === held.id)).toEqual([]);
  for (const s of [a, b]) expect((await s.api("GET", `/orgs/${p.orgId}/tasks/${held.id}`, { token: p.token })).body.waitingReason).toBe(HELD);

  // Raised on A: B offers it at once, and tells its live subscribers it no longer waits for the budget.
  const live = await LiveClient.open(b, p.token);
  closing.push(live);
  await live.subscribe(p.orgId, held.id);
  const raised = await a.api("PATCH", `/orgs/${p.orgId}/projects/${p.projectId}`, { token: p.token, body: { policy: { budget: { perDayUsd: 1 } } } });
  expect(raised.status).toBe(200);
  await c.next("offer", (m) => m.taskId === held.id, 5000);
  const update = await live.next((m) => m.type === "task.updated" && m.task.id === held.id);
  expect(update.task.waitingReason).not.toBe(HELD);
}, 30_000);
