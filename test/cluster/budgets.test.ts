// A project's daily budget across servers: two servers on one PostgreSQL database, a worker
// connected to B. Usage reported on A holds the project's queue on B, which had read the cost
// before, and B's live subscribers hear why a task now waits; a budget raised on A releases it on
// B at once, and they hear that it no longer does.
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

/** Claims an offered task on B, the worker's server, and says so in its heartbeats. */
async function claimOnB(c: ProtocolClient, credential: string, taskId: string) {
  const offer = await c.next("offer", (m) => m.taskId === taskId, 5000);
  c.beats = false; // a heartbeat that does not list the task yet would count as a miss
  const claim = await workerApi(b, credential)("POST", `/worker/tasks/${taskId}/claim`, { offerId: offer.offerId });
  expect(claim.status).toBe(200);
  c.running = [{ taskId, attempt: offer.attempt }];
  c.beats = true;
  return claim.body.leaseToken as string;
}

test("usage reported on A holds the project's queue on B and tells B's followers; a budget raised on A releases it on B at once", async () => {
  const p = await orgWithProject(a, await newOrg(a), { budget: { perDayUsd: 0.05 } });
  const free = await a.api("POST", `/orgs/${p.orgId}/projects`, { token: p.token, body: { name: `free-${Date.now()}` } });
  expect(free.status).toBe(201);
  const w = await makeWorker(a, p.orgId);
  const c = await ProtocolClient.connect(b, w.credential, { capacity: 1 });
  closing.push(c);
  const onA = workerApi(a, w.credential);
  const complete = async (taskId: string, leaseToken: string) => {
    expect((await onA("POST", `/worker/tasks/${taskId}/transition`, { leaseToken, to: "completed" })).status).toBe(200);
    c.running = [];
  };

  // B offers the first task, so it has read the project's cost today (nothing yet); the next waits for the worker's one slot.
  const first = await createTaskApi(a, p);
  const lease = await claimOnB(c, w.credential, first.id);
  const held = await createTaskApi(a, p);
  const live = await LiveClient.open(b, p.token);
  closing.push(live);
  await live.subscribe(p.orgId, held.id);

  // The first task's usage goes to A, and takes the project to its budget: B's follower hears why the next one waits.
  const usage = await onA("POST", `/worker/tasks/${first.id}/usage`, { leaseToken: lease, usage: { ...USAGE, costUsd: 0.06 } });
  expect(usage.status).toBe(200);
  expect((await live.next((m) => m.type === "task.updated" && m.task.id === held.id)).task.waitingReason).toBe(HELD);

  // With the slot free, B holds the project's task, and not another project's.
  await complete(first.id, lease);
  const other = await createTaskApi(a, { ...p, projectId: free.body.id });
  const otherLease = await claimOnB(c, w.credential, other.id);
  expect(c.messages.filter((m) => m.type === "offer" && m.taskId === held.id)).toEqual([]);
  for (const s of [a, b]) expect((await s.api("GET", `/orgs/${p.orgId}/tasks/${held.id}`, { token: p.token })).body.waitingReason).toBe(HELD);
  await complete(other.id, otherLease);

  // Raised on A: B offers it at once, and tells its follower it no longer waits for the budget.
  const raised = await a.api("PATCH", `/orgs/${p.orgId}/projects/${p.projectId}`, { token: p.token, body: { policy: { budget: { perDayUsd: 1 } } } });
  expect(raised.status).toBe(200);
  await c.next("offer", (m) => m.taskId === held.id, 5000);
  await live.next((m) => m.type === "task.updated" && m.task.id === held.id && m.task.waitingReason !== HELD);
}, 30_000);
