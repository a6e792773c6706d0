// A task's changes with a real `ao worker` (exec agent): on a local repository they become
// changes.diff and the task's `changes` (no push: no app); on a repository of the GitHub
// stand-in, with the token and push the code-hosting app puts in the claim (a pass-through plays
// that part here), the worker clones with the token and pushes ao/<taskId>. Review and plan tasks,
// a project with no repository and a failed agent record no changes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { saveCredential } from "../../src/worker/credential";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { startGitHubStandIn, type GitHubStandIn } from "../helpers/github-standin";
import { addRepositoryRow, makeWorker, orgWithProject, until } from "../workers/helpers";
import { onTaskCompletedWithBranch, type CompletedWithBranch } from "../../src/modules/tasks/results";
import { startClaimProxy, type ClaimProxy } from "./claim-proxy";
import { bareFrom, gitRepo, sh, WorkerProcess } from "./worker-helpers";

let s: TestServer;
let gh: GitHubStandIn;
let proxy: ClaimProxy;
let tmp: string;
let owner: Session;
let worker: WorkerProcess;
let local: Awaited<ReturnType<typeof orgWithProject>>;
let bare: string;
let hosted: Awaited<ReturnType<typeof orgWithProject>>;
let bare2: string;
let empty: Awaited<ReturnType<typeof orgWithProject>>;
let installationId: number;
/** The token the pass-through puts in claims of the stand-in's repository. */
let claimToken = "";
const tokensHandedOut: string[] = [];
const completed: CompletedWithBranch[] = [];

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-worker-changes-"));
  // The task's prompt is the agent's shell script.
  writeFileSync(join(tmp, "agent.sh"), 'eval "$AO_TASK_PROMPT"\n');
  s = await startTestServer({ workerTimeouts: { offerMs: 2000, offlineMs: 3000, heartbeatMs: 300 } });
  owner = await createAdmin(s);
  onTaskCompletedWithBranch((result, core) => {
    if (core === s.core) completed.push(result);
  });

  local = await orgWithProject(s, owner);
  const source = gitRepo(join(tmp, "src"), { "README.md": "# demo\n", "src/a.txt": "one\ntwo\nthree\n", ".gitignore": "dist/\n" });
  bare = bareFrom(source, join(tmp, "repo.git"));
  await addRepositoryRow(s, local.orgId, local.projectId, `file://${bare}`);

  gh = await startGitHubStandIn();
  gh.createApp({ name: "ao", default_permissions: { contents: "write", pull_requests: "write", metadata: "read" } });
  gh.createRepository("acme", "widget", { type: "Organization", files: { "README.md": "# widget\n" } });
  installationId = (await gh.install("ao", "acme", { repositories: ["widget"], webhook: false })).installation.record.id;
  bare2 = gh.repository("acme", "widget")!.dir;
  hosted = await orgWithProject(s, owner);
  await addRepositoryRow(s, hosted.orgId, hosted.projectId, `${gh.url}/acme/widget.git`, { name: "widget" });

  empty = await orgWithProject(s, owner);

  proxy = startClaimProxy(s.url, (claim) => {
    for (const r of claim.project.repositories)
      if (r.url.startsWith(gh.url)) {
        r.token = claimToken;
        r.push = true;
        tokensHandedOut.push(claimToken);
      }
    return claim;
  });
  const dataDir = join(tmp, "worker");
  const w = await makeWorker(s, owner.orgId);
  saveCredential(dataDir, { server: proxy.url, workerId: w.workerId, orgId: owner.orgId, credential: w.credential });
  worker = new WorkerProcess(["--server", proxy.url, "--data-dir", dataDir, "--kill-grace-ms", "500", "--exec", `sh ${join(tmp, "agent.sh")}`]);
  await worker.waitFor(/connected as/);
});

