// Workers across servers (issue 13): two servers on one PostgreSQL database, a worker connected to
// one of them. A person's control or a clone request made on the other reaches its socket, once
// and in order; a worker that moves to the other server keeps its attempt, one that vanishes with
// its server is still given up; a revocation closes its socket wherever it is; new labels, policy or
// an approval reach its socket on the other server; its record reaches live subscribers on every server.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startCluster, type Cluster } from "../helpers/cluster";
import type { TestServer } from "../helpers/server";
import { createAdmin, newOrg } from "../helpers/identity";
import { LiveClient } from "../helpers/live-client";
import { FAST, ProtocolClient, createTaskApi, makeWorker, orgWithProject, until, workerApi } from "../workers/helpers";
import { presenceOf } from "../../src/modules/workers/presence";
import { get } from "../../src/db/query";
import { PROTOCOL_VERSION } from "../../src/protocol/messages";

// A longer offline timeout than FAST's: claims across servers are slower under load, and a claim
// must not race the heartbeats (see claimed()).
const TIMEOUTS = { ...FAST, offlineMs: 1500 };
let cluster: Cluster;
let a: TestServer;
let b: TestServer;
const clients: ProtocolClient[] = [];
beforeAll(async () => {
  cluster = await startCluster(2, { workerTimeouts: TIMEOUTS });
  [a, b] = cluster.servers;
  await createAdmin(a);
}, 60_000);
afterAll(async () => {
  for (const c of clients) c.close();
  await cluster?.stop();
});

async function connect(s: TestServer, credential: string, hello: Record<string, unknown> = {}) {
  const c = await ProtocolClient.connect(s, credential, hello);
  clients.push(c);
  return c;
}

type Project = Awaited<ReturnType<typeof orgWithProject>>;

