// Why a queued task waits (the task record's waitingReason), against a real server with workers on
// real sockets: no worker online, none for its project, none with its agent, none with its
// project's labels; null once one could take it, even while that one is busy. On PostgreSQL
// (AO_TEST_DATABASE=postgres) the same cases go through the path that reads the org's workers,
// since a server there never assumes it holds every socket. A queued task's live subscribers get
// its record again whenever the reason may have changed (workers, the project's policy).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, newOrg } from "../helpers/identity";
import { LiveClient } from "../helpers/live-client";
import { FAST, ProtocolClient, createTaskApi, makeWorker, orgWithProject, until, workerApi } from "./helpers";

let s: TestServer;
const clients: ProtocolClient[] = [];

beforeAll(async () => {
  s = await startTestServer({ workerTimeouts: FAST });
  await createAdmin(s);
});
afterAll(async () => {
  for (const c of clients) c.close();
  await s.stop();
});

type Project = Awaited<ReturnType<typeof orgWithProject>>;

async function connect(credential: string, hello: Record<string, unknown> = {}) {
  const c = await ProtocolClient.connect(s, credential, hello);
  clients.push(c);
  return c;
}

const reason = async (p: Project, id: string) => {
  const r = await s.api("GET", `/orgs/${p.orgId}/tasks/${id}`, { token: p.token });
  expect(r.status).toBe(200);
  return r.body.waitingReason as string | null;
};

/** The reason in the task's record and in the org's list, which must agree. */
async function reasons(p: Project, id: string) {
  const one = await reason(p, id);
  const list = await s.api("GET", `/orgs/${p.orgId}/tasks?status=queued`, { token: p.token });
  expect(list.body.items.find((t: { id: string }) => t.id === id)?.waitingReason).toBe(one);
  return one;
}

describe("waitingReason", () => {
  test("no worker online, or only one not yet approved: says none is online; the create's answer says so too", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const task = await createTaskApi(s, p);
    expect((task as { waitingReason?: string }).waitingReason).toBe("no approved worker of the organization is online");
    expect(await reasons(p, task.id)).toBe("no approved worker of the organization is online");
    const pending = await makeWorker(s, p.orgId, { approved: false });
    await connect(pending.credential);
    expect(await reasons(p, task.id)).toBe("no approved worker of the organization is online");
    // A worker of another organization changes nothing.
    const other = await orgWithProject(s, await newOrg(s));
    await connect((await makeWorker(s, other.orgId)).credential);
    expect(await reasons(p, task.id)).toBe("no approved worker of the organization is online");
  });

  test("a worker limited to other projects: says none takes this project's tasks", async () => {
    const session = await newOrg(s);
    const p = await orgWithProject(s, session);
    const elsewhere = await orgWithProject(s, session);
    const w = await makeWorker(s, p.orgId);
    const limited = await s.api("PATCH", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token, body: { policy: { projects: [elsewhere.projectId] } } });
    expect(limited.status).toBe(200);
    await connect(w.credential);
    const task = await createTaskApi(s, p);
    expect(await reasons(p, task.id)).toBe("no online worker takes this project's tasks (each is limited to other projects)");
    // The same worker may take the other project's: that one waits for nothing ao can name.
    const there = await createTaskApi(s, elsewhere);
    expect(await reason(elsewhere, there.id)).toBeNull();
  });

  test("a task naming an agent no online worker runs: names the agent", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    await connect((await makeWorker(s, p.orgId)).credential, { agents: [{ name: "exec", version: null, command: "sh" }] });
    const task = await createTaskApi(s, p, { agent: "codex" });
    expect(await reasons(p, task.id)).toBe("no online worker has the agent 'codex'");
  });

  test("a project's labels no online worker has all of: names them; one label alone is named as one", async () => {
    const session = await newOrg(s);
    const two = await orgWithProject(s, session, { workerLabels: ["gpu", "linux"] });
    const one = await orgWithProject(s, session, { workerLabels: ["arm"] });
    // Each label is on some worker, both on none.
    await connect((await makeWorker(s, two.orgId, { labels: ["gpu"] })).credential);
    await connect((await makeWorker(s, two.orgId, { labels: ["linux"] })).credential);
    const t2 = await createTaskApi(s, two);
    expect(await reasons(two, t2.id)).toBe("no online worker has all the labels its project asks for: 'gpu', 'linux'");
    const t1 = await createTaskApi(s, one);
    expect(await reasons(one, t1.id)).toBe("no online worker has the label 'arm' its project asks for");
  });

  test("once a worker that could take it connects: null, even while that worker's one slot is taken; and back when it goes", async () => {
    const p = await orgWithProject(s, await newOrg(s), { workerLabels: ["gpu"] });
    const first = await createTaskApi(s, p);
    const second = await createTaskApi(s, p);
    // Nobody online is the first thing to mend; then a worker without the label.
    expect(await reason(p, second.id)).toBe("no approved worker of the organization is online");
    await connect((await makeWorker(s, p.orgId, { labels: ["cpu"] })).credential);
    expect(await reason(p, second.id)).toBe("no online worker has the label 'gpu' its project asks for");
    const w = await makeWorker(s, p.orgId, { labels: ["gpu"] });
    const c = await connect(w.credential);
    // It is offered one of them, and takes it: its only slot is full, the other waits for it.
    const offer = await c.next("offer");
    expect([first.id, second.id]).toContain(offer.taskId);
    const claim = await workerApi(s, w.credential)("POST", `/worker/tasks/${offer.taskId}/claim`, { offerId: offer.offerId });
    expect(claim.status).toBe(200);
    c.running = [{ taskId: offer.taskId, attempt: claim.body.attempt }];
    const left = offer.taskId === first.id ? second : first;
    expect(await reasons(p, left.id)).toBeNull();
    // The running task has no waiting reason either.
    expect(await reason(p, offer.taskId)).toBeNull();
    c.close();
    await c.waitClose();
    expect(await until(async () => (await reason(p, left.id)) === "no online worker has the label 'gpu' its project asks for")).toBe(true);
  });
});

