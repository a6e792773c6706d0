// The tool calls an attempt leaves open when it ends without a person: its worker goes silent or is
// revoked, or reports the attempt over (its agent died mid-call). Each call still open is closed on
// the timeline in the same write as the status change, once; the worker's protocol is spoken
// directly here (test/agents/claude-interrupted.test.ts does it with the real worker and Claude).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { newOrg } from "../helpers/identity";
import { FAST, ProtocolClient, createTaskApi, makeWorker, orgWithProject, until, workerApi } from "./helpers";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ workerTimeouts: FAST });
});
afterAll(() => s.stop());

type Org = Awaited<ReturnType<typeof orgWithProject>>;
const events = async (p: Org, id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}/events?limit=200`, { token: p.token })).body.items as any[];
const getTask = async (p: Org, id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}`, { token: p.token })).body;

const BASH = { id: "call_a", name: "Bash", input: { command: "sleep 60" } };
const EDIT = { id: "call_d", name: "Edit", input: { path: "x.ts" } };
/** Two calls left open (a, d), two closed (b completed, c failed), one without an id (never paired). */
const CALLS = [
  { ...BASH, status: "started" },
  { id: "call_b", name: "Read", input: { path: "README.md" }, status: "started" },
  { id: "call_b", name: "Read", output: "# ao", status: "completed" },
  { id: null, name: "WebSearch", input: { query: "ao" }, status: "started" },
  { id: "call_c", name: "Write", input: { path: "y" }, status: "started" },
  { id: "call_c", name: "Write", output: "denied", status: "failed" },
  { ...EDIT, status: "started" },
];
const closing = (why: string) => [BASH, EDIT].map((c) => ({ ...c, output: why, status: "interrupted" }));

/** A worker that claimed a task of a new org and reported CALLS on its timeline. */
async function holding(hello: Record<string, unknown> = {}) {
  const p = await orgWithProject(s, await newOrg(s));
  const w = await makeWorker(s, p.orgId);
  const c = await ProtocolClient.connect(s, w.credential, hello);
  const t = await createTaskApi(s, p);
  const offer = await c.next("offer", (m) => m.taskId === t.id);
  const api = workerApi(s, w.credential);
  const claim = (await api("POST", `/worker/tasks/${t.id}/claim`, { offerId: offer.offerId })).body;
  c.running.push({ taskId: t.id, attempt: claim.attempt });
  const r = await api("POST", `/worker/tasks/${t.id}/events`, { leaseToken: claim.leaseToken, events: CALLS.map((data, i) => ({ seq: i + 1, type: "tool", data })) });
  expect(r.body).toEqual({ written: CALLS.length, duplicates: 0 });
  const before = (await events(p, t.id)).length;
  return { p, w, c, t, api, leaseToken: claim.leaseToken as string, before };
}

/** The events written after `before`, the timeline checked gap-free. */
async function after(p: Org, taskId: string, before: number) {
  const all = await events(p, taskId);
  expect(all.map((e) => e.seq)).toEqual(all.map((_, i) => i + 1));
  return all.slice(before).map((e) => ({ type: e.type, data: e.data }));
}

