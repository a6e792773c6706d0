// Task changes cross servers: a live subscriber on B gets every task.updated and task.event of
// tasks created and changed on A, once; a worker on B is offered what A queued; claims stay
// exactly-once when workers on both servers compete for one queue.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startCluster, type Cluster } from "../helpers/cluster";
import type { TestServer } from "../helpers/server";
import { newOrg } from "../helpers/identity";
import { FAST, ProtocolClient, createTaskApi, makeWorker, orgWithProject, workerApi } from "../workers/helpers";
import { LiveClient } from "../helpers/live-client";
import { dispatcherOf } from "../../src/modules/workers/dispatcher";

let cluster: Cluster;
let a: TestServer;
let b: TestServer;
beforeAll(async () => {
  // Offers and silences long enough for a loaded machine (two servers in one process): an offer
  // that ran out before its claim arrived would be a 409 no scenario here expects.
  cluster = await startCluster(2, { workerTimeouts: { ...FAST, offerMs: 5000, offlineMs: 5000 } });
  [a, b] = cluster.servers;
}, 60_000);
afterAll(() => cluster?.stop());

const lastSeq = async (s: TestServer, p: { orgId: string; token: string }, taskId: string) => {
  const r = await s.api("GET", `/orgs/${p.orgId}/tasks/${taskId}/events?limit=200`, { token: p.token });
  expect(r.status).toBe(200);
  return r.body.items.at(-1).seq as number;
};

/** Each scenario in its own org: tasks and workers of one never reach another's. */
const fresh = async () => orgWithProject(a, await newOrg(a));

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("live subscribers on another server", () => {
  test("get every task.updated and task.event of A's tasks once, as A's own subscribers do", async () => {
    const p = await fresh();
    // Subscribers on B (the org; the tasks, on a socket of their own), and a witness on A.
    const witness = await LiveClient.open(a, p.token);
    await witness.subscribe(p.orgId);
    const orgSub = await LiveClient.open(b, p.token);
    await orgSub.subscribe(p.orgId);
    const taskSub = await LiveClient.open(b, p.token);

    // Created together: the notices may reach B in one batch.
    const tasks = await Promise.all([1, 2, 3].map((i) => createTaskApi(a, p, { title: `t${i}` })));
    const ids = tasks.map((t) => t.id);
    // The task socket subscribes once B has relayed the creates (its org socket has them), so
    // whether it hears them does not depend on the notice's timing: it must not.
    for (const id of ids) await orgSub.next((m) => m.type === "task.updated" && m.task.id === id);
    const seqAtSubscribe = new Map<string, number>();
    for (const id of ids) {
      await taskSub.subscribe(p.orgId, id);
      seqAtSubscribe.set(id, await lastSeq(a, p, id));
    }

    // A worker on A runs each: claim, log lines, a question a person answers on A, completion.
    const w = await makeWorker(a, p.orgId);
    const worker = await ProtocolClient.connect(a, w.credential, { capacity: 1 });
    const api = workerApi(a, w.credential);
    for (let i = 0; i < ids.length; i++) {
      const offer = await worker.next("offer");
      const claim = await api("POST", `/worker/tasks/${offer.taskId}/claim`, { offerId: offer.offerId });
      expect(claim.status).toBe(200);
      worker.running.push({ taskId: offer.taskId, attempt: claim.body.attempt });
      const lease = claim.body.leaseToken;
      for (const seq of [1, 3]) {
        const events = [{ seq, type: "log", data: { line: `line ${seq}` } }, { seq: seq + 1, type: "message", data: { role: "assistant", text: "hi" } }];
        expect((await api("POST", `/worker/tasks/${offer.taskId}/events`, { leaseToken: lease, events })).status).toBe(200);
      }
      expect((await api("POST", `/worker/tasks/${offer.taskId}/transition`, { leaseToken: lease, to: "needs_input", needs: { message: "which color?" } })).status).toBe(200);
      const answer = await a.api("POST", `/orgs/${p.orgId}/tasks/${offer.taskId}/actions`, { token: p.token, body: { action: "input", input: "blue" } });
      expect(answer.status).toBe(200);
      expect(await worker.next("control", (m) => m.taskId === offer.taskId)).toMatchObject({ action: "input", input: "blue" });
      expect((await api("POST", `/worker/tasks/${offer.taskId}/transition`, { leaseToken: lease, to: "completed", summary: "done" })).status).toBe(200);
      worker.running = [];
    }
    worker.close();

    // The marker: a last task made and cancelled on A. B relays in order, so once B's sockets have
    // its cancellation, everything before it has arrived too (and a duplicate would have).
    const marker = await createTaskApi(a, p, { title: "marker" });
    await taskSub.subscribe(p.orgId, marker.id);
    expect((await a.api("POST", `/orgs/${p.orgId}/tasks/${marker.id}/actions`, { token: p.token, body: { action: "cancel" } })).status).toBe(200);
    const cancelled = (m: Record<string, any>) => m.type === "task.updated" && m.task.id === marker.id && m.task.status === "cancelled";
    await Promise.all([orgSub.next(cancelled), taskSub.next(cancelled), witness.next(cancelled)]);

    for (const id of ids) {
      const last = await lastSeq(a, p, id);
      // Events: exact by seq, each once, the same as A published.
      expect(witness.events(id).map((e) => e.seq)).toEqual(range(1, last));
      expect(orgSub.events(id)).toEqual(witness.events(id));
      expect(taskSub.events(id)).toEqual(witness.events(id).filter((e) => e.seq > seqAtSubscribe.get(id)!));
      // Records: one task.updated per record change (the task socket subscribed after the create's),
      // the last one the same record A published.
      const updates = witness.updates(id);
      expect(updates.length).toBeGreaterThanOrEqual(5); // created, claimed, needs_input, answered, completed
      expect(orgSub.updates(id).length).toBe(updates.length);
      // A task socket also hears a queued task's record again when the org's workers change (why it
      // waits may have changed: the worker connecting on A), never after a newer one.
      const heard = taskSub.updates(id).map((m) => m.task);
      expect(heard.map((t) => t.updatedAt)).toEqual(heard.map((t) => t.updatedAt).sort());
      for (const t of heard.filter((t) => t.updatedAt === updates[0]!.task.updatedAt)) expect(t.status).toBe("queued");
      const changes = heard.filter((t) => t.updatedAt !== updates[0]!.task.updatedAt);
      expect(changes.length).toBe(updates.length - 1);
      expect(new Set(changes.map((t) => t.updatedAt)).size).toBe(changes.length);
      expect(orgSub.updates(id).at(-1)).toEqual(updates.at(-1)!);
      expect(taskSub.updates(id).at(-1)).toEqual(updates.at(-1)!);
    }
    // The create's record as A published it (a new task's record shows no usage or artifacts read).
    for (const id of ids) expect(orgSub.updates(id)[0]).toEqual(witness.updates(id)[0]);
    for (const c of [witness, orgSub, taskSub]) c.close();
  }, 60_000);
});

