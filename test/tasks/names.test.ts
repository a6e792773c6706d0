// Timeline and task facts name who acted and which worker runs a task (alongside the ids): in the
// API's answers (one task, the list, the events), on the live socket, and after a rename.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeToken } from "../helpers/identity";
import { makeTask, makeWorld, type World } from "./fixtures";
import { makeWorker, ProtocolClient, until, workerApi } from "../workers/helpers";
import { deliver, makeIntegration, svcSignature } from "../integrations/fixtures";
import * as db from "../../src/db/query";

let s: TestServer;
let w: World;
let ownerName: string;
beforeAll(async () => {
  s = await startTestServer({ workerTimeouts: { offerMs: 2000, offlineMs: 3000, heartbeatMs: 300 } });
  w = await makeWorld(s);
  ownerName = (await s.core.store.read(db.get<{ name: string }>("SELECT name FROM users WHERE id = ?", w.owner.userId)))!.name;
});
afterAll(() => s.stop());

const get = (path: string) => s.api("GET", `/orgs/${w.owner.orgId}${path}`, { token: w.owner.accessToken });
const events = async (taskId: string) => (await get(`/tasks/${taskId}/events`)).body.items as any[];
const act = (taskId: string, body: Record<string, unknown>, token = w.member.accessToken) =>
  s.api("POST", `/orgs/${w.owner.orgId}/tasks/${taskId}/actions`, { token, body });

describe("people and tokens by name", () => {
  test("a user with a name is shown by name, one without by email; a token as its owner and its name", async () => {
    expect(ownerName).toBe("Admin");
    const byOwner = await makeTask(s, w.owner, w.project.id);
    expect(byOwner.createdBy).toEqual({ type: "user", id: w.owner.userId, name: "Admin" });
    expect(byOwner.worker).toBeNull();
    // The member was made without a name: the email stands for it.
    const paused = await act(byOwner.id, { action: "pause", reason: "later" });
    expect(paused.status).toBe(200);
    const evs = await events(byOwner.id);
    expect(evs.map((e) => e.actor)).toEqual([
      { type: "user", id: w.owner.userId, name: "Admin" },
      { type: "user", id: w.member.userId, name: w.member.email },
      { type: "user", id: w.member.userId, name: w.member.email },
    ]);
    // A personal API token acts for its owner.
    const tokenName = "deploy-bot";
    const made = await s.api("POST", "/me/tokens", { token: w.member.accessToken, body: { name: tokenName, orgId: w.owner.orgId } });
    const viaToken = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, {
      token: made.body.token,
      body: { projectId: w.project.id, title: "by token", prompt: "p" },
    });
    expect(viaToken.body.createdBy).toMatchObject({ type: "token", name: `${w.member.email} (token ${tokenName})` });
    expect((await events(viaToken.body.id))[0].actor).toMatchObject({ type: "token", name: `${w.member.email} (token ${tokenName})` });
  });

  test("the list names every task's creator, whoever made each", async () => {
    const token = await makeToken(s, w.owner);
    const a = await makeTask(s, w.member, w.project.id, { title: "by member" });
    const b = await makeTask(s, { orgId: w.owner.orgId, accessToken: token }, w.project.id, { title: "by owner's token" });
    const page = (await get(`/tasks?projectId=${w.project.id}&limit=100`)).body.items as any[];
    const byId = new Map(page.map((t) => [t.id, t]));
    expect(byId.get(a.id).createdBy.name).toBe(w.member.email);
    expect(byId.get(b.id).createdBy.name).toMatch(/^Admin \(token test-\d+\)$/);
    expect(page.every((t) => typeof t.createdBy.name === "string")).toBe(true);
  });
});