describe("live", () => {
  test("a queued task's subscribers get its record again as its reason changes: a worker connects, the project's labels change, the worker goes", async () => {
    const p = await orgWithProject(s, await newOrg(s), { workerLabels: ["gpu"] });
    const task = await createTaskApi(s, p);
    const live = await LiveClient.open(s, p.token);
    await live.subscribe(p.orgId, task.id);
    const reasonSent = async (text: string | null) => (await live.next((m) => m.type === "task.updated" && m.task.id === task.id && m.task.waitingReason === text)).task;
    // Another org's worker changes nothing for this task (checked at the end: no message for it).
    const other = await orgWithProject(s, await newOrg(s));
    await connect((await makeWorker(s, other.orgId)).credential);
    const c = await connect((await makeWorker(s, p.orgId, { labels: ["cpu"] })).credential);
    expect(await reasonSent("no online worker has the label 'gpu' its project asks for")).toMatchObject({ status: "queued", updatedAt: task.updatedAt });
    // The project asks for no label any more: the worker could take it (it is offered; it does not claim).
    const edited = await s.api("PATCH", `/orgs/${p.orgId}/projects/${p.projectId}`, { token: p.token, body: { policy: {} } });
    expect(edited.status).toBe(200);
    expect(await reasonSent(null)).toMatchObject({ status: "queued" });
    await c.next("offer");
    c.close();
    await c.waitClose();
    expect(await reasonSent("no approved worker of the organization is online")).toMatchObject({ status: "queued" });
    // Each message was one of those three changes: none before the first, none for the other org's worker.
    expect(live.updates(task.id).map((m) => m.task.waitingReason)).toEqual([
      "no online worker has the label 'gpu' its project asks for",
      null,
      "no approved worker of the organization is online",
    ]);
    live.close();
  });
});
