// Clone, discovered repositories and AI readiness with a real `ao worker` on real git
// repositories made by the test.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, newOrg, type Session } from "../helpers/identity";
import { addRepositoryRow, createTaskApi, orgWithProject, until, workerApi } from "../workers/helpers";
import { bareFrom, gitRepo, preparedWorker, sh, startWorker, type WorkerProcess } from "./worker-helpers";

let s: TestServer;
let tmp: string;
let org: Session;
let worker: WorkerProcess;
let workerId: string;
let credential: string;
let workspace: string;

const README = "# Alpha\n\nAlpha is a small service used to test the readiness checks of ao. Run `make test` to test it; `make setup` prepares it.\n";

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-worker-projects-"));
  s = await startTestServer({ workerTimeouts: { offerMs: 2000, offlineMs: 3000, heartbeatMs: 300 } });
  org = await newOrg(s);
  workspace = join(tmp, "workspace");
  gitRepo(
    join(workspace, "alpha"),
    {
      "README.md": README,
      "AGENTS.md": "Run make test before you finish.\n",
      Makefile: "test:\n\t@echo all tests passed\nsetup:\n\t@echo nothing to install\n",
      ".gitignore": "dist/\n",
      ".github/workflows/ci.yml": "on: push\njobs: {}\n",
      ".editorconfig": "root = true\n",
    },
    { remote: "https://git.example.test/team/alpha.git" },
  );
  gitRepo(join(workspace, "beta"), { "README.md": "beta\n" }, { remote: "git@git.example.test:team/beta.git" });
  gitRepo(join(workspace, "nested", "delta"), { "README.md": "d\n", Makefile: "test:\n\texit 1\n", "package.json": '{"name":"delta"}\n' }, { remote: "ssh://git@git.example.test/team/delta.git" });
  gitRepo(join(workspace, "local-only"), { "x.txt": "no remote\n" });
  const dataDir = join(tmp, "data");
  const w = await preparedWorker(s, org.orgId, dataDir);
  workerId = w.workerId;
  credential = w.credential;
  worker = startWorker(s, dataDir, ["--exec", "true", "--workspace", workspace]);
  await worker.waitFor(/connected as/);
});

afterAll(async () => {
  await worker?.stop();
  await s.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const api = (method: string, path: string, body?: unknown, token = org.accessToken) => s.api(method, `/orgs/${org.orgId}${path}`, { token, body });

describe("discovered repositories", () => {
  test("the worker reports what is in its workspace; dismiss hides for good; accept makes projects", async () => {
    const list = await until(async () => {
      const r = await api("GET", "/discovered");
      return r.body.items.length === 3 && r.body;
    });
    const byName = Object.fromEntries(list.items.map((d: any) => [d.name, d]));
    expect(Object.keys(byName).sort()).toEqual(["alpha", "beta", "delta"]);
    expect(byName.alpha).toMatchObject({ url: "https://git.example.test/team/alpha.git", branch: "main", workers: [{ workerId, path: join(workspace, "alpha") }] });

    expect((await api("POST", "/discovered/dismiss", { ids: [byName.beta.id] })).status).toBe(200);
    expect((await api("POST", "/discovered/dismiss", { ids: [byName.beta.id] })).status).toBe(409);
    expect((await api("POST", "/discovered/dismiss", { ids: ["dsc_unknown"] })).status).toBe(404);
    // Reported again (another clone of the same remote, spelled differently): still hidden.
    const again = await workerApi(s, credential)("POST", "/worker/repos", {
      repos: [{ path: "/elsewhere/beta", url: "https://git.example.test/Team/beta" }, { path: join(workspace, "alpha"), url: "https://git.example.test/team/alpha.git" }, { path: join(workspace, "nested", "delta"), url: "ssh://git@git.example.test/team/delta.git" }],
    });
    expect(again.body).toEqual({ known: 0, discovered: 3 });
    expect((await api("GET", "/discovered")).body.items.map((d: any) => d.name).sort()).toEqual(["alpha", "delta"]);

    const accepted = await api("POST", "/discovered/accept", { ids: [byName.alpha.id] });
    expect(accepted.status).toBe(200);
    expect(accepted.body.projects).toHaveLength(1);
    expect(accepted.body.projects[0]).toMatchObject({ name: "alpha", repositories: [{ url: "https://git.example.test/team/alpha.git", name: "alpha", branch: "main", primary: true }] });
    expect((await api("POST", "/discovered/accept", { ids: [byName.alpha.id] })).status).toBe(409);

    // Into an existing project.
    const target = await orgWithProject(s, org);
    const into = await api("POST", "/discovered/accept", { ids: [byName.delta.id], projectId: target.projectId });
    expect(into.body.projects[0]).toMatchObject({ id: target.projectId, repositories: [{ name: "delta", primary: true }] });
    expect((await api("GET", "/discovered")).body.items).toEqual([]);

    // Another org sees none of it, and cannot act on it.
    const other = await newOrg(s);
    expect((await s.api("GET", `/orgs/${other.orgId}/discovered`, { token: other.accessToken })).body.items).toEqual([]);
    expect((await s.api("POST", `/orgs/${other.orgId}/discovered/dismiss`, { token: other.accessToken, body: { ids: [byName.beta.id] } })).status).toBe(404);
  });
});

describe("readiness", () => {
  test("runs on the worker that has the project: score, checks, report", async () => {
    const projects = (await api("GET", "/projects")).body.items;
    const alpha = projects.find((p: any) => p.name === "alpha");
    const started = await api("POST", `/projects/${alpha.id}/readiness`, {});
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ workerId, status: "queued" });
    const run = await until(async () => {
      const r = await api("GET", `/projects/${alpha.id}/readiness`);
      return r.body.status === "completed" && r.body;
    }, 20_000);
    expect(run.runId).toBe(started.body.runId);
    expect(run.score).toBe(100);
    expect(run.checks.map((c: any) => c.id).sort()).toEqual(["agent_instructions", "ci", "gitignore", "lockfile", "readme", "setup", "size", "style", "test_command"]);
    expect(run.checks.find((c: any) => c.id === "test_command").detail).toContain("make test");
    expect(run.report).toContain("AI readiness: 100/100");
  }, 30_000);

  test("a weak repository scores low and says what would help; no holder or no repository is 409", async () => {
    const projects = (await api("GET", "/projects")).body.items;
    const withDelta = projects.find((p: any) => p.repositories.some((r: any) => r.name === "delta"));
    await api("POST", `/projects/${withDelta.id}/readiness`, { workerId });
    const run = await until(async () => {
      const r = await api("GET", `/projects/${withDelta.id}/readiness`);
      return r.body.status === "completed" && r.body;
    }, 20_000);
    const byId = Object.fromEntries(run.checks.map((c: any) => [c.id, c]));
    expect(byId.test_command.passed).toBe(false);
    expect(byId.test_command.detail).toContain("make test");
    expect(byId.lockfile).toMatchObject({ passed: false, detail: "package.json without a lockfile" });
    expect(byId.agent_instructions.passed).toBe(false);
    expect(run.score).toBeLessThan(30);
    expect(run.report).toContain("What would help");

    const empty = await orgWithProject(s, org);
    expect((await api("POST", `/projects/${empty.projectId}/readiness`, {})).status).toBe(409);
    await addRepositoryRow(s, org.orgId, empty.projectId, "https://git.example.test/team/nowhere.git");
    const none = await api("POST", `/projects/${empty.projectId}/readiness`, {});
    expect(none.status).toBe(409);
    expect((await api("GET", `/projects/${empty.projectId}/readiness`)).status).toBe(404);
    expect((await api("POST", `/projects/${withDelta.id}/readiness`, { workerId: "wkr_nope" })).status).toBe(400);
  }, 30_000);
});

