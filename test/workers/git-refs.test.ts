// Refs from task input reach a worker's git command line: the server accepts only names git would
// (never one starting with "-"), and the worker puts them after "--" all the same.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { prepareCheckout } from "../../src/worker/checkout";
import { gitOk } from "../../src/worker/git";
import type { ClaimResult } from "../../src/protocol/requests";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { get } from "../../src/db/query";

describe("the server refuses refs git would not take", () => {
  let s: TestServer;
  let owner: Session;
  let projectId: string;
  /** With a repository: a review needs one. */
  let reviewedId: string;
  beforeAll(async () => {
    s = await startTestServer();
    owner = await createAdmin(s);
    projectId = (await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: "refs" } })).body.id;
    const reviewed = await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: "reviewed", repositories: [{ url: "https://example.com/a/reviewed.git" }] } });
    reviewedId = reviewed.body.id;
  });
  afterAll(() => s.stop());

  const review = (base: string, head: string) => ({ projectId: reviewedId, title: "r", prompt: "p", kind: "review", review: { base, head } });
  const count = async () => (await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM tasks")))!.n;

  test.each([
    ["-x", "head"],
    ["--upload-pack=touch /tmp/x", "head"],
    ["a b", "head"],
    ["a..b", "head"],
    ["a~1", "head"],
    ["a^", "head"],
    ["a:b", "head"],
    ["a@{1}", "head"],
    ["/a", "head"],
    ["a/", "head"],
    ["a//b", "head"],
    ["a.", "head"],
    ["a/.b", "head"],
    ["a.lock", "head"],
    ["@", "head"],
    ["a\\b", "head"],
    ["a*", "head"],
    ["-main", "base"],
  ])("%s as review %s: 400 naming the field, no task", async (ref, field) => {
    const before = await count();
    const body = field === "head" ? review("main", ref) : review(ref, "feature/x");
    const r = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: owner.accessToken, body });
    expect(r.status).toBe(400);
    expect(r.body.error.details).toEqual([{ field: `review.${field}`, message: expect.stringContaining('not starting with "-"') }]);
    expect(await count()).toBe(before);
  });

  test.each(["main", "feature/x-1", "v1.2.3", "release/2026.11", "0123456789abcdef0123456789abcdef01234567", "HEAD", "user@host"])("%s is accepted", async (ref) => {
    const r = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: owner.accessToken, body: review("main", ref) });
    expect(r.status).toBe(201);
  });

  test("a repository branch starting with - is refused", async () => {
    const r = await s.api("POST", `/orgs/${owner.orgId}/projects/${projectId}/repositories`, { token: owner.accessToken, body: { url: "https://example.com/a/b.git", branch: "-b" } });
    expect(r.status).toBe(400);
    expect(await s.core.store.read(get("SELECT count(*) AS n FROM repositories WHERE project_id = ?", projectId))).toEqual({ n: 0 });
  });
});

describe("the worker hands refs to git after --", () => {
  let dir: string;
  let origin: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "ao-refs-"));
    origin = join(dir, "origin");
    await gitOk(["init", "--quiet", "-b", "main", origin], dir);
    const commit = (msg: string) => gitOk(["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "--allow-empty", "-m", msg], origin);
    await commit("base");
    await gitOk(["checkout", "--quiet", "-b", "feature"], origin);
    await commit("head");
    await gitOk(["checkout", "--quiet", "main"], origin);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const claim = (base: string, head: string): ClaimResult => ({
    attempt: 1,
    leaseToken: "l",
    runMode: "fresh",
    task: { id: `tsk_${crypto.randomUUID()}`, projectId: "prj_1", title: "r", prompt: "p", kind: "review", priority: "MEDIUM", review: { base, head }, createdBy: null },
    project: { id: "prj_1", name: "p", knowledge: "", policy: {}, repositories: [{ id: "rep_1", url: origin, name: "origin", branch: "main", primary: true }] },
  });

  test("a head spelled like an option is a ref that does not exist, not an option that runs a command", async () => {
    const marker = join(dir, "ran");
    const runDir = join(dir, "run-evil");
    await expect(prepareCheckout(claim("main", `--upload-pack=touch ${marker}`), runDir, join(dir, "runs"))).rejects.toThrow(/git fetch failed/);
    expect(existsSync(marker)).toBe(false);
  });

  test("ordinary refs still check out: head detached, base and head named", async () => {
    const runDir = join(dir, "run-ok");
    const out = await prepareCheckout(claim("main", "feature"), runDir, join(dir, "runs"));
    const head = await gitOk(["rev-parse", "HEAD"], out.workdir);
    expect(head).toBe(await gitOk(["rev-parse", "feature"], origin));
    expect(await gitOk(["rev-parse", "refs/ao/base"], out.workdir)).toBe(await gitOk(["rev-parse", "main"], origin));
    expect(out.env).toMatchObject({ AO_REVIEW_HEAD: "feature", AO_REVIEW_HEAD_SHA: head });
  });

  test("a review whose project has no repository fails saying so, instead of running in an empty directory with nothing to review", async () => {
    const bare = { ...claim("main", "feature"), project: { ...claim("main", "feature").project, repositories: [] } };
    const runDir = join(dir, "run-bare");
    await expect(prepareCheckout(bare, runDir, join(dir, "runs"))).rejects.toThrow(
      "a review task needs a repository to review, and the project has none: add one to the project, then restart the task",
    );
    expect(existsSync(join(runDir, "work"))).toBe(false);
  });
});
