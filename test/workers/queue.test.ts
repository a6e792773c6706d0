// The order in which queued tasks are offered: priority, then age, then the labels and policies
// that decide who may take them; and the dispatcher's reading of a long queue a page at a time.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { newOrg } from "../helpers/identity";
import { STEADY, ProtocolClient, createTaskApi, makeWorker, orgWithProject, workerApi } from "./helpers";
import { queuePage } from "../../src/modules/workers/dispatcher";

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ workerTimeouts: STEADY });
});
afterAll(() => s.stop());

describe("queue order, labels and policies", () => {
  test("priority then age; labels required by the project; worker limited to projects", async () => {
    const session = await newOrg(s);
    const plain = await orgWithProject(s, session);
    const gpu = await orgWithProject(s, session, { workerLabels: ["gpu"] });
    const low = await createTaskApi(s, plain, { priority: "LOW", title: "low" });
    const high = await createTaskApi(s, plain, { priority: "HIGH", title: "high" });
    const med1 = await createTaskApi(s, plain, { title: "med1" });
    const med2 = await createTaskApi(s, plain, { title: "med2" });
    const gpuTask = await createTaskApi(s, gpu, { priority: "URGENT" });
    const w = await makeWorker(s, plain.orgId);
    const c = await ProtocolClient.connect(s, w.credential, { capacity: 1 });
    const api = workerApi(s, w.credential);
    const order: string[] = [];
    for (let i = 0; i < 4; i++) {
      const offer = await c.next("offer");
      const claim = await api("POST", `/worker/tasks/${offer.taskId}/claim`, { offerId: offer.offerId });
      order.push(offer.taskId);
      await api("POST", `/worker/tasks/${offer.taskId}/transition`, { leaseToken: claim.body.leaseToken, to: "completed" });
    }
    expect(order).toEqual([high.id, med1.id, med2.id, low.id]);
    expect(await c.quiet("offer", 300)).toBe(true); // the gpu task is not for an unlabelled worker
    const g = await makeWorker(s, plain.orgId, { labels: ["gpu"] });
    const cg = await ProtocolClient.connect(s, g.credential);
    expect((await cg.next("offer")).taskId).toBe(gpuTask.id);
    // Worker policy: limited to the plain project, it is not offered gpu tasks even with the label.
    const r = await s.api("PATCH", `/orgs/${plain.orgId}/workers/${g.workerId}`, { token: plain.token, body: { policy: { projects: [plain.projectId] } } });
    expect(r.status).toBe(200);
    expect(r.body.policy).toEqual({ projects: [plain.projectId] });
    cg.close();
    c.close();
  });

  // Offers run out after 2 s (STEADY) and the presence monitor re-places the queue every second: an
  // offer within 300 ms of the answer is the change's own (the answer waits for it), not either.
  test("new labels or a wider policy reach a connected worker at once: it is offered the task it now qualifies for", async () => {
    const session = await newOrg(s);
    const plain = await orgWithProject(s, session);
    const gpu = await orgWithProject(s, session, { workerLabels: ["gpu"] });
    const w = await makeWorker(s, gpu.orgId);
    const c = await ProtocolClient.connect(s, w.credential, { capacity: 2 });
    const path = `/orgs/${gpu.orgId}/workers/${w.workerId}`;
    expect((await s.api("PATCH", path, { token: gpu.token, body: { policy: { projects: [gpu.projectId] } } })).status).toBe(200);
    const gpuTask = await createTaskApi(s, gpu);
    const plainTask = await createTaskApi(s, plain);
    expect(await c.quiet("offer", 300)).toBe(true);
    expect((await s.api("PATCH", path, { token: gpu.token, body: { labels: ["gpu"] } })).status).toBe(200);
    expect((await c.next("offer", () => true, 300)).taskId).toBe(gpuTask.id);
    expect((await s.api("PATCH", path, { token: gpu.token, body: { policy: {} } })).status).toBe(200);
    expect((await c.next("offer", () => true, 300)).taskId).toBe(plainTask.id);
    c.close();
  });

  test("a queue longer than a page: offers go across priorities and past a page of tasks the worker may not take", async () => {
    const session = await newOrg(s);
    const plain = await orgWithProject(s, session);
    const gpu = await orgWithProject(s, session, { workerLabels: ["gpu"] });
    // More than a page (100) of the lowest priority, oldest first, some older than the rest...
    const lows: string[] = [];
    for (let i = 0; i < 60; i++) lows.push((await createTaskApi(s, plain, { priority: "LOW", title: `low ${i}` })).id);
    // ...more than a page of the top priority that an unlabelled worker may not take...
    await Promise.all(Array.from({ length: 130 }, () => createTaskApi(s, gpu, { priority: "URGENT" })));
    for (let i = 60; i < 110; i++) lows.push((await createTaskApi(s, plain, { priority: "LOW", title: `low ${i}` })).id);
    // ...and the newest ones of higher priorities, which come first.
    const high1 = await createTaskApi(s, plain, { priority: "HIGH", title: "high 1" });
    const high2 = await createTaskApi(s, plain, { priority: "HIGH", title: "high 2" });
    const urgent = await createTaskApi(s, plain, { priority: "URGENT", title: "urgent" });
    const w = await makeWorker(s, plain.orgId);
    const c = await ProtocolClient.connect(s, w.credential, { capacity: 1 });
    const api = workerApi(s, w.credential);
    const order: string[] = [];
    for (let i = 0; i < 5; i++) {
      const offer = await c.next("offer");
      const claim = await api("POST", `/worker/tasks/${offer.taskId}/claim`, { offerId: offer.offerId });
      expect(claim.status).toBe(200);
      order.push(offer.taskId);
      await api("POST", `/worker/tasks/${offer.taskId}/transition`, { leaseToken: claim.body.leaseToken, to: "completed" });
    }
    expect(order).toEqual([urgent.id, high1.id, high2.id, lows[0], lows[1]]);
    c.close();
  });
});

describe("reading the queue", () => {
  test("a page ends at its limit or at the wanted number of untaken places, and says whether the queue ended", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const low = await createTaskApi(s, p, { priority: "LOW" });
    const high1 = await createTaskApi(s, p, { priority: "HIGH" });
    const high2 = await createTaskApi(s, p, { priority: "HIGH" });
    const read = (after: { priority_rank: number; id: string } | null, limit: number, want: number, taken: (id: string) => boolean) =>
      s.core.store.read(queuePage(p.orgId, after, limit, want, taken));
    const none = () => false;
    // Everything taken: the limit ends the page, and a full page cannot tell that the queue ended.
    expect(await read(null, 2, 1, () => true)).toEqual({ rows: [], seen: 2, last: { priority_rank: 2, id: high2.id }, ended: false });
    expect(await read(null, 3, 1, () => true)).toMatchObject({ seen: 3, last: { id: low.id }, ended: false });
    expect(await read(null, 4, 1, () => true)).toMatchObject({ seen: 3, ended: true });
    // The wanted number of untaken places ends it first: one row read, not a page.
    const first = await read(null, 100, 1, (id) => id === high1.id);
    expect(first.rows.map((r) => r.id)).toEqual([high2.id]);
    expect(first).toMatchObject({ seen: 2, ended: false });
    // The next page starts after the last place, across priorities, to the end.
    const rest = await read(first.last, 100, 100, none);
    expect(rest.rows.map((r) => r.id)).toEqual([low.id]);
    expect(rest).toMatchObject({ seen: 1, ended: true });
  });
});
