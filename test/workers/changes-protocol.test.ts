// The server's side of a task's changes: the claim names the task's creator (the commit's
// co-author), a completed transition stores `changes` on the record and its timeline, only a
// pushed branch reaches the results listeners (after the commit), and every bad report is a 400
// that changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, makeToken, newOrg } from "../helpers/identity";
import { onTaskCompletedWithBranch, type CompletedWithBranch } from "../../src/modules/tasks/results";
import { FAST, ProtocolClient, addRepositoryRow, createTaskApi, makeWorker, orgWithProject, workerApi } from "./helpers";

let s: TestServer;
const heard: CompletedWithBranch[] = [];

beforeAll(async () => {
  // Offline only after 5 s: a loaded machine must not lose these attempts mid-test.
  s = await startTestServer({ workerTimeouts: { ...FAST, offlineMs: 5000 } });
  onTaskCompletedWithBranch((result, core) => {
    if (core === s.core) heard.push(result);
  });
});
afterAll(() => s.stop());

const SHA = "a".repeat(40);
const BASE = "b".repeat(40);

async function claimed(extra: Record<string, unknown> = {}, opts: { withRepository?: boolean } = {}) {
  const p = await orgWithProject(s, await newOrg(s));
  const repositoryId = opts.withRepository === false ? null : await addRepositoryRow(s, p.orgId, p.projectId, "https://git.example.test/team/app.git");
  const w = await makeWorker(s, p.orgId);
  const c = await ProtocolClient.connect(s, w.credential);
  const task = await createTaskApi(s, p, { title: "Change it", ...extra });
  const offer = await c.next("offer", (m) => m.taskId === task.id);
  const r = await workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
  expect(r.status).toBe(200);
  const api = workerApi(s, w.credential);
  const transition = (body: Record<string, unknown>) => api("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: r.body.leaseToken, ...body });
  const get = async () => (await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token })).body;
  return { p, c, task, claim: r.body, transition, get, repositoryId };
}

describe("the claim", () => {
  test("names the person who created the task, or the owner of the token that did", async () => {
    const t = await claimed();
    // this person has no display name: the address's local part stands in
    expect(t.claim.task.createdBy).toEqual({ name: t.p.session.email.split("@")[0], email: t.p.session.email });
    t.c.close();

    const p = await orgWithProject(s, await newOrg(s));
    const dev = await addMember(s, p.session, "member");
    const tok = await makeToken(s, dev);
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const created = await s.api("POST", `/orgs/${p.orgId}/tasks`, { token: tok, body: { projectId: p.projectId, title: "by token", prompt: "x" } });
    expect(created.status).toBe(201);
    const offer = await c.next("offer", (m) => m.taskId === created.body.id);
    const r = await workerApi(s, w.credential)("POST", `/worker/tasks/${created.body.id}/claim`, { offerId: offer.offerId });
    expect(r.body.task.createdBy).toEqual({ name: expect.any(String), email: dev.email });
    c.close();
  });
});

describe("reporting changes", () => {
  test("a pushed branch: stored, shown, on the timeline, and heard once after the commit", async () => {
    const t = await claimed();
    const changes = { files: 2, additions: 3, deletions: 1, branch: `ao/${t.task.id}`, commit: SHA, base: BASE, pushed: true };
    const r = await t.transition({ to: "completed", summary: "done", changes });
    expect(r.status).toBe(200);
    const record = await t.get();
    expect(record.changes).toEqual(changes);
    const events = (await s.api("GET", `/orgs/${t.p.orgId}/tasks/${t.task.id}/events`, { token: t.p.token })).body.items;
    expect(events.at(-1)).toMatchObject({ type: "status", data: { to: "completed", changes } });
    expect(heard.filter((h) => h.taskId === t.task.id)).toEqual([
      { orgId: t.p.orgId, projectId: t.p.projectId, taskId: t.task.id, repositoryId: t.repositoryId!, branch: `ao/${t.task.id}`, base: BASE, commit: SHA },
    ]);
    // the same report again is a no-op and is not heard twice
    expect((await t.transition({ to: "completed", changes })).status).toBe(200);
    expect(heard.filter((h) => h.taskId === t.task.id)).toHaveLength(1);
    // a restart clears the record's changes (the timeline keeps them)
    const restarted = await s.api("POST", `/orgs/${t.p.orgId}/tasks/${t.task.id}/actions`, { token: t.p.token, body: { action: "restart" } });
    expect(restarted.status).toBe(200);
    expect(restarted.body.changes).toBeNull();
    t.c.close();
  });

  test("changes not pushed, or nothing changed: stored, not heard", async () => {
    const t = await claimed();
    const changes = { files: 0, additions: 0, deletions: 0, branch: null, commit: null, base: BASE, pushed: false };
    expect((await t.transition({ to: "completed", changes })).status).toBe(200);
    expect((await t.get()).changes).toEqual(changes);
    const u = await claimed();
    expect((await u.transition({ to: "completed", changes: { files: 1, additions: 1, deletions: 0, branch: `ao/${u.task.id}`, commit: SHA, base: BASE, pushed: false } })).status).toBe(200);
    expect(heard.find((h) => h.taskId === t.task.id || h.taskId === u.task.id)).toBeUndefined();
    t.c.close();
    u.c.close();
  });

  test("a new task and one completed without changes show changes: null", async () => {
    const t = await claimed();
    expect((await t.get()).changes).toBeNull();
    expect((await t.transition({ to: "completed" })).status).toBe(200);
    expect((await t.get()).changes).toBeNull();
    t.c.close();
  });

  test.each([
    ["with to = failed", { to: "failed", error: "x" }, "changes"],
    ["another branch", { to: "completed", branch: "main" }, "changes.branch"],
    ["a branch spelled like an option", { to: "completed", branch: "--upload-pack=x" }, "changes.branch"],
    ["a commit that is not a sha", { to: "completed", commit: "HEAD" }, "changes.commit"],
    ["negative counts", { to: "completed", files: -1 }, "changes.files"],
    ["no pushed", { to: "completed", pushed: undefined }, "changes.pushed"],
  ])("refused, nothing changed: %s", async (_name, over: Record<string, unknown>, field) => {
    const t = await claimed();
    const { to, error, ...rest } = over as { to: string; error?: string };
    const changes: Record<string, unknown> = { files: 1, additions: 1, deletions: 0, branch: `ao/${t.task.id}`, commit: SHA, base: BASE, pushed: true, ...rest };
    for (const k of Object.keys(changes)) if (changes[k] === undefined) delete changes[k];
    const r = await t.transition({ to, ...(error ? { error } : {}), changes });
    expect(r.status).toBe(400);
    expect(JSON.stringify(r.body.error)).toContain(field);
    const record = await t.get();
    expect(record.status).toBe("running");
    expect(record.changes).toBeNull();
    expect(heard.find((h) => h.taskId === t.task.id)).toBeUndefined();
    t.c.close();
  });

  test("review and plan tasks report no changes", async () => {
    const review = await claimed({ kind: "review", review: { base: "main", head: "feature" } });
    const r = await review.transition({ to: "completed", changes: { files: 0, additions: 0, deletions: 0, branch: null, commit: null, base: null, pushed: false } });
    expect(r.status).toBe(400);
    expect(r.body.error.details).toEqual([{ field: "changes", message: "not with a review task" }]);
    expect((await review.get()).status).toBe("running");
    review.c.close();
  });
});
