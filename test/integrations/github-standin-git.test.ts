// The GitHub stand-in's repositories driven by GitHub's own clients (@octokit/app, @octokit/rest)
// and by real git: an organization repository created by an installation, a branch cloned and
// pushed with an installation token, the pull request opened, reviewed, commented on, closed
// and merged, and the signed pull_request webhook that says so.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Octokit } from "@octokit/rest";
import { verify } from "@octokit/webhooks-methods";
import type { GitHubStandIn } from "../helpers/github-standin";
import { run, tokenEnv } from "../helpers/git";
import { startStandInWithApp, type StandInWithApp } from "./github-standin-fixtures";

let gh: GitHubStandIn, GHOctokit: typeof Octokit, created: any, installationId: number, makeApp: StandInWithApp["makeApp"];
let work: string;
beforeAll(async () => {
  ({ gh, GHOctokit, created, installationId, makeApp } = await startStandInWithApp());
  work = mkdtempSync(join(tmpdir(), "gh-standin-test-"));
});
afterAll(async () => {
  await gh.close();
  rmSync(work, { recursive: true, force: true });
});

describe("repositories, pull requests, reviews and comments", () => {
  test("an installation creates an organization repository; duplicates are 422; /user/repos needs a user token", async () => {
    // a new App, with no tokens cached by @octokit/auth-app (an expireTokens() would void them)
    const fresh = makeApp(created.pem);
    const octokit = await fresh.getInstallationOctokit(installationId);
    const { data, status } = await octokit.request("POST /orgs/{org}/repos", { org: "acme", name: "made-by-ao", private: true, auto_init: true, description: "from a test" });
    expect(status).toBe(201);
    expect(data.full_name).toBe("acme/made-by-ao");
    expect(data.private).toBe(true);
    expect(data.default_branch).toBe("main");
    expect(gh.repository("acme", "made-by-ao")).toBeDefined();
    const dup = await octokit.request("POST /orgs/{org}/repos", { org: "acme", name: "made-by-ao" }).catch((e) => e);
    expect(dup.status).toBe(422);
    expect(dup.response.data.errors[0].message).toBe("name already exists on this account");
    const asInstallation = await octokit.request("POST /user/repos", { name: "mine" }).catch((e) => e);
    expect(asInstallation.status).toBe(403);
    const other = await octokit.request("POST /orgs/{org}/repos", { org: "acme-two", name: "x" }).catch((e) => e);
    expect(other.status).toBe(404);
  });

  test("real git clones with the token, pushes a branch, and a pull request is opened, reviewed, commented, closed", async () => {
    const token = gh.mintToken(installationId, { repositories: ["made-by-ao"] });
    const repo = (await new GHOctokit({ auth: token }).request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "made-by-ao" })).data;
    const dir = join(work, "clone");
    // no token: GitHub asks for credentials
    const anon = await run(work, ["git", "clone", "--quiet", repo.clone_url, join(work, "anon")]);
    expect(anon.code).not.toBe(0);
    const clone = await run(work, ["git", "clone", "--quiet", repo.clone_url, dir], tokenEnv(token));
    expect(clone.err).toBe("");
    expect(clone.code).toBe(0);
    writeFileSync(join(dir, "hello.txt"), "hi\n");
    await run(dir, ["git", "checkout", "-q", "-b", "ao/task-1"]);
    await run(dir, ["git", "add", "-A"]);
    await run(dir, ["git", "commit", "-q", "-m", "Say hi"]);
    const push = await run(dir, ["git", "push", "-q", "origin", "ao/task-1"], tokenEnv(token));
    expect(push.code).toBe(0);
    const bare = gh.repository("acme", "made-by-ao")!.dir;
    expect((await run(bare, ["git", "log", "--format=%s", "ao/task-1"])).out.split("\n")[0]).toBe("Say hi");

    const o = new GHOctokit({ auth: token });
    const pr = await o.rest.pulls.create({ owner: "acme", repo: "made-by-ao", title: "Say hi", head: "ao/task-1", base: "main", body: "from ao", draft: true });
    expect(pr.status).toBe(201);
    expect(pr.data.number).toBe(1);
    expect(pr.data.draft).toBe(true);
    expect(pr.data.head.ref).toBe("ao/task-1");
    expect(pr.data.head.sha).toBe((await run(bare, ["git", "rev-parse", "ao/task-1"])).out);
    expect(pr.data.html_url).toBe(`${gh.url}/acme/made-by-ao/pull/1`);
    expect(pr.data.user!.login).toBe("ao-test[bot]");
    const again = await o.rest.pulls.create({ owner: "acme", repo: "made-by-ao", title: "x", head: "ao/task-1", base: "main" }).catch((e) => e);
    expect(again.status).toBe(422);
    const noBranch = await o.rest.pulls.create({ owner: "acme", repo: "made-by-ao", title: "x", head: "nope", base: "main" }).catch((e) => e);
    expect(noBranch.status).toBe(422);

    const review = await o.rest.pulls.createReview({ owner: "acme", repo: "made-by-ao", pull_number: 1, body: "Looks fine", event: "COMMENT" });
    expect(review.data.state).toBe("COMMENTED");
    expect(review.data.html_url).toContain("/acme/made-by-ao/pull/1#pullrequestreview-");
    const comment = await o.rest.issues.createComment({ owner: "acme", repo: "made-by-ao", issue_number: 1, body: "a note" });
    expect(comment.status).toBe(201);
    expect(gh.repository("acme", "made-by-ao")!.reviews[0]!.body).toBe("Looks fine");
    expect(gh.repository("acme", "made-by-ao")!.comments[0]!.body).toBe("a note");
    const closed = await o.rest.pulls.update({ owner: "acme", repo: "made-by-ao", pull_number: 1, state: "closed" });
    expect(closed.data.state).toBe("closed");
    expect((await o.rest.pulls.get({ owner: "acme", repo: "made-by-ao", pull_number: 1 })).data.merged).toBe(false);

    // expired token: git is told to authenticate again
    gh.expireTokens();
    writeFileSync(join(dir, "more.txt"), "more\n");
    await run(dir, ["git", "add", "-A"]);
    await run(dir, ["git", "commit", "-q", "-m", "More"]);
    const late = await run(dir, ["git", "push", "-q", "origin", "ao/task-1"], tokenEnv(token));
    expect(late.code).not.toBe(0);
    expect(late.err).toMatch(/Authentication failed|could not read Username/);
    // a read-only token cannot push
    const readOnly = gh.mintToken(installationId, { permissions: { contents: "read", metadata: "read" } });
    const denied = await run(dir, ["git", "push", "-q", "origin", "ao/task-1"], tokenEnv(readOnly));
    expect(denied.code).not.toBe(0);
    expect(denied.err).toContain("403");
    expect((await run(bare, ["git", "log", "-1", "--format=%s", "ao/task-1"])).out).toBe("Say hi");
  });

  test("merge and a signed pull_request closed webhook built from the recorded example", async () => {
    const token = gh.mintToken(installationId);
    const o = new GHOctokit({ auth: token });
    const pr = await o.rest.pulls.update({ owner: "acme", repo: "made-by-ao", pull_number: 1, state: "open" });
    expect(pr.data.state).toBe("open");
    gh.merge("acme", "made-by-ao", 1);
    const got = (await o.rest.pulls.get({ owner: "acme", repo: "made-by-ao", pull_number: 1 })).data;
    expect(got.merged).toBe(true);
    expect(got.state).toBe("closed");

    const received: { headers: Headers; body: string }[] = [];
    const hook = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        received.push({ headers: req.headers, body: await req.text() });
        return new Response(null, { status: 202 });
      },
    });
    try {
      const payload = gh.payloads.pullRequest("acme", "made-by-ao", 1, "closed");
      const d = await gh.deliver(`http://127.0.0.1:${hook.port}/hook`, "pull_request", payload, { app: "ao-test" });
      expect(d.status).toBe(202);
      const r = received[0]!;
      expect(r.headers.get("x-github-event")).toBe("pull_request");
      expect(r.headers.get("x-github-hook-installation-target-id")).toBe(String(created.id));
      expect(await verify(created.webhook_secret, r.body, r.headers.get("x-hub-signature-256")!)).toBe(true);
      expect(await verify("another secret", r.body, r.headers.get("x-hub-signature-256")!)).toBe(false);
      const body = JSON.parse(r.body);
      expect(body.action).toBe("closed");
      expect(body.pull_request.merged).toBe(true);
      expect(body.pull_request.head.ref).toBe("ao/task-1");
      expect(body.installation.id).toBe(installationId);
      expect(body.repository.full_name).toBe("acme/made-by-ao");

      const inst = gh.payloads.installation(installationId, "created");
      expect(inst.installation.account.login).toBe("acme");
      expect(inst.repositories.length).toBeGreaterThan(100);
    } finally {
      await hook.stop(true);
    }
  });
});