/** A task created on `on`, offered to the worker behind `c` on `via`, claimed there. */
async function claimed(on: TestServer, via: TestServer, p: Project, c: ProtocolClient, credential: string) {
  const task = await createTaskApi(on, p);
  const offer = await c.next("offer", (m) => m.taskId === task.id, 5000);
  // No heartbeat while the claim is on its way: one that does not list it yet counts as a miss.
  c.beats = false;
  const claim = await workerApi(via, credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
  expect(claim.status).toBe(200);
  c.running.push({ taskId: task.id, attempt: offer.attempt });
  c.beats = true;
  return { id: task.id, attempt: offer.attempt as number, leaseToken: claim.body.leaseToken as string };
}

const taskOf = async (s: TestServer, p: Project, id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}`, { token: p.token })).body;

describe("mail", () => {
  test("a person's controls on A reach the worker's socket on B, once and in order", async () => {
    const p = await orgWithProject(a, await newOrg(a));
    const w = await makeWorker(a, p.orgId);
    const c = await connect(b, w.credential);
    const t = await claimed(a, b, p, c, w.credential);
    const asked = await workerApi(b, w.credential)("POST", `/worker/tasks/${t.id}/transition`, { leaseToken: t.leaseToken, to: "needs_input", needs: { message: "which colour?" } });
    expect(asked.status).toBe(200);
    expect((await a.api("POST", `/orgs/${p.orgId}/tasks/${t.id}/actions`, { token: p.token, body: { action: "input", input: "blue" } })).status).toBe(200);
    expect((await a.api("POST", `/orgs/${p.orgId}/tasks/${t.id}/actions`, { token: p.token, body: { action: "pause" } })).status).toBe(200);
    expect(await c.next("control", (m) => m.taskId === t.id)).toMatchObject({ action: "input", input: "blue", attempt: t.attempt });
    expect(await c.next("control", (m) => m.taskId === t.id)).toMatchObject({ action: "pause", attempt: t.attempt });
    await until(async () => Number((await b.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM worker_mail WHERE worker_id = ?", w.workerId)))?.n) === 0);
    // Nothing more comes: each was sent once.
    expect(await c.quiet("control", FAST.heartbeatMs * 2)).toBe(true);
  });

  test("a clone asked on A reaches the worker on B at once, and is not sent again at its next hello", async () => {
    const p = await orgWithProject(a, await newOrg(a));
    const w = await makeWorker(a, p.orgId);
    const c = await connect(b, w.credential);
    const added = await a.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/repositories`, { token: p.token, body: { url: "https://git.example.test/cluster/app.git" } });
    expect(added.status).toBe(201);
    const repositoryId = added.body.repository.id;
    const asked = await a.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/repositories/${repositoryId}/clone`, { token: p.token, body: { workerIds: [w.workerId] } });
    expect(asked.status).toBe(202);
    // Across servers by the bus (PostgreSQL's NOTIFY): on a loaded CI machine that took over 3 s once.
    expect((await c.next("clone", () => true, 10_000)).repositoryId).toBe(repositoryId);
    c.close();
    // Not reported yet: the next hello asks again, from the clone's row, once.
    const again = await connect(a, w.credential);
    expect((await again.next("clone")).repositoryId).toBe(repositoryId);
    expect(await again.quiet("clone", FAST.heartbeatMs * 2)).toBe(true);
  });

  test("flushes that race (a hello, and mail announced by several servers) send each message once, in order", async () => {
    const p = await orgWithProject(a, await newOrg(a));
    const w = await makeWorker(a, p.orgId);
    const mailbox = presenceOf(a.core).dispatcher.mailbox;
    const n = 60;
    // Kept on A (the worker is nowhere), announced while the worker says hello to B.
    for (let i = 1; i <= n; i++) await a.core.store.write(mailbox.control(w.workerId, "tsk_race", i, "pause"));
    const c = await connect(b, w.credential, null as never);
    c.send({ type: "hello", protocol: PROTOCOL_VERSION, version: "test", tools: [], agents: [], providers: [], capacity: 1, running: [] });
    for (let i = 0; i < 5; i++) {
      presenceOf(a.core).mailWaiting(w.workerId);
      await Bun.sleep(1);
    }
    await c.next("welcome");
    for (let i = 1; i <= 5; i++) presenceOf(a.core).mailWaiting(w.workerId);
    const attempts: number[] = [];
    for (let i = 0; i < n; i++) attempts.push((await c.next("control", () => true, 5000)).attempt);
    expect(attempts).toEqual(Array.from({ length: n }, (_, i) => i + 1));
    expect(await c.quiet("control", FAST.heartbeatMs * 2)).toBe(true);
  });
});

describe("lost workers", () => {
  const longEnough = TIMEOUTS.offlineMs * 4;

  test("a worker whose socket moves from A to B keeps its attempt; one that does not come back loses it", async () => {
    const p = await orgWithProject(a, await newOrg(a));
    const moving = await makeWorker(a, p.orgId);
    const gone = await makeWorker(a, p.orgId);
    const cm = await connect(a, moving.credential);
    const tm = await claimed(a, a, p, cm, moving.credential);
    const cg = await connect(a, gone.credential);
    const tg = await claimed(a, a, p, cg, gone.credential);
    cm.close();
    cg.close();
    await Promise.all([cm.waitClose(), cg.waitClose()]);
    const cb = await connect(b, moving.credential, { running: [{ taskId: tm.id, attempt: tm.attempt }] });
    cb.running = [{ taskId: tm.id, attempt: tm.attempt }];
    // Both went silent on A at the same moment: by the time one is given up, so would the other be.
    await until(async () => (await taskOf(b, p, tg.id)).status === "queued", longEnough * 2);
    expect(cb.closed).toBeNull();
    expect(await taskOf(a, p, tm.id)).toMatchObject({ status: "running", attempt: tm.attempt, workerId: moving.workerId });
    const record = (await a.api("GET", `/orgs/${p.orgId}/workers/${moving.workerId}`, { token: p.token })).body;
    expect(record.status).toBe("online");
    cb.close();
  });

  test("a worker that vanishes is given up, and one whose socket lingers on the other server is closed at its hello", async () => {
    const p = await orgWithProject(a, await newOrg(a));
    const w = await makeWorker(a, p.orgId);
    const ca = await connect(a, w.credential);
    const t = await claimed(a, a, p, ca, w.credential);
    // A half-open socket on A (the worker stops talking), then the worker says hello on B.
    ca.beats = false;
    const cb = await connect(b, w.credential, { running: [{ taskId: t.id, attempt: t.attempt }] });
    cb.running = [{ taskId: t.id, attempt: t.attempt }];
    expect((await ca.waitClose()).code).toBe(4003);
    // Then it vanishes: no server hears from it any more.
    cb.beats = false;
    await until(async () => (await taskOf(b, p, t.id)).status === "queued", longEnough * 2);
    const task = await taskOf(b, p, t.id);
    expect(task.workerId).toBeNull();
    expect(task.attempt).toBe(t.attempt);
  });
});

describe("revocation", () => {
  test("revoking on A closes the worker's socket on B at once, refuses its credential there and requeues its attempt", async () => {
    const p = await orgWithProject(a, await newOrg(a));
    const w = await makeWorker(a, p.orgId);
    const c = await connect(b, w.credential);
    const t = await claimed(a, b, p, c, w.credential);
    // The credential is cached on B now.
    expect((await workerApi(b, w.credential)("POST", `/worker/tasks/${t.id}/events`, { leaseToken: t.leaseToken, events: [{ seq: 1, type: "log", data: {} }] })).status).toBe(200);
    const revoked = await a.api("DELETE", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token });
    expect(revoked.status).toBe(200);
    // Well within the offline timeout: only the bus can explain it.
    expect((await c.waitClose(TIMEOUTS.offlineMs / 2)).code).toBe(4001);
    await until(async () => (await workerApi(b, w.credential)("GET", "/worker/me")).status === 401, TIMEOUTS.offlineMs / 2);
    expect(await taskOf(b, p, t.id)).toMatchObject({ status: "queued", workerId: null });
  });
});

describe("what a worker may take", () => {
  test("new labels, a wider policy or an approval made on A reach the worker connected to B at once: it is offered what it now qualifies for", async () => {
    const session = await newOrg(a);
    const plain = await orgWithProject(a, session);
    const gpu = await orgWithProject(a, session, { workerLabels: ["gpu"] });
    const w = await makeWorker(a, gpu.orgId, { approved: false });
    const c = await connect(b, w.credential, { capacity: 2 });
    expect(c.messages.find((m) => m.type === "welcome")!.status).toBe("pending_approval");
    const path = `/orgs/${gpu.orgId}/workers/${w.workerId}`;
    expect((await a.api("PATCH", path, { token: gpu.token, body: { policy: { projects: [gpu.projectId] } } })).status).toBe(200);
    const gpuTask = await createTaskApi(a, gpu);
    const plainTask = await createTaskApi(a, plain);
    expect((await a.api("POST", `${path}/approve`, { token: gpu.token })).status).toBe(200);
    expect((await c.next("welcome")).status).toBe("active");
    expect(await c.quiet("offer", 300)).toBe(true);
    expect((await a.api("PATCH", path, { token: gpu.token, body: { labels: ["gpu"] } })).status).toBe(200);
    expect((await c.next("offer")).taskId).toBe(gpuTask.id);
    expect((await a.api("PATCH", path, { token: gpu.token, body: { policy: {} } })).status).toBe(200);
    expect((await c.next("offer")).taskId).toBe(plainTask.id);
  });
});

describe("live records", () => {
  test("a change made on A reaches a subscriber on B, with the worker online on A", async () => {
    const p = await orgWithProject(a, await newOrg(a));
    const w = await makeWorker(a, p.orgId);
    await connect(a, w.credential);
    const live = new WebSocket(b.url.replace("http", "ws") + "/api/v1/ws", { headers: { authorization: `Bearer ${p.token}` } } as unknown as string[]);
    const messages: Record<string, any>[] = [];
    live.onmessage = (e) => messages.push(JSON.parse(String(e.data)));
    await new Promise<void>((resolve, reject) => {
      live.onopen = () => resolve();
      live.onerror = () => reject(new Error("socket error"));
    });
    try {
      live.send(JSON.stringify({ type: "subscribe", orgId: p.orgId }));
      await until(() => messages.some((m) => m.type === "subscribed"));
      expect((await a.api("PATCH", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token, body: { name: "renamed" } })).status).toBe(200);
      const update = await until(() => messages.find((m) => m.type === "worker.updated" && m.worker.name === "renamed"));
      expect(update!.worker).toMatchObject({ id: w.workerId, status: "online" });
    } finally {
      live.close();
    }
  });
});

describe("why a task waits", () => {
  test("a worker connected to B counts on A: a task it could take names no reason there; one it cannot names what it lacks", async () => {
    const session = await newOrg(a);
    const p = await orgWithProject(a, session);
    const gpu = await orgWithProject(a, session, { workerLabels: ["gpu"] });
    const w = await makeWorker(a, p.orgId);
    // It does not claim what it is offered: the tasks stay queued.
    await connect(b, w.credential, { agents: [{ name: "codex", version: "1.0.0" }] });
    const plain = await createTaskApi(a, p);
    const forCodex = await createTaskApi(a, p, { agent: "codex" });
    const forClaude = await createTaskApi(a, p, { agent: "claude" });
    const needsGpu = await createTaskApi(a, gpu);
    expect(await taskOf(a, p, plain.id)).toMatchObject({ status: "queued", waitingReason: null });
    expect(await taskOf(a, p, forCodex.id)).toMatchObject({ status: "queued", waitingReason: null });
    expect(await taskOf(a, p, forClaude.id)).toMatchObject({ status: "queued", waitingReason: "no online worker has the agent 'claude'" });
    expect(await taskOf(a, gpu, needsGpu.id)).toMatchObject({ status: "queued", waitingReason: "no online worker has the label 'gpu' its project asks for" });
  });

  test("a queued task followed on A gets its record again when a worker connects to B, and when it goes", async () => {
    const p = await orgWithProject(a, await newOrg(a), { workerLabels: ["gpu"] });
    const task = await createTaskApi(a, p);
    const live = await LiveClient.open(a, p.token);
    await live.subscribe(p.orgId, task.id);
    const c = await connect(b, (await makeWorker(a, p.orgId)).credential);
    const sent = (reason: string) => live.next((m) => m.type === "task.updated" && m.task.id === task.id && m.task.waitingReason === reason);
    expect((await sent("no online worker has the label 'gpu' its project asks for")).task.status).toBe("queued");
    c.close();
    await sent("no approved worker of the organization is online");
    live.close();
  });
});

describe("the presence leader", () => {
  test("when the leading server dies, another takes the lead: a worker that moved keeps its attempt, one that vanished loses it", async () => {
    const leader = cluster.servers.find((s) => presenceOf(s.core).leads())!;
    expect(leader).toBeDefined();
    const other = cluster.servers.find((s) => s !== leader)!;
    expect(presenceOf(other.core).leads()).toBe(false);
    const p = await orgWithProject(other, await newOrg(a));
    const gone = await makeWorker(other, p.orgId);
    const moving = await makeWorker(other, p.orgId);
    const cg = await connect(leader, gone.credential);
    const tg = await claimed(other, leader, p, cg, gone.credential);
    const cm = await connect(leader, moving.credential);
    const tm = await claimed(other, leader, p, cm, moving.credential);
    // The server dies; one worker never comes back, the other reconnects to the server left.
    await leader.stop();
    const cb = await connect(other, moving.credential, { running: [{ taskId: tm.id, attempt: tm.attempt }] });
    cb.running = [{ taskId: tm.id, attempt: tm.attempt }];
    await until(() => presenceOf(other.core).leads(), 10_000);
    await until(async () => (await taskOf(other, p, tg.id)).status === "queued", TIMEOUTS.offlineMs * 8);
    expect(await taskOf(other, p, tm.id)).toMatchObject({ status: "running", attempt: tm.attempt, workerId: moving.workerId });
    cb.close();
  }, 30_000);
});
