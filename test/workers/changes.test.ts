// The worker's side of a task's result, run directly against the GitHub stand-in's git over HTTP
// with a token the stand-in issued: clone with the token in the environment only, commit what
// the agent left on ao/<taskId>, the diff and its counts, push, and a refused push.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ClaimResult, RepositoryInfo } from "../../src/protocol/requests";
import { prepareCheckout } from "../../src/worker/checkout";
import { commitTaskChanges, commitMessage, DIFF_ARTIFACT } from "../../src/worker/changes";
import { authEnv, git } from "../../src/worker/git";
import { cloneIntoWorkspace } from "../../src/worker/repos";
import { startGitHubStandIn, type GitHubStandIn } from "../helpers/github-standin";

let gh: GitHubStandIn;
let tmp: string;
let installationId: number;
let n = 0;
// every argv git was started with, through a shim first on PATH
let argvLog: string;
const savedPath = process.env.PATH;

beforeAll(async () => {
  gh = await startGitHubStandIn();
  tmp = mkdtempSync(join(tmpdir(), "ao-changes-"));
  const shims = join(tmp, "bin");
  mkdirSync(shims);
  argvLog = join(tmp, "git-argv.log");
  const realGit = Bun.which("git")!;
  writeFileSync(join(shims, "git"), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${argvLog}'\nexec '${realGit}' "$@"\n`);
  chmodSync(join(shims, "git"), 0o755);
  process.env.PATH = `${shims}:${savedPath}`;
  gh.createApp({ name: "ao", default_permissions: { contents: "write", pull_requests: "write" } });
  gh.createRepository("acme", "widget", { private: true, type: "Organization", files: { "README.md": "# widget\n", "src/a.txt": "one\ntwo\nthree\n", ".gitignore": "dist/\n" } });
  gh.createRepository("acme", "empty", { private: true, type: "Organization" });
  installationId = (await gh.install("ao", "acme", { repositories: ["widget", "empty"], webhook: false })).installation.record.id;
});

afterAll(async () => {
  process.env.PATH = savedPath;
  await gh.close();
  rmSync(tmp, { recursive: true, force: true });
});

function claimFor(repo: RepositoryInfo, kind: "task" | "review" = "task"): ClaimResult {
  const id = `tsk_test${++n}`;
  return {
    attempt: 1,
    leaseToken: "l",
    runMode: "fresh",
    task: { id, projectId: "prj_1", title: "Make two loud", prompt: "p", kind, priority: "MEDIUM", review: null, createdBy: { name: "Ada Lovelace", email: "ada@example.test" } },
    project: { id: "prj_1", name: "p", knowledge: "", policy: {}, repositories: [repo] },
  };
}

const widget = (token: string, push = true): RepositoryInfo => ({ id: "rep_1", url: `${gh.url}/acme/widget.git`, name: "widget", branch: "main", primary: true, token, push });

async function checkout(claim: ClaimResult) {
  const runDir = join(tmp, "runs", `${claim.task.id}-a1`);
  const c = await prepareCheckout(claim, runDir, join(tmp, "runs"));
  const artifactsDir = join(runDir, "artifacts");
  mkdirSync(artifactsDir, { recursive: true });
  return { ...c, artifactsDir };
}

describe("a task's changes on ao/<taskId>", () => {
  test("clone with the token, commit the agent's edits, write changes.diff, push; the token is in no file, argv or remote", async () => {
    const token = gh.mintToken(installationId, { repositories: ["widget"] });
    const claim = claimFor(widget(token));
    const c = await checkout(claim);
    // what the agent did: an edit, a new file, an ignored build output
    writeFileSync(join(c.workdir, "src/a.txt"), "one\nTWO\nthree\n");
    writeFileSync(join(c.workdir, "new.txt"), "hello\nworld\n");
    mkdirSync(join(c.workdir, "dist"));
    writeFileSync(join(c.workdir, "dist/out.js"), "built\n");
    const warnings: string[] = [];
    const changes = await commitTaskChanges({ workdir: c.workdir, artifactsDir: c.artifactsDir, task: claim.task, repository: claim.project.repositories[0]!, agentName: "claude", warn: (m) => warnings.push(m) });
    const bare = gh.repository("acme", "widget")!.dir;
    const main = (await git(["rev-parse", "main"], bare)).stdout;
    expect(warnings).toEqual([]);
    expect(changes).toEqual({ files: 2, additions: 3, deletions: 1, branch: `ao/${claim.task.id}`, commit: expect.stringMatching(/^[0-9a-f]{40}$/), base: main, pushed: true });
    // the push really landed, authored by the agent with the person as co-author
    expect((await git(["rev-parse", `ao/${claim.task.id}`], bare)).stdout).toBe(changes.commit!);
    const log = (await git(["log", "-1", "--format=%an <%ae>%n%cn%n%B", `ao/${claim.task.id}`], bare)).stdout;
    expect(log).toBe(`Claude Code via ao <agent@ao.invalid>\nClaude Code via ao\nMake two loud\n\nao task ${claim.task.id}\n\nCo-authored-by: Ada Lovelace <ada@example.test>`);
    expect((await git(["show", "--name-only", "--format=", changes.commit!], bare)).stdout.split("\n").sort()).toEqual(["new.txt", "src/a.txt"]);
    const diff = readFileSync(join(c.artifactsDir, DIFF_ARTIFACT), "utf8");
    expect(diff).toContain("+TWO");
    expect(diff).toContain("-two");
    expect(diff).toContain("+++ b/new.txt");
    expect(diff).not.toContain("dist/out.js");
    // nowhere on disk or in argv
    expect(readFileSync(join(c.workdir, ".git/config"), "utf8")).not.toContain(token);
    expect((await git(["remote", "get-url", "origin"], c.workdir)).stdout).toBe(`${gh.url}/acme/widget.git`);
    const argv = readFileSync(argvLog, "utf8");
    expect(argv).toContain("push --quiet --force -- origin");
    expect(argv).toContain("clone --quiet --branch main");
    expect(argv).not.toContain(token);
    expect(argv).not.toContain(Buffer.from(`x-access-token:${token}`).toString("base64"));
  });

  test("a refused push (expired token: 401) completes without the branch and says why, without the token", async () => {
    const token = gh.mintToken(installationId, { repositories: ["widget"] });
    const claim = claimFor(widget(token));
    const c = await checkout(claim);
    writeFileSync(join(c.workdir, "late.txt"), "late\n");
    gh.expireTokens();
    const warnings: string[] = [];
    const changes = await commitTaskChanges({ workdir: c.workdir, artifactsDir: c.artifactsDir, task: claim.task, repository: claim.project.repositories[0]!, agentName: "exec", warn: (m) => warnings.push(m) });
    expect(changes).toMatchObject({ files: 1, additions: 1, deletions: 0, branch: `ao/${claim.task.id}`, pushed: false });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toStartWith(`could not push ao/${claim.task.id} to origin: `);
    expect(warnings[0]).not.toContain(token);
    expect((await git(["rev-parse", "--verify", "--quiet", `ao/${claim.task.id}`], gh.repository("acme", "widget")!.dir)).code).not.toBe(0);
    // the diff is there all the same
    expect(readFileSync(join(c.artifactsDir, DIFF_ARTIFACT), "utf8")).toContain("+late");
  });

  test("without push the branch stays local; nothing changed gives zero counts and no branch", async () => {
    const token = gh.mintToken(installationId, { repositories: ["widget"] });
    const claim = claimFor(widget(token, false));
    const c = await checkout(claim);
    const base = (await git(["rev-parse", "HEAD"], c.workdir)).stdout;
    const input = { workdir: c.workdir, artifactsDir: c.artifactsDir, task: claim.task, repository: claim.project.repositories[0]!, agentName: "exec", warn: () => {} };
    // only an ignored file: nothing to commit
    mkdirSync(join(c.workdir, "dist"));
    writeFileSync(join(c.workdir, "dist/x"), "x\n");
    expect(await commitTaskChanges(input)).toEqual({ files: 0, additions: 0, deletions: 0, branch: null, commit: null, base, pushed: false });
    expect(existsSync(join(c.artifactsDir, DIFF_ARTIFACT))).toBe(false);
    writeFileSync(join(c.workdir, "README.md"), "");
    const changes = await commitTaskChanges(input);
    expect(changes).toMatchObject({ files: 1, additions: 0, deletions: 1, pushed: false, base });
    expect((await git(["log", "-1", "--format=%an", `ao/${claim.task.id}`], c.workdir)).stdout).toBe("ao agent");
    expect((await git(["rev-parse", "--verify", "--quiet", `ao/${claim.task.id}`], gh.repository("acme", "widget")!.dir)).code).not.toBe(0);
  });

  test("commits the agent made itself count; an empty repository is measured from nothing", async () => {
    const token = gh.mintToken(installationId);
    const claim = claimFor(widget(token, false));
    const c = await checkout(claim);
    writeFileSync(join(c.workdir, "mine.txt"), "a\nb\n");
    await git(["add", "."], c.workdir);
    await git(["-c", "user.name=Agent", "-c", "user.email=a@b.invalid", "commit", "-qm", "agent's own commit"], c.workdir);
    const changes = await commitTaskChanges({ workdir: c.workdir, artifactsDir: c.artifactsDir, task: claim.task, repository: claim.project.repositories[0]!, agentName: "exec", warn: () => {} });
    expect(changes).toMatchObject({ files: 1, additions: 2, deletions: 0, branch: `ao/${claim.task.id}` });
    expect((await git(["log", "-1", "--format=%s", "HEAD"], c.workdir)).stdout).toBe("agent's own commit");

    const empty: RepositoryInfo = { id: "rep_2", url: `${gh.url}/acme/empty.git`, name: "empty", branch: "main", primary: true, token, push: true };
    const claim2 = claimFor(empty);
    const c2 = await checkout(claim2);
    writeFileSync(join(c2.workdir, "first.txt"), "first\n");
    const warnings: string[] = [];
    const first = await commitTaskChanges({ workdir: c2.workdir, artifactsDir: c2.artifactsDir, task: claim2.task, repository: empty, agentName: "exec", warn: (m) => warnings.push(m) });
    expect(warnings).toEqual([]);
    expect(first).toMatchObject({ files: 1, additions: 1, deletions: 0, base: null, pushed: true });
    expect((await git(["rev-parse", `ao/${claim2.task.id}`], gh.repository("acme", "empty")!.dir)).stdout).toBe(first.commit!);
  });

  test("a private repository without its token cannot be cloned; a workspace clone uses the token", async () => {
    const claim = claimFor({ id: "rep_1", url: `${gh.url}/acme/widget.git`, name: "widget", branch: "main", primary: true });
    await expect(checkout(claim)).rejects.toThrow(/git clone failed/);
    const token = gh.mintToken(installationId, { repositories: ["widget"] });
    const workspace = join(tmp, "workspace");
    const path = await cloneIntoWorkspace(workspace, { url: `${gh.url}/acme/widget.git`, branch: "main", name: "widget", repositoryId: "rep_1", token });
    expect(existsSync(join(path, "src/a.txt"))).toBe(true);
    // and fetches again with it
    expect(await cloneIntoWorkspace(workspace, { url: `${gh.url}/acme/widget.git`, branch: "main", name: "widget", repositoryId: "rep_1", token })).toBe(path);
    expect(readFileSync(join(path, ".git/config"), "utf8")).not.toContain(token);
  });
});

describe("pieces", () => {
  test("the token header is scoped to the repository's origin and appended after the environment's own", () => {
    const env = authEnv({ url: "https://github.example/acme/widget.git", token: "ghs_x" }, { GIT_CONFIG_COUNT: "2" });
    expect(env).toEqual({
      GIT_CONFIG_COUNT: "3",
      GIT_CONFIG_KEY_2: "http.https://github.example/.extraHeader",
      GIT_CONFIG_VALUE_2: `Authorization: Basic ${Buffer.from("x-access-token:ghs_x").toString("base64")}`,
    });
    expect(authEnv({ url: "git@github.com:acme/widget.git", token: "ghs_x" }, {})).toEqual({});
    expect(authEnv({ url: "file:///srv/widget.git", token: "ghs_x" }, {})).toEqual({});
    expect(authEnv(null, {})).toEqual({});
  });

  test("the commit message: title, task id, co-author when known, no header injection", () => {
    expect(commitMessage({ id: "tsk_1", title: "Fix it", createdBy: null })).toEqual(["Fix it", "ao task tsk_1"]);
    expect(commitMessage({ id: "tsk_1", title: "Fix\nit", createdBy: { name: "Eve <x>\nSigned-off-by: y", email: "eve@example.test" } })).toEqual([
      "Fix it",
      "ao task tsk_1",
      "Co-authored-by: Eve x Signed-off-by: y <eve@example.test>",
    ]);
  });
});
