// A review runs in a checkout of its project's repository (a worker fails one in a project without
// any). So a project's last repository cannot be taken away, by removing it, moving it to another
// project or splitting it off, while reviews of that project are unfinished: 409 conflict naming how
// many, and nothing changes. The count is read in the write that would make the change, so a review
// created at the same moment either counts or is refused for want of a repository.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeProject, makeTask, makeWorld, putInState, type World } from "../tasks/fixtures";
import { all } from "../../src/db/query";
import type { TaskStatus } from "../../src/db/schema";

let s: TestServer;
let w: World;
let n = 0;
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
});
afterAll(() => s.stop());

const api = (method: string, path: string, body?: unknown) => s.api(method, `/orgs/${w.owner.orgId}${path}`, { token: w.member.accessToken, body });
const fresh = (urls: string[] = []) => makeProject(s, w.owner, `reviews-${++n}`, { repositories: urls.map((url) => ({ url })) });
const review = (projectId: string) => makeTask(s, w.member, projectId, { kind: "review", review: { base: "main", head: "feature" } });
const reviewIn = async (projectId: string, status: TaskStatus) => {
  const t = await review(projectId);
  if (status !== "queued") await putInState(s, t.id, status);
  return t;
};

/** The three ways a repository leaves a project, each answered by the request's response. */
const WAYS = {
  remove: (from: { id: string }, repositoryId: string) => api("DELETE", `/projects/${from.id}/repositories/${repositoryId}`),
  "move to another project": async (from: { id: string }, repositoryId: string) => {
    const to = await fresh();
    return api("POST", `/projects/${to.id}/repositories`, { fromProjectId: from.id, repositoryId });
  },
  split: (from: { id: string }, repositoryId: string) => api("POST", `/projects/${from.id}/repositories/${repositoryId}/split`),
};

/** What the refusal must leave as it was: every project and repository of the org. */
const state = () =>
  s.core.store.read(
    all("SELECT p.id, p.name, p.updated_at, r.id AS repository, r.project_id, r.is_primary FROM projects p LEFT JOIN repositories r ON r.project_id = p.id WHERE p.org_id = ? ORDER BY p.id, r.id", w.owner.orgId),
  );

describe("the last repository of a project with unfinished reviews", () => {
  for (const [way, take] of Object.entries(WAYS)) {
    test(`${way}: 409 conflict naming how many unfinished reviews need it, nothing changes`, async () => {
      const p = await fresh(["https://github.com/acme/reviewed"]);
      for (const status of ["queued", "running", "paused", "needs_input", "needs_approval"] as const) await reviewIn(p.id, status);
      // Neither finished reviews nor other unfinished tasks count.
      for (const status of ["completed", "failed", "cancelled"] as const) await reviewIn(p.id, status);
      await makeTask(s, w.member, p.id);
      const before = await state();
      const r = await take(p, p.repositories[0].id);
      expect([r.status, r.body.error.code, r.body.error.details]).toEqual([409, "conflict", { unfinishedReviews: 5 }]);
      expect(r.body.error.message).toStartWith("5 unfinished reviews of this project need a repository to review");
      // The move's target was made before the request; nothing else is new or changed.
      const after = (await state()).filter((row: any) => !row.name.startsWith("reviews-") || before.some((b: any) => b.id === row.id));
      expect(after).toEqual(before);
    });
  }

  test("one unfinished review is named in the singular; once it is finished the repository goes", async () => {
    const p = await fresh(["https://github.com/acme/one-review"]);
    const t = await review(p.id);
    const refused = await WAYS.remove(p, p.repositories[0].id);
    expect([refused.status, refused.body.error.details]).toEqual([409, { unfinishedReviews: 1 }]);
    expect(refused.body.error.message).toStartWith("1 unfinished review of this project needs a repository to review");
    expect((await api("POST", `/tasks/${t.id}/actions`, { action: "cancel" })).status).toBe(200);
    const removed = await WAYS.remove(p, p.repositories[0].id);
    expect([removed.status, removed.body.project.repositories]).toEqual([200, []]);
  });

  test("any repository but the last may go, reviews or not; the last one of a project whose reviews are all finished, or whose org's unfinished reviews are another project's", async () => {
    const p = await fresh(["https://github.com/acme/a", "https://github.com/acme/b", "https://github.com/acme/c"]);
    await review(p.id);
    const [a, b, c] = p.repositories;
    expect((await WAYS.remove(p, a.id)).status).toBe(200);
    expect((await WAYS["move to another project"](p, b.id)).status).toBe(201);
    expect((await WAYS.split(p, c.id)).status).toBe(409);
    const done = await fresh(["https://github.com/acme/done"]);
    await reviewIn(done.id, "completed");
    await makeTask(s, w.member, done.id);
    expect((await WAYS.split(done, done.repositories[0].id)).status).toBe(201);
    const idle = await fresh(["https://github.com/acme/idle"]);
    expect((await WAYS.remove(idle, idle.repositories[0].id)).status).toBe(200);
  });
});

describe("at the same moment as a review is created", () => {
  test("either the review is made and the repository stays, or the repository goes and the review is refused: never both", async () => {
    const turns = () => new Promise<void>((r) => setImmediate(r));
    for (let i = 0; i < 16; i++) {
      const p = await fresh([`https://github.com/acme/race-${i}`]);
      const made = api("POST", "/tasks", { projectId: p.id, title: "review", prompt: "look", kind: "review", review: { base: "main", head: "feature" } });
      // The removal leaves 0 to 15 turns of the event loop later, so that each comes first in some rounds.
      for (let k = 0; k < i; k++) await turns();
      const removed = await WAYS.remove(p, p.repositories[0].id);
      const outcome = `${(await made).status}/${removed.status}`;
      expect(["201/409", "400/200"]).toContain(outcome);
      const left = await s.core.store.read(all<{ n: number }>("SELECT COUNT(*) AS n FROM repositories WHERE project_id = ?", p.id));
      expect([outcome, Number(left[0]!.n)]).toEqual([outcome, outcome === "201/409" ? 1 : 0]);
    }
  });
});
