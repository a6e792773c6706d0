// Offers across servers (issue 13, src/modules/workers/dispatcher-peers.ts): the server that queued
// a task offers it first; another server offers it when the origin says it could not place it, and
// then keeps the origin from offering it too; after the offer timeout anyone may (the origin died,
// or its notice was lost). Two servers on one PostgreSQL database, a protocol client on each.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startCluster, type Cluster } from "../helpers/cluster";
import type { TestServer } from "../helpers/server";
import { createAdmin, newOrg } from "../helpers/identity";
import { FAST, ProtocolClient, createTaskApi, makeWorker, orgWithProject, until, workerApi } from "../workers/helpers";
import { OFFERED, UNPLACED } from "../../src/modules/workers/dispatcher-peers";

const clients: ProtocolClient[] = [];
afterAll(() => {
  for (const c of clients) c.close();
});

async function connect(s: TestServer, credential: string, capacity: number) {
  const c = await ProtocolClient.connect(s, credential, { capacity });
  clients.push(c);
  return c;
}

/** Queued tasks each server has relayed to its dispatcher (task.changedElsewhere). */
const relayed = new WeakMap<TestServer, Set<string>>();
function recordRelays(s: TestServer) {
  const seen = new Set<string>();
  relayed.set(s, seen);
  s.core.events.on("task.changedElsewhere", ({ after }) => after.status === "queued" && seen.add(after.id));
}

/** Resolves once `s` has relayed the queued task to its dispatcher, and its program had time to run. */
async function heardOn(s: TestServer, taskId: string): Promise<void> {
  await until(() => relayed.get(s)!.has(taskId), 10_000);
  await Bun.sleep(50);
}

/** Two servers on one new database for the describe block that calls this (its hooks start and stop them). */
function twoServers(workerTimeouts: typeof FAST, started: (a: TestServer, b: TestServer) => void) {
  let cluster: Cluster | undefined;
  beforeAll(async () => {
    cluster = await startCluster(2, { workerTimeouts });
    for (const s of cluster.servers) recordRelays(s);
    await createAdmin(cluster.servers[0]);
    started(cluster.servers[0], cluster.servers[1]);
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });
}

/** The tasks named by the notices `s` hears on the channel from now on. */
function heard(s: TestServer, channel: string): Set<string> {
  const tasks = new Set<string>();
  s.core.bus.on(channel, (n) => tasks.add(n.t));
  return tasks;
}

const offersOf = (c: ProtocolClient, taskId: string) => c.messages.filter((m) => m.type === "offer" && m.taskId === taskId);