describe("workers on another server", () => {
  test("a worker connected to B is offered a task created on A, and runs it", async () => {
    const p = await fresh();
    const w = await makeWorker(a, p.orgId);
    const worker = await ProtocolClient.connect(b, w.credential);
    // B's periodic look at the queues is off: only A's notice can bring the offer.
    const dispatcher = dispatcherOf(b.core);
    const fillAll = dispatcher.fillAll;
    dispatcher.fillAll = function* () {};
    const task = await createTaskApi(a, p, { title: "from A" });
    const offer = await worker.next("offer", (m) => m.taskId === task.id).finally(() => (dispatcher.fillAll = fillAll));
    const api = workerApi(b, w.credential);
    const claim = await api("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
    expect(claim.status).toBe(200);
    expect(claim.body).toMatchObject({ attempt: 1, task: { id: task.id, title: "from A" } });
    worker.running.push({ taskId: task.id, attempt: 1 });
    expect((await api("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: claim.body.leaseToken, to: "completed", summary: "done on B" })).status).toBe(200);
    const read = await a.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token });
    expect(read.body).toMatchObject({ status: "completed", attempt: 1, workerId: w.workerId, summary: "done on B" });
    worker.close();
  });

  test("40 tasks created alternately on A and B, a worker on each: every task is claimed by exactly one attempt", async () => {
    const p = await fresh();
    const total = 40;
    const claimed: { taskId: string; attempt: number; workerId: string }[] = [];
    let completed = 0;
    let allDone!: () => void;
    const done = new Promise<null>((resolve) => (allDone = () => resolve(null)));
    const refused: { status: number; body: any }[] = [];
    // A worker takes every offer; a claim the other server's worker won is a 409, and it goes on.
    const run = async (s: TestServer) => {
      const w = await makeWorker(a, p.orgId);
      const client = await ProtocolClient.connect(s, w.credential, { capacity: 2 });
      const api = workerApi(s, w.credential);
      return {
        client,
        loop: (async () => {
          while (completed < total) {
            // The other worker may complete the last task: then no offer comes.
            const offer = await Promise.race([client.next("offer", () => true, 60_000), done]);
            if (!offer) break;
            const claim = await api("POST", `/worker/tasks/${offer.taskId}/claim`, { offerId: offer.offerId });
            if (claim.status !== 200) {
              refused.push(claim);
              continue;
            }
            claimed.push({ taskId: offer.taskId, attempt: claim.body.attempt, workerId: w.workerId });
            client.running.push({ taskId: offer.taskId, attempt: claim.body.attempt });
            const finished = await api("POST", `/worker/tasks/${offer.taskId}/transition`, { leaseToken: claim.body.leaseToken, to: "completed", summary: "done" });
            expect([finished.status, finished.body]).toMatchObject([200, { status: "completed" }]);
            client.running = client.running.filter((r) => r.taskId !== offer.taskId);
            if (++completed === total) allDone();
          }
        })(),
      };
    };
    const workers = [await run(a), await run(b)];
    const ids: string[] = [];
    for (let i = 0; i < total; i++) ids.push((await createTaskApi(i % 2 === 0 ? a : b, p, { title: `race ${i}` })).id);
    await Promise.all(workers.map((w) => w.loop));
    for (const w of workers) w.client.close();

    expect(completed).toBe(total);
    // One claim per task, each the first attempt; the losers of a race were told 409.
    expect(claimed.map((c) => c.taskId).sort()).toEqual([...ids].sort());
    expect(claimed.every((c) => c.attempt === 1)).toBe(true);
    for (const r of refused) expect([r.status, r.body.error.code]).toEqual([409, "conflict"]);
    // The timeline agrees: one claim (queued -> running) per task, by the worker that got 200.
    const byTask = new Map(claimed.map((c) => [c.taskId, c.workerId]));
    for (const id of ids) {
      const r = await b.api("GET", `/orgs/${p.orgId}/tasks/${id}/events?limit=200`, { token: p.token });
      const claims = r.body.items.filter((e: any) => e.type === "status" && e.data.to === "running");
      expect(claims).toHaveLength(1);
      expect(claims[0].data).toMatchObject({ attempt: 1, workerId: byTask.get(id) });
    }
    const list = await a.api("GET", `/orgs/${p.orgId}/tasks?limit=${total}`, { token: p.token });
    expect(list.body.items.map((t: any) => [t.status, t.attempt])).toEqual(ids.map(() => ["completed", 1]));
  }, 90_000);
});
