// Faults: silent workers, reconnects, revocation, the approval gate. Timeouts are shortened
// (FAST) so each scenario takes about a second; the restarts, about five.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { newOrg } from "../helpers/identity";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { presenceOf } from "../../src/modules/workers/presence";
import { all, get } from "../../src/db/query";
import { PROTOCOL_VERSION } from "../../src/protocol/messages";
import { FAST, ProtocolClient, createTaskApi, makeWorker, orgWithProject, until, workerApi } from "./helpers";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ workerTimeouts: FAST });
});
afterAll(() => s.stop());

/**
 * The restart scenarios: a worker away across a restart must still be within its offline timeout
 * when it comes back, and under load the steps around a restart take more than FAST's 0.8 s.
 */
const RESTART = { ...FAST, offlineMs: 4000 };

const fresh = async () => orgWithProject(s, await newOrg(s));
const getTask = async (p: { orgId: string; token: string }, id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}`, { token: p.token })).body;

async function claim(c: ProtocolClient, cred: string, taskId: string) {
  const offer = await c.next("offer", (m) => m.taskId === taskId);
  const r = await workerApi(s, cred)("POST", `/worker/tasks/${taskId}/claim`, { offerId: offer.offerId });
  expect(r.status).toBe(200);
  c.running.push({ taskId, attempt: r.body.attempt });
  return r.body;
}

describe("lost attempts", () => {
  test("a silent worker goes offline; its attempt requeues with attempt + 1, and fails after 3 attempts", async () => {
    const p = await fresh();
    const task = await createTaskApi(s, p);
    for (let attempt = 1; attempt <= 3; attempt++) {
      const w = await makeWorker(s, p.orgId);
      const c = await ProtocolClient.connect(s, w.credential);
      const got = await claim(c, w.credential, task.id);
      expect(got.attempt).toBe(attempt);
      c.beats = false; // silent from now on (the socket stays open)
      const closed = await c.waitClose(FAST.offlineMs * 4);
      expect(closed.code).toBe(4004);
      const t = await until(async () => {
        const t = await getTask(p, task.id);
        return t.status !== "running" && t;
      }, FAST.offlineMs * 4);
      expect(t.status).toBe(attempt < 3 ? "queued" : "failed");
      expect(t.attempt).toBe(attempt);
    }
    const events = (await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}/events`, { token: p.token })).body.items;
    const errors = events.filter((e: any) => e.type === "error").map((e: any) => e.data.message);
    expect(errors).toHaveLength(3);
    expect(errors[2]).toContain("failed after 3 attempts");
    expect(errors[0]).toContain("offline");
  });

  test("a worker that reconnects listing its attempt keeps the lease; one that comes back without it loses it", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential, { capacity: 2 });
    const keep = await createTaskApi(s, p, { title: "keep" });
    const drop = await createTaskApi(s, p, { title: "drop" });
    const k = await claim(c, w.credential, keep.id);
    const d = await claim(c, w.credential, drop.id);
    c.close();
    await Bun.sleep(50);
    const c2 = await ProtocolClient.connect(s, w.credential, { capacity: 2, running: [{ taskId: keep.id, attempt: 1 }, { taskId: "tsk_gone", attempt: 4 }] });
    // What it no longer holds is stopped; what it dropped is lost and offered again (to it: it has a free slot).
    expect(await c2.next("control", (m) => m.taskId === "tsk_gone")).toMatchObject({ action: "cancel", attempt: 4 });
    const again = await c2.next("offer", (m) => m.taskId === drop.id);
    expect(again.attempt).toBe(2);
    const api = workerApi(s, w.credential);
    expect((await api("POST", `/worker/tasks/${keep.id}/events`, { leaseToken: k.leaseToken, events: [{ seq: 1, type: "log", data: { line: "still here" } }] })).status).toBe(200);
    expect((await api("POST", `/worker/tasks/${drop.id}/events`, { leaseToken: d.leaseToken, events: [{ seq: 1, type: "log", data: {} }] })).status).toBe(409);
    expect((await getTask(p, keep.id)).status).toBe("running");
    c2.close();
  });

  test("a held attempt missing from two heartbeats is lost", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, p);
    await claim(c, w.credential, task.id);
    c.running = [];
    const again = await c.next("offer", (m) => m.taskId === task.id, FAST.heartbeatMs * 6);
    expect(again.attempt).toBe(2);
    c.close();
  });

  test("a server stalled past the offline timeout keeps the attempts of workers whose heartbeats wait in its sockets", async () => {
    // Its own server, offline after 2 s (a loaded machine must not starve the worker's process that
    // long) and with offers that outlast a slow claim.
    const timeouts = { ...FAST, offerMs: 5000, offlineMs: 2000 };
    const own = await startTestServer({ workerTimeouts: timeouts });
    const p = await orgWithProject(own);
    const w = await makeWorker(own, p.orgId);
    const c = await ProtocolClient.connect(own, w.credential);
    const task = await createTaskApi(own, p);
    const offer = await c.next("offer", (m) => m.taskId === task.id);
    const claimed = await workerApi(own, w.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
    expect(claimed.status).toBe(200);
    const got = claimed.body;
    // The attempt moves to a worker in its own process, which beats on while this one (the server) stalls.
    const running = [{ taskId: task.id, attempt: got.attempt }];
    c.running = running;
    const worker = Bun.spawn([process.execPath, join(import.meta.dir, "fixtures", "beating-worker.ts")], {
      env: { ...process.env, AO_URL: own.url.replace("http", "ws") + "/api/v1/worker/ws", AO_CREDENTIAL: w.credential, AO_PROTOCOL: String(PROTOCOL_VERSION), AO_HEARTBEAT_MS: String(timeouts.heartbeatMs), AO_RUNNING: JSON.stringify(running) },
      stdout: "pipe",
    });
    try {
      const out = worker.stdout.getReader();
      let said = "";
      while (!said.includes("welcome")) said += new TextDecoder().decode((await out.read()).value);
      expect((await c.waitClose()).code).toBe(4003);
      const presence = presenceOf(own.core);
      // A long synchronous task (or a suspended process); when it ends, the monitor's tick is overdue.
      Bun.sleepSync(timeouts.offlineMs * 1.5);
      const resumed = Date.now();
      // The heartbeats sent meanwhile are read; the worker stayed connected throughout and keeps its lease.
      await until(() => presence.dispatcher.conns.get(w.workerId)!.lastSeen >= resumed);
      const api = workerApi(own, w.credential);
      expect((await api("POST", `/worker/tasks/${task.id}/events`, { leaseToken: got.leaseToken, events: [{ seq: 1, type: "log", data: { line: "still here" } }] })).status).toBe(200);
      expect((await own.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token })).body).toMatchObject({ status: "running", attempt: 1, workerId: w.workerId });
    } finally {
      worker.kill();
      await worker.exited;
      await own.stop();
    }
  });

  test("controls for an away worker are delivered when it says hello", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, p);
    await claim(c, w.credential, task.id);
    c.close();
    await Bun.sleep(50);
    await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: p.token, body: { action: "pause" } });
    const c2 = await ProtocolClient.connect(s, w.credential, { running: [{ taskId: task.id, attempt: 1 }] });
    expect(await c2.next("control", (m) => m.taskId === task.id)).toMatchObject({ action: "pause", attempt: 1 });
    c2.close();
  });
});