describe("a lost worker's open calls", () => {
  test("silent: closed between the loss's error and the status event; its late result is refused; the next attempt's end closes only its own", async () => {
    const h = await holding();
    h.c.beats = false;
    await until(async () => (await getTask(h.p, h.t.id)).status === "queued", FAST.offlineMs * 6, 50);
    const lost = "attempt 1 was lost: the worker was offline for more than 1 s";
    const written = await after(h.p, h.t.id, h.before);
    expect(written.map((e) => e.type)).toEqual(["error", "tool", "tool", "status"]);
    expect(written[0].data.message).toBe(`${lost}; the task goes back to the queue`);
    expect(written.slice(1, 3).map((e) => e.data)).toEqual(closing(`stopped: ${lost}`));
    expect(written[3].data).toMatchObject({ from: "running", to: "queued" });
    const late = await h.api("POST", `/worker/tasks/${h.t.id}/events`, { leaseToken: h.leaseToken, events: [{ seq: 8, type: "tool", data: { ...BASH, output: "", status: "completed" } }] });
    expect(late.status).toBe(409);
    h.c.close();

    // Attempt 2 on another worker opens a call of its own and its agent dies: attempt 1's stay closed once.
    const other = await makeWorker(s, h.p.orgId);
    const c2 = await ProtocolClient.connect(s, other.credential);
    const offer = await c2.next("offer", (m) => m.taskId === h.t.id);
    const api2 = workerApi(s, other.credential);
    const claim = (await api2("POST", `/worker/tasks/${h.t.id}/claim`, { offerId: offer.offerId })).body;
    expect(claim.attempt).toBe(2);
    await api2("POST", `/worker/tasks/${h.t.id}/events`, { leaseToken: claim.leaseToken, events: [{ seq: 1, type: "tool", data: { ...BASH, status: "started" } }] });
    const mark = (await events(h.p, h.t.id)).length;
    expect((await api2("POST", `/worker/tasks/${h.t.id}/transition`, { leaseToken: claim.leaseToken, to: "failed", error: "the agent was killed by SIGKILL" })).status).toBe(200);
    expect(await after(h.p, h.t.id, mark)).toEqual([
      { type: "error", data: { message: "the agent was killed by SIGKILL", attempt: 2 } },
      { type: "tool", data: { ...BASH, output: "stopped: the attempt failed", status: "interrupted" } },
      { type: "status", data: { from: "running", to: "failed", attempt: 2 } },
    ]);
    c2.close();
  });

  test("revoked: closed with the revocation as the reason", async () => {
    const h = await holding();
    expect((await s.api("DELETE", `/orgs/${h.p.orgId}/workers/${h.w.workerId}`, { token: h.p.token })).status).toBe(200);
    const written = await after(h.p, h.t.id, h.before);
    expect(written.map((e) => e.type)).toEqual(["error", "tool", "tool", "status"]);
    expect(written.slice(1, 3).map((e) => e.data)).toEqual(closing("stopped: attempt 1 was lost: the worker was revoked"));
    expect(await getTask(h.p, h.t.id)).toMatchObject({ status: "queued", attempt: 1 });
    h.c.close();
  });

  test("paused when its worker goes: closed, the task stays paused; a cancel then closes nothing twice", async () => {
    const h = await holding();
    expect((await s.api("POST", `/orgs/${h.p.orgId}/tasks/${h.t.id}/actions`, { token: h.p.token, body: { action: "pause" } })).status).toBe(200);
    const paused = (await events(h.p, h.t.id)).length;
    h.c.beats = false;
    await until(async () => (await events(h.p, h.t.id)).length > paused, FAST.offlineMs * 6, 50);
    const written = await after(h.p, h.t.id, paused);
    expect(written.map((e) => e.type)).toEqual(["error", "tool", "tool"]);
    expect(written.slice(1).map((e) => e.data)).toEqual(closing("stopped: attempt 1 was lost: the worker was offline for more than 1 s"));
    expect((await getTask(h.p, h.t.id)).status).toBe("paused");
    expect((await s.api("POST", `/orgs/${h.p.orgId}/tasks/${h.t.id}/actions`, { token: h.p.token, body: { action: "cancel" } })).status).toBe(200);
    expect((await after(h.p, h.t.id, paused + written.length)).map((e) => e.type)).toEqual(["action", "status"]);
    h.c.close();
  });
});

describe("an attempt its worker reports over", () => {
  test("failed (the agent died mid-call): closed before the status event, not at a question before it; the report sent again writes nothing more", async () => {
    const h = await holding();
    // A question does not end the attempt: its calls stay open.
    expect((await h.api("POST", `/worker/tasks/${h.t.id}/transition`, { leaseToken: h.leaseToken, to: "needs_input", needs: { message: "Which file?" } })).status).toBe(200);
    expect((await after(h.p, h.t.id, h.before)).map((e) => e.type)).toEqual(["status"]);
    h.before += 1;
    const report = { leaseToken: h.leaseToken, to: "failed", error: "the agent exited with code 137", summary: "half done" };
    expect((await h.api("POST", `/worker/tasks/${h.t.id}/transition`, report)).status).toBe(200);
    const written = await after(h.p, h.t.id, h.before);
    expect(written.map((e) => e.type)).toEqual(["error", "tool", "tool", "status"]);
    expect(written.slice(1, 3).map((e) => e.data)).toEqual(closing("stopped: the attempt failed"));
    // A retry of the report (its answer lost): a no-op, the calls are not closed again.
    expect((await h.api("POST", `/worker/tasks/${h.t.id}/transition`, report)).status).toBe(200);
    expect(await after(h.p, h.t.id, h.before)).toEqual(written);
    expect(await getTask(h.p, h.t.id)).toMatchObject({ status: "failed", failureReason: "the agent exited with code 137" });
    h.c.close();
  });

  test("completed with a call never answered: closed, since nothing can report it after the end", async () => {
    const h = await holding();
    expect((await h.api("POST", `/worker/tasks/${h.t.id}/transition`, { leaseToken: h.leaseToken, to: "completed", summary: "done" })).status).toBe(200);
    const written = await after(h.p, h.t.id, h.before);
    expect(written.map((e) => e.type)).toEqual(["tool", "tool", "status"]);
    expect(written.slice(0, 2).map((e) => e.data)).toEqual(closing("stopped: the attempt completed"));
    h.c.close();
  });
});