describe("workers and integrations by name", () => {
  test("the worker of a task and of its events, on the record, in the timeline and on the live socket", async () => {
    // Another org, whose queue holds only this test's task.
    const o = w.other;
    const oget = (path: string) => s.api("GET", `/orgs/${o.orgId}${path}`, { token: o.accessToken });
    const oevents = async (taskId: string) => (await oget(`/tasks/${taskId}/events`)).body.items as any[];
    const worker = await makeWorker(s, o.orgId, { name: "build-1" });
    const c = await ProtocolClient.connect(s, worker.credential);
    // A person watching the task live.
    const ws = new WebSocket(s.url.replace("http", "ws") + "/api/v1/ws", { headers: { authorization: `Bearer ${o.accessToken}` } } as any);
    const live: any[] = [];
    let subscribed!: () => void;
    const ready = new Promise<void>((r) => (subscribed = r));
    ws.onmessage = (m) => {
      const msg = JSON.parse(String(m.data));
      if (msg.type === "subscribed") subscribed();
      live.push(msg);
    };
    await new Promise((r) => (ws.onopen = r));
    ws.send(JSON.stringify({ type: "subscribe", orgId: o.orgId }));
    await ready;

    const task = await makeTask(s, o, w.otherProject.id, { title: "for build-1" });
    const offer = await c.next("offer", (m) => m.taskId === task.id);
    const claim = await workerApi(s, worker.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
    expect(claim.status).toBe(200);
    // Its heartbeats list the attempt, as a worker's do: one missing from two of them is lost.
    c.running.push({ taskId: task.id, attempt: claim.body.attempt });
    const running = (await oget(`/tasks/${task.id}`)).body;
    expect(running).toMatchObject({ workerId: worker.workerId, worker: { id: worker.workerId, name: "build-1" } });
    const started = (await oevents(task.id)).at(-1);
    expect(started).toMatchObject({ type: "status", actor: { type: "worker", id: worker.workerId, name: "build-1" }, data: { to: "running" } });

    const done = await workerApi(s, worker.credential)("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: claim.body.leaseToken, to: "completed", summary: "ok" });
    expect(done.status).toBe(200);
    const completed = (await oevents(task.id)).at(-1);
    expect(completed).toMatchObject({ type: "status", actor: { type: "worker", name: "build-1" }, data: { to: "completed", summary: "ok" } });
    const listed = (await oget(`/tasks?projectId=${w.otherProject.id}&limit=100`)).body.items.find((t: any) => t.id === task.id);
    expect(listed.worker).toEqual({ id: worker.workerId, name: "build-1" });

    // The socket carried the same names.
    await until(() => live.some((m) => m.type === "task.event" && m.taskId === task.id && m.event.data.to === "completed"));
    const liveEvents = live.filter((m) => m.type === "task.event" && m.taskId === task.id).map((m) => m.event);
    expect(liveEvents.map((e) => e.actor?.name)).toEqual([o.email, "build-1", "build-1"]);
    const liveRecords = live.filter((m) => m.type === "task.updated" && m.task.id === task.id).map((m) => m.task);
    expect(liveRecords[0].createdBy).toEqual({ type: "user", id: o.userId, name: o.email });
    expect(liveRecords.at(-1).worker).toEqual({ id: worker.workerId, name: "build-1" });
    ws.close();
    c.ws.close();

    // Names are read, not stored: a renamed worker reads with its new name.
    await s.core.store.write(db.run("UPDATE workers SET name = 'build-2' WHERE id = ?", worker.workerId));
    expect((await oget(`/tasks/${task.id}`)).body.worker.name).toBe("build-2");
    expect((await oevents(task.id)).at(-1).actor.name).toBe("build-2");
  });

  test("a task an integration made names the integration as its creator and first actor", async () => {
    const i = await makeIntegration(s, w.owner as any, { kind: "signed_json", name: "Nightly CI", projectId: w.project.id });
    const body = JSON.stringify({ title: "Fix the flaky test", prompt: "it fails once in 20 runs" });
    const r = await deliver(s, i.id, body, { "x-svc-signature": svcSignature(i.secret, body), "x-svc-delivery": `d-${Math.random()}` });
    expect(r.status).toBe(201);
    const task = (await get(`/tasks/${r.body.taskId}`)).body;
    expect(task.createdBy).toEqual({ type: "integration", id: i.id, name: "Nightly CI" });
    expect((await events(task.id))[0].actor).toEqual({ type: "integration", id: i.id, name: "Nightly CI" });
  });
});