describe("mail for workers that are away", () => {
  test("kept in the database in order, at most 100 per worker; none for a worker that does not exist", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId);
    const mailbox = presenceOf(s.core).dispatcher.mailbox;
    for (let i = 1; i <= 105; i++) await s.core.store.write(mailbox.control(w.workerId, "tsk_x", i, "pause"));
    await s.core.store.write(mailbox.control("wkr_01m819v1yqhsryfjy69tbbabjs", "tsk_x", 1, "pause"));
    const kept = await s.core.store.read(all<{ message: string }>("SELECT message FROM worker_mail WHERE worker_id = ? ORDER BY id", w.workerId));
    expect(kept.map((r) => JSON.parse(r.message).attempt)).toEqual(Array.from({ length: 100 }, (_, i) => i + 6));
    expect(await s.core.store.read(get("SELECT count(*) AS n FROM worker_mail WHERE worker_id = 'wkr_01m819v1yqhsryfjy69tbbabjs'"))).toEqual({ n: 0 });
    const c = await ProtocolClient.connect(s, w.credential);
    expect(await c.next("control", (m) => m.attempt === 105)).toMatchObject({ action: "pause", taskId: "tsk_x" });
    expect(await s.core.store.read(get("SELECT count(*) AS n FROM worker_mail WHERE worker_id = ?", w.workerId))).toEqual({ n: 0 });
    c.close();
  });
});