describe("who offers a queued task", () => {
  // Offers never expire during these tests: every offer seen is a first one.
  const TIMEOUTS = { ...FAST, offerMs: 60_000, offlineMs: 5000 };
  let a: TestServer;
  let b: TestServer;
  twoServers(TIMEOUTS, (x, y) => ([a, b] = [x, y]));

  async function setup(capacityA: number, capacityB: number) {
    const p = await orgWithProject(a, await newOrg(a));
    const wa = await makeWorker(a, p.orgId, { name: "wa" });
    const wb = await makeWorker(a, p.orgId, { name: "wb" });
    return { p, wa, wb, ca: await connect(a, wa.credential, capacityA), cb: await connect(b, wb.credential, capacityB) };
  }

  test("a task queued on A is offered by A alone while A's worker has a free slot", async () => {
    const { p, ca, cb } = await setup(2, 2);
    const heard = new Map<string, Promise<void>>();
    for (let i = 0; i < 2; i++) {
      const task = await createTaskApi(a, p);
      heard.set(task.id, heardOn(b, task.id));
      await ca.next("offer", (m) => m.taskId === task.id);
    }
    await Promise.all(heard.values());
    expect(await cb.quiet("offer", 300)).toBe(true);
  });

  test("when A cannot place it, B offers it at once; A does not offer it when its slot frees", async () => {
    const { p, wa, wb, ca, cb } = await setup(1, 1);
    const first = await createTaskApi(a, p);
    const o1 = await ca.next("offer", (m) => m.taskId === first.id);
    // A's only worker is full (its offer holds the slot): B's worker gets the next task at once,
    // far sooner than the 60 s after which anyone may offer it.
    const offeredToA = heard(a, OFFERED);
    const second = await createTaskApi(a, p);
    const o2 = await cb.next("offer", (m) => m.taskId === second.id, 5000);
    // B told A it offered it (A's freed slot below must come after that notice, not race it).
    await until(() => offeredToA.has(second.id), 5000);
    // A's worker takes its task and finishes it: its freed slot must not bring it the second task.
    const claim = await workerApi(a, wa.credential)("POST", `/worker/tasks/${first.id}/claim`, { offerId: o1.offerId });
    expect(claim.status).toBe(200);
    const done = await workerApi(a, wa.credential)("POST", `/worker/tasks/${first.id}/transition`, { leaseToken: claim.body.leaseToken, to: "completed", summary: "done" });
    expect(done.status).toBe(200);
    const third = await createTaskApi(a, p);
    // The next offer A's worker gets is the third task: the second was skipped.
    expect((await ca.next("offer", () => true, 5000)).taskId).toBe(third.id);
    expect(offersOf(ca, second.id)).toEqual([]);
    const taken = await workerApi(b, wb.credential)("POST", `/worker/tasks/${second.id}/claim`, { offerId: o2.offerId });
    expect(taken.status).toBe(200);
  });

  test("a task nobody could place goes to the first freed slot, and the other server leaves it alone", async () => {
    const { p, wa, wb, ca, cb } = await setup(1, 1);
    // Both workers full: each holds an offer of a task of its own server.
    const t0 = await createTaskApi(a, p);
    const oa = await ca.next("offer", (m) => m.taskId === t0.id);
    const u0 = await createTaskApi(b, p);
    const ob = await cb.next("offer", (m) => m.taskId === u0.id);
    // Queued on A, placed nowhere: A says so, and B cannot place it either.
    const unplacedToB = heard(b, UNPLACED);
    const offeredToB = heard(b, OFFERED);
    const t1 = await createTaskApi(a, p);
    await until(() => unplacedToB.has(t1.id), 5000);
    const finish = async (s: TestServer, credential: string, taskId: string, offerId: string) => {
      const api = workerApi(s, credential);
      const claim = await api("POST", `/worker/tasks/${taskId}/claim`, { offerId });
      expect(claim.status).toBe(200);
      expect((await api("POST", `/worker/tasks/${taskId}/transition`, { leaseToken: claim.body.leaseToken, to: "completed", summary: "done" })).status).toBe(200);
    };
    // A's worker is free first: A offers it t1, and tells B.
    await finish(a, wa.credential, t0.id, oa.offerId);
    await ca.next("offer", (m) => m.taskId === t1.id, 5000);
    await until(() => offeredToB.has(t1.id), 5000);
    // B's worker frees a slot: it is not offered t1, which A's worker holds an offer of.
    await finish(b, wb.credential, u0.id, ob.offerId);
    const t2 = await createTaskApi(b, p);
    expect((await cb.next("offer", () => true, 5000)).taskId).toBe(t2.id);
    expect(offersOf(cb, t1.id)).toEqual([]);
  });

  test("40 tasks created on both servers in turn, workers on both: each is offered once", async () => {
    const { p, ca, cb } = await setup(30, 30);
    const ids: string[] = [];
    const heard: Promise<void>[] = [];
    for (let i = 0; i < 40; i++) {
      const [on, other] = i % 2 === 0 ? [a, b] : [b, a];
      const task = await createTaskApi(on, p);
      ids.push(task.id);
      heard.push(heardOn(other, task.id));
    }
    const offered = () => ids.every((id) => offersOf(ca, id).length + offersOf(cb, id).length > 0);
    await until(offered, 10_000);
    await Promise.all(heard);
    await Bun.sleep(200);
    const counts = ids.map((id) => offersOf(ca, id).length + offersOf(cb, id).length);
    expect(counts).toEqual(ids.map(() => 1));
    // Both workers had work: each server offered what it queued.
    expect(ca.messages.filter((m) => m.type === "offer").length).toBeGreaterThan(0);
    expect(cb.messages.filter((m) => m.type === "offer").length).toBeGreaterThan(0);
  });
});

describe("after the offer timeout", () => {
  const TIMEOUTS = { ...FAST, offerMs: 1500, offlineMs: 1200 };
  let a: TestServer;
  let b: TestServer;
  twoServers(TIMEOUTS, (x, y) => ([a, b] = [x, y]));

  test("a task whose origin never said it could not place it is offered by another server", async () => {
    const p = await orgWithProject(a, await newOrg(a));
    const wb = await makeWorker(a, p.orgId);
    const cb = await connect(b, wb.credential, 1);
    // A's "unplaced" notices are lost, as when A dies right after the create.
    const publish = a.core.bus.publish.bind(a.core.bus);
    a.core.bus.publish = (channel, payload) => (channel === UNPLACED ? undefined : publish(channel, payload));
    try {
      const started = Date.now();
      const task = await createTaskApi(a, p);
      const offer = await cb.next("offer", (m) => m.taskId === task.id, 10_000);
      // Not before the grace (the offer timeout) ran out.
      expect(Date.now() - started).toBeGreaterThanOrEqual(TIMEOUTS.offerMs - 100);
      expect(offer.attempt).toBe(1);
    } finally {
      a.core.bus.publish = publish;
    }
  });
});