describe("clone", () => {
  test("clone {workerIds} -> 202; the worker clones into its workspace and reports", async () => {
    const p = await orgWithProject(s, org);
    const source = gitRepo(join(tmp, "src-gamma"), { "README.md": "gamma\n" });
    const bare = bareFrom(source, join(tmp, "gamma.git"));
    const repoId = await addRepositoryRow(s, org.orgId, p.projectId, `file://${bare}`, { name: "gamma" });
    const viewer = await addMember(s, org, "viewer");
    expect((await api("POST", `/projects/${p.projectId}/repositories/${repoId}/clone`, { workerIds: [workerId] }, viewer.accessToken)).status).toBe(403);
    expect((await api("POST", `/projects/${p.projectId}/repositories/${repoId}/clone`, { workerIds: ["wkr_nope"] })).status).toBe(400);
    expect((await api("POST", `/projects/${p.projectId}/repositories/rep_nope/clone`, { workerIds: [workerId] })).status).toBe(404);
    const r = await api("POST", `/projects/${p.projectId}/repositories/${repoId}/clone`, { workerIds: [workerId] });
    expect(r.status).toBe(202);
    expect(r.body).toEqual({ repositoryId: repoId, workers: [{ workerId, status: "cloning", delivered: true }] });
    const cloned = await until(async () => {
      const c = await api("GET", `/projects/${p.projectId}/repositories/${repoId}/clones`);
      return c.body.items[0]?.status === "cloned" && c.body.items[0];
    }, 15_000);
    expect(cloned.path).toBe(join(workspace, "gamma"));
    expect(existsSync(join(workspace, "gamma", ".git"))).toBe(true);
    expect(sh(join(workspace, "gamma"), "git", "log", "-1", "--format=%s")).toBe("initial commit");
    // It belongs to a project: not discovered.
    await Bun.sleep(300);
    expect((await api("GET", "/discovered")).body.items).toEqual([]);
    // A remote that cannot be cloned: reported as failed, with git's reason.
    const missing = await addRepositoryRow(s, org.orgId, p.projectId, `file://${join(tmp, "missing.git")}`, { name: "missing", primary: false });
    expect((await api("POST", `/projects/${p.projectId}/repositories/${missing}/clone`, { workerIds: [workerId] })).status).toBe(202);
    const failed = await until(async () => {
      const c = await api("GET", `/projects/${p.projectId}/repositories/${missing}/clones`);
      return c.body.items[0]?.status === "failed" && c.body.items[0];
    }, 15_000);
    expect(failed.error).toContain("git clone failed");
    expect(failed.path).toBeNull();
    expect(existsSync(join(workspace, "missing"))).toBe(false);
  }, 30_000);

  test("a task whose repository cannot be cloned fails with git's reason, written once", async () => {
    const p = await orgWithProject(s, org);
    await addRepositoryRow(s, org.orgId, p.projectId, `file://${join(tmp, "nowhere.git")}`, { name: "nowhere" });
    const t = await createTaskApi(s, p, { title: "uncloneable" });
    const failed = await until(async () => {
      const r = (await api("GET", `/tasks/${t.id}`)).body;
      return r.status === "failed" && r;
    }, 15_000);
    expect(failed.attempt).toBe(1);
    const events = (await api("GET", `/tasks/${t.id}/events?limit=200`)).body.items as any[];
    const errors = events.filter((e) => e.type === "error");
    expect(errors).toHaveLength(1);
    expect(errors[0].data.message).toContain("git clone failed");
    expect(events.filter((e) => e.type === "status" && e.data.to === "failed")).toHaveLength(1);
  }, 30_000);
});