afterAll(async () => {
  await worker?.stop();
  await proxy?.stop();
  await gh?.close();
  await s.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const api = (method: string, path: string, body?: unknown) => s.api(method, `/orgs/${owner.orgId}${path}`, { token: owner.accessToken, body });

async function run(projectId: string, prompt: string, extra: Record<string, unknown> = {}) {
  const created = await api("POST", "/tasks", { projectId, title: "Make two loud", prompt, ...extra });
  expect(created.status).toBe(201);
  return until(async () => {
    const t = (await api("GET", `/tasks/${created.body.id}`)).body;
    return (t.status === "completed" || t.status === "failed") && t;
  }, 30_000, 50);
}

async function artifact(taskId: string, name: string) {
  const r = await fetch(`${s.url}/api/v1/orgs/${owner.orgId}/tasks/${taskId}/artifacts/${name}`, { headers: { authorization: `Bearer ${owner.accessToken}` } });
  return { status: r.status, text: await r.text() };
}

async function events(taskId: string) {
  return (await api("GET", `/tasks/${taskId}/events?limit=200`)).body.items as { type: string; data: any }[];
}

describe("a local repository: the diff and its counts, no push", () => {
  test("an edit and a new file are committed and measured; ignored files are left out", async () => {
    const t = await run(local.projectId, "sed -i s/two/TWO/ src/a.txt; printf 'hello\\nworld\\n' > new.txt; mkdir dist; echo built > dist/out.js");
    expect(t.status).toBe("completed");
    const main = sh(bare, "git", "rev-parse", "main");
    expect(t.changes).toEqual({ files: 2, additions: 3, deletions: 1, branch: `ao/${t.id}`, commit: expect.stringMatching(/^[0-9a-f]{40}$/), base: main, pushed: false });
    expect(t.artifacts.map((a: any) => a.name)).toContain("changes.diff");
    const diff = await artifact(t.id, "changes.diff");
    expect(diff.status).toBe(200);
    expect(diff.text).toContain("+TWO");
    expect(diff.text).toContain("+++ b/new.txt");
    expect(diff.text).not.toContain("dist/out.js");
    // the timeline's completion carries them; the list shows them; nothing was pushed
    const done = (await events(t.id)).find((e) => e.type === "status" && e.data.to === "completed")!;
    expect(done.data.changes).toEqual(t.changes);
    const listed = (await api("GET", `/tasks?projectId=${local.projectId}`)).body.items.find((x: any) => x.id === t.id);
    expect(listed.changes).toEqual(t.changes);
    expect(Bun.spawnSync(["git", "rev-parse", "--verify", "--quiet", `ao/${t.id}`], { cwd: bare }).exitCode).not.toBe(0);
    expect(completed.find((c) => c.taskId === t.id)).toBeUndefined();
  });

  test("a task that changes nothing: zero counts, no branch, no diff", async () => {
    const t = await run(local.projectId, "mkdir -p dist; echo x > dist/ignored");
    expect(t.status).toBe("completed");
    expect(t.changes).toEqual({ files: 0, additions: 0, deletions: 0, branch: null, commit: null, base: sh(bare, "git", "rev-parse", "main"), pushed: false });
    expect(t.artifacts.map((a: any) => a.name)).not.toContain("changes.diff");
  });

  test("review and plan tasks, a project without a repository and a failed agent record no changes", async () => {
    const review = await run(local.projectId, "echo x > review-notes.txt", { kind: "review", review: { base: "main", head: "main" } });
    expect(review.status).toBe("completed");
    expect(review.changes).toBeNull();
    const plan = await run(local.projectId, `echo x > notes.txt; echo '{"tasks":[{"title":"a","prompt":"b"}]}' > "$AO_ARTIFACTS_DIR/plan.json"`, { kind: "plan" });
    expect(plan.status).toBe("completed");
    expect(plan.changes).toBeNull();
    const none = await run(empty.projectId, "echo x > file.txt");
    expect(none.status).toBe("completed");
    expect(none.changes).toBeNull();
    const failed = await run(local.projectId, "echo x > file.txt; exit 3");
    expect(failed.status).toBe("failed");
    expect(failed.changes).toBeNull();
    expect(failed.artifacts.map((a: any) => a.name)).not.toContain("changes.diff");
  });
});

describe("a repository at the GitHub stand-in with the claim's token", () => {
  test("the worker clones with the token and pushes ao/<taskId>; the token is nowhere to be found", async () => {
    claimToken = gh.mintToken(installationId, { repositories: ["widget"] });
    // the agent leaves what it can see: the checkout's git config and its own environment
    const t = await run(hosted.projectId, `echo change >> README.md; cp .git/config "$AO_ARTIFACTS_DIR/gitconfig.txt"; env > "$AO_ARTIFACTS_DIR/env.txt"`);
    expect(t.status).toBe("completed");
    expect(t.changes).toMatchObject({ files: 1, additions: 1, deletions: 0, branch: `ao/${t.id}`, pushed: true });
    expect(sh(bare2, "git", "rev-parse", `ao/${t.id}`)).toBe(t.changes.commit);
    const log = sh(bare2, "git", "log", "-1", "--format=%an <%ae>%n%B", `ao/${t.id}`);
    expect(log).toBe(`ao agent <agent@ao.invalid>\nMake two loud\n\nao task ${t.id}\n\nCo-authored-by: Admin <${owner.email}>`);
    // the listeners heard of the pushed branch, after the commit
    expect(completed.find((c) => c.taskId === t.id)).toMatchObject({ orgId: owner.orgId, projectId: hosted.projectId, branch: `ao/${t.id}`, commit: t.changes.commit, base: t.changes.base });

    const gitconfig = await artifact(t.id, "gitconfig.txt");
    expect(gitconfig.text).toContain(`${gh.url}/acme/widget.git`);
    const basic = Buffer.from(`x-access-token:${claimToken}`).toString("base64");
    for (const text of [gitconfig.text, (await artifact(t.id, "env.txt")).text, JSON.stringify(await events(t.id)), worker.output]) {
      expect(text).not.toContain(claimToken);
      expect(text).not.toContain(basic);
    }
    expect(tokensHandedOut).toContain(claimToken);
  });

  test("a push the stand-in refuses: completed, pushed false, an error event saying why", async () => {
    // may clone, may not write
    claimToken = gh.mintToken(installationId, { repositories: ["widget"], permissions: { contents: "read", metadata: "read" } });
    const t = await run(hosted.projectId, "echo more >> README.md");
    expect(t.status).toBe("completed");
    expect(t.changes).toMatchObject({ files: 1, branch: `ao/${t.id}`, pushed: false });
    const error = (await events(t.id)).find((e) => e.type === "error")!;
    expect(error.data.message).toStartWith(`could not push ao/${t.id} to origin: `);
    expect(error.data.message).toContain("403");
    expect(error.data.message).not.toContain(claimToken);
    expect(Bun.spawnSync(["git", "rev-parse", "--verify", "--quiet", `ao/${t.id}`], { cwd: bare2 }).exitCode).not.toBe(0);
    expect(completed.find((c) => c.taskId === t.id)).toBeUndefined();
    expect((await artifact(t.id, "changes.diff")).text).toContain("+more");
  });
});