describe("server restart", () => {
  test("a restarted server gives holders the offline timeout to come back; one that does keeps its lease, one that does not loses it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ao-restart-"));
    let s1 = await startTestServer({ workerTimeouts: RESTART, dataDir });
    const p = await orgWithProject(s1, await newOrg(s1));
    const back = await makeWorker(s1, p.orgId);
    const gone = await makeWorker(s1, p.orgId);
    const cb = await ProtocolClient.connect(s1, back.credential);
    const t1 = await createTaskApi(s1, p);
    const o1 = await cb.next("offer", (m) => m.taskId === t1.id);
    const c1 = (await workerApi(s1, back.credential)("POST", `/worker/tasks/${t1.id}/claim`, { offerId: o1.offerId })).body;
    cb.close();
    await Bun.sleep(50);
    // The agent asks a question; the person answers while its worker is away, then pauses the
    // task: both controls wait in the database and outlive the restart, in order.
    const lease1 = c1.leaseToken;
    const asked = await workerApi(s1, back.credential)("POST", `/worker/tasks/${t1.id}/transition`, { leaseToken: lease1, to: "needs_input", needs: { message: "which colour?" } });
    expect(asked.status).toBe(200);
    expect((await s1.api("POST", `/orgs/${p.orgId}/tasks/${t1.id}/actions`, { token: p.token, body: { action: "input", input: "blue" } })).status).toBe(200);
    expect((await s1.api("POST", `/orgs/${p.orgId}/tasks/${t1.id}/actions`, { token: p.token, body: { action: "pause" } })).status).toBe(200);
    const cg = await ProtocolClient.connect(s1, gone.credential);
    const t2 = await createTaskApi(s1, p);
    const o2 = await cg.next("offer", (m) => m.taskId === t2.id);
    expect((await workerApi(s1, gone.credential)("POST", `/worker/tasks/${t2.id}/claim`, { offerId: o2.offerId })).status).toBe(200);
    cg.close();
    // A readiness run asked of a worker that was online and then left: it fails once the worker is given up.
    const repoUrl = "https://git.example.test/restart/app.git";
    const added = await s1.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/repositories`, { token: p.token, body: { url: repoUrl } });
    expect(added.status).toBe(201);
    // A clone asked of a worker that is away: it outlives the restart.
    const clone = await s1.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/repositories/${added.body.repository.id}/clone`, { token: p.token, body: { workerIds: [back.workerId] } });
    expect(clone.body.workers[0].delivered).toBe(false);
    const cr = await ProtocolClient.connect(s1, gone.credential);
    await workerApi(s1, gone.credential)("POST", "/worker/repos", { repos: [{ path: "/ws/app", url: repoUrl }] });
    const run = await s1.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/readiness`, { token: p.token, body: {} });
    expect(run.status).toBe(202);
    await cr.next("readiness");
    cr.close();
    await s1.stop();
    const s2 = await startTestServer({ workerTimeouts: RESTART, dataDir, databaseUrl: s1.core.config.databaseUrl });
    try {
      const c2 = await ProtocolClient.connect(s2, back.credential, { running: [{ taskId: t1.id, attempt: 1 }] });
      c2.running = [{ taskId: t1.id, attempt: 1 }];
      expect((await c2.next("clone")).repositoryId).toBe(added.body.repository.id);
      expect(await c2.next("control", (m) => m.taskId === t1.id)).toMatchObject({ action: "input", input: "blue", attempt: 1 });
      expect(await c2.next("control", (m) => m.taskId === t1.id)).toMatchObject({ action: "pause", attempt: 1 });
      expect(await s2.core.store.read(get("SELECT count(*) AS n FROM worker_mail WHERE worker_id = ?", back.workerId))).toEqual({ n: 0 });
      const status = async (id: string) => (await s2.api("GET", `/orgs/${p.orgId}/tasks/${id}`, { token: p.token })).body;
      await until(async () => (await status(t2.id)).status === "queued", RESTART.offlineMs * 4);
      expect(await status(t1.id)).toMatchObject({ status: "paused", attempt: 1, workerId: back.workerId });
      const ev = await workerApi(s2, back.credential)("POST", `/worker/tasks/${t1.id}/events`, { leaseToken: c1.leaseToken, events: [{ seq: 1, type: "log", data: {} }] });
      expect(ev.status).toBe(200);
      // The run fails when its worker is given up: with t2 when the worker still held it at the
      // restart, or on its own timeout when t2 was already lost (its heartbeats stopped naming it).
      const readiness = async () => (await s2.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/readiness`, { token: p.token })).body;
      await until(async () => (await readiness()).status === "failed", RESTART.offlineMs * 5);
      expect(await readiness()).toMatchObject({ runId: run.body.runId, status: "failed", error: "the worker was offline for more than 4 s" });
      c2.close();
    } finally {
      await s2.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("server restart, readiness only", () => {
  test("a worker that held only a readiness run gets the offline timeout to come back, then its run fails", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ao-restart-"));
    const s1 = await startTestServer({ workerTimeouts: RESTART, dataDir });
    const p = await orgWithProject(s1, await newOrg(s1));
    const w = await makeWorker(s1, p.orgId);
    const repoUrl = "https://git.example.test/restart/only.git";
    expect((await s1.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/repositories`, { token: p.token, body: { url: repoUrl } })).status).toBe(201);
    const c = await ProtocolClient.connect(s1, w.credential);
    await workerApi(s1, w.credential)("POST", "/worker/repos", { repos: [{ path: "/ws/app", url: repoUrl }] });
    const run = await s1.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/readiness`, { token: p.token, body: {} });
    expect(run.status).toBe(202);
    await c.next("readiness");
    // The server stops while the worker is still seen (no time for the start's sweep to fail the run).
    await s1.stop();
    c.close();
    const s2 = await startTestServer({ workerTimeouts: RESTART, dataDir, databaseUrl: s1.core.config.databaseUrl });
    try {
      const latest = async () => (await s2.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/readiness`, { token: p.token })).body;
      expect(await latest()).toMatchObject({ runId: run.body.runId, status: "queued" });
      await until(async () => (await latest()).status === "failed", RESTART.offlineMs * 5);
      expect(await latest()).toMatchObject({ runId: run.body.runId, error: "the worker was offline for more than 4 s" });
    } finally {
      await s2.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("revocation and approval", () => {
  test("revoke: socket closed with 4001, HTTP 401, running attempt requeued for another worker", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, p);
    const got = await claim(c, w.credential, task.id);
    const r = await s.api("DELETE", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: "revoked", runningTaskIds: [] });
    expect((await c.waitClose()).code).toBe(4001);
    const api = workerApi(s, w.credential);
    expect((await api("POST", `/worker/tasks/${task.id}/events`, { leaseToken: got.leaseToken, events: [{ seq: 1, type: "log", data: {} }] })).status).toBe(401);
    expect((await api("GET", "/worker/me")).status).toBe(401);
    expect((await api("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: got.leaseToken, to: "completed" })).status).toBe(401);
    expect((await api("POST", `/worker/tasks/${task.id}/claim`, { offerId: "ofr_x" })).status).toBe(401);
    expect((await api("POST", "/worker/repos", { repos: [] })).status).toBe(401);
    const upload = await fetch(`${s.url}/api/v1/worker/tasks/${task.id}/artifacts/x.txt`, {
      method: "PUT",
      headers: { authorization: `Bearer ${w.credential}`, "x-ao-lease": got.leaseToken },
      body: "x",
    });
    expect(upload.status).toBe(401);
    const t = await getTask(p, task.id);
    expect(t).toMatchObject({ status: "queued", workerId: null, attempt: 1 });
    const again = await ProtocolClient.connect(s, w.credential, null).catch((e) => e);
    expect(again).toBeInstanceOf(Error);
    const other = await makeWorker(s, p.orgId);
    const c2 = await ProtocolClient.connect(s, other.credential);
    expect((await c2.next("offer", (m) => m.taskId === task.id)).attempt).toBe(2);
    expect((await s.api("DELETE", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token })).status).toBe(200);
    expect((await s.api("PATCH", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token, body: { name: "x" } })).status).toBe(409);
    expect((await s.api("POST", `/orgs/${p.orgId}/workers/${w.workerId}/approve`, { token: p.token })).status).toBe(409);
    expect((await s.api("GET", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token })).body).toMatchObject({ status: "revoked", name: "w" });
    c2.close();
  });

  test("approval gate: pending workers connect but get no work until approved", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId, { approved: false });
    const c = await ProtocolClient.connect(s, w.credential, null);
    c.send({ type: "hello", protocol: 1, version: "t", tools: [], agents: [], providers: [], capacity: 1 });
    expect((await c.next("welcome")).status).toBe("pending_approval");
    const task = await createTaskApi(s, p);
    expect(await c.quiet("offer", 300)).toBe(true);
    expect((await s.api("GET", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token })).body.status).toBe("pending_approval");
    expect((await workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: "ofr_x" })).status).toBe(403);
    const r = await s.api("POST", `/orgs/${p.orgId}/workers/${w.workerId}/approve`, { token: p.token });
    expect(r.body.status).toBe("online");
    expect((await c.next("welcome")).status).toBe("active");
    expect((await c.next("offer")).taskId).toBe(task.id);
    c.close();
  });
});
