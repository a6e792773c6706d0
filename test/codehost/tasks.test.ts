// The code-hosting app at work for tasks, against the GitHub stand-in (real HTTP on loopback, real
// git), with ao's app already installed: a repository created from ao, a claim's token used by real
// git, the pull request opened with backoff through 5xx and merged by webhook, a review posted,
// pull requests off by policy; `ao codehost` and `ao task show` on the command line; issues routed
// to tasks by the app's webhooks, and the installation suspended and deleted under them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestServer } from "../helpers/server";
import { addMember, makeToken, newOrg, type Session } from "../helpers/identity";
import type { GitHubStandIn } from "../helpers/github-standin";
import { run, tokenEnv } from "../helpers/git";
import { createTaskApi, makeWorker, ProtocolClient, until, workerApi } from "../workers/helpers";
import { emitTaskCompletedWithBranch } from "../../src/modules/tasks/results";
import { newConfigDir, runCli } from "../cli/helpers";
import definitions from "@octokit/webhooks-examples";
import { installApp, startCodehost, visit, type Codehost } from "./app-fixtures";

/** A recorded GitHub webhook example (event, action), deep-copied. */
function example(event: string, action: string): any {
  const def = (definitions as any[]).find((d) => d.name === event);
  return structuredClone(def.examples.find((e: any) => e.action === action));
}

let gh: GitHubStandIn, s: TestServer, owner: Session;
let org: Codehost["org"], api: Codehost["api"], connectGithub: Codehost["connectGithub"], stop: Codehost["stop"];
let work: string;
let hookUrl: string;
let installationId: number;
let slug: string;

beforeAll(async () => {
  const codehost = await startCodehost();
  ({ gh, s, owner, org, api, connectGithub, stop } = codehost);
  ({ hookUrl, installationId, slug } = await installApp(codehost));
  work = mkdtempSync(join(tmpdir(), "ao-codehost-"));
});
afterAll(async () => {
  await stop?.();
  rmSync(work, { recursive: true, force: true });
});

let projectId: string;
let repositoryId: string;
let prTaskId: string;

describe("a repository created from ao, a task's token and its pull request", () => {
  test("POST codehost/repositories creates it through the installation and a project holding it", async () => {
    const r = await api("POST", `${org()}/codehost/repositories`, { owner: "acme", name: "widget", description: "made by ao" });
    expect(r.status).toBe(201);
    projectId = r.body.project.id;
    repositoryId = r.body.project.repositories[0].id;
    expect(r.body.project).toMatchObject({ name: "widget", repositories: [{ url: `${gh.url}/acme/widget.git`, primary: true }] });
    const made = gh.repository("acme", "widget")!;
    expect(made.record.private).toBe(true);
    // Taken names: 409; an owner with no installation and not the caller's connection: 400 naming owner;
    // a caller with no connection: 409 no_connection.
    expect((await api("POST", `${org()}/codehost/repositories`, { owner: "acme", name: "widget" })).status).toBe(409);
    const stranger = await api("POST", `${org()}/codehost/repositories`, { owner: "someone-else", name: "x" });
    expect(stranger.status).toBe(400);
    expect(stranger.body.error.details[0].field).toBe("owner");
    const unconnected = await addMember(s, owner, "admin");
    const none = await api("POST", `${org()}/codehost/repositories`, { owner: "someone-else", name: "x" }, unconnected.accessToken);
    expect(none.status).toBe(409);
    expect(none.body.error.details.reason).toBe("no_connection");
    expect(gh.repository("someone-else", "x")).toBeUndefined();
    const bad = await api("POST", `${org()}/codehost/repositories`, { owner: "acme", name: "no spaces" });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details[0].field).toBe("name");
  });

  test("the claim carries a token for that repository alone; real git clones and pushes ao/<taskId>; the PR opens after a 502", async () => {
    const w = await makeWorker(s, owner.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, { orgId: owner.orgId, projectId, token: owner.accessToken }, { title: "Add a greeting" });
    prTaskId = task.id;
    const offer = await c.next("offer", (m) => m.taskId === task.id);
    const claim = await workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
    expect(claim.status).toBe(200);
    c.running = [{ taskId: task.id, attempt: 1 }];
    const repo = claim.body.project.repositories[0];
    expect(repo.push).toBe(true);
    expect(repo.token).toMatch(/^ghs_/);
    // Narrowed like GitHub narrows it: another repository of the installation is not readable with it.
    const other = await run(work, ["git", "ls-remote", `${gh.url}/acme/repo-001.git`], tokenEnv(repo.token));
    expect(other.code).not.toBe(0);
    const dir = join(work, "widget");
    expect((await run(work, ["git", "clone", repo.url, dir], tokenEnv(repo.token))).code).toBe(0);
    const branch = `ao/${task.id}`;
    await run(dir, ["git", "checkout", "-b", branch]);
    writeFileSync(join(dir, "hello.txt"), "hello\n");
    await run(dir, ["git", "add", "-A"]);
    await run(dir, ["git", "commit", "-m", "Add a greeting"]);
    const pushed = await run(dir, ["git", "push", "origin", branch], tokenEnv(repo.token));
    expect(pushed.code).toBe(0);
    const commit = (await run(dir, ["git", "rev-parse", "HEAD"])).out;

    const done = await workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: claim.body.leaseToken, to: "completed", summary: "Added hello.txt" });
    expect({ status: done.status, body: done.body }).toMatchObject({ status: 200 });
    gh.failNext(1, 502);
    emitTaskCompletedWithBranch({ orgId: owner.orgId, projectId, taskId: task.id, repositoryId, branch, base: "main", commit }, s.core);
    const record = await until(async () => {
      const r = await api("GET", `${org()}/tasks/${task.id}`);
      return r.body.pullRequest ? r.body : null;
    }, 15_000);
    const pull = gh.repository("acme", "widget")!.pulls[0];
    expect(record.pullRequest).toEqual({ number: pull.number, url: expect.stringContaining(`/acme/widget/pull/${pull.number}`), state: "open", headBranch: branch, repository: "acme/widget", draft: false });
    expect(pull.title).toBe("Add a greeting");
    expect(pull.body).toContain("Added hello.txt");
    expect(pull.body).toContain(`${s.url}/tasks/${task.id}`);
    const events = (await api("GET", `${org()}/tasks/${task.id}/events`)).body.items;
    const prEvents = events.filter((e: any) => e.type === "pull_request").map((e: any) => e.data.action);
    expect(prEvents).toEqual(["backing_off", "opened"]);
    expect(events.find((e: any) => e.data?.action === "backing_off").data.message).toContain("502");

    // GitHub merges it and says so, signed with the app's secret: the task shows merged.
    gh.merge("acme", "widget", pull.number);
    const hook = await gh.deliver(hookUrl, "pull_request", gh.payloads.pullRequest("acme", "widget", pull.number, "closed"));
    expect(hook.status).toBe(200);
    const merged = await api("GET", `${org()}/tasks/${task.id}`);
    expect(merged.body.pullRequest.state).toBe("merged");
    const last = (await api("GET", `${org()}/tasks/${task.id}/events`)).body.items.at(-1);
    expect(last).toMatchObject({ type: "pull_request", data: { action: "merged", number: pull.number } });
    // The same event signed with another secret changes nothing.
    const forged = await gh.deliver(hookUrl, "pull_request", gh.payloads.pullRequest("acme", "widget", pull.number, "reopened"), { secret: "wrong" });
    expect(forged.status).toBe(401);
    expect((await api("GET", `${org()}/tasks/${task.id}`)).body.pullRequest.state).toBe("merged");
    c.close();
  });

  test("a review task on an app repository posts its summary as a pull request review", async () => {
    const dir = join(work, "widget");
    const branch = "feature/x";
    await run(dir, ["git", "checkout", "-b", branch, "origin/main"]);
    writeFileSync(join(dir, "x.txt"), "x\n");
    await run(dir, ["git", "add", "-A"]);
    await run(dir, ["git", "commit", "-m", "x"]);
    const token = gh.mintToken(installationId);
    expect((await run(dir, ["git", "push", "origin", branch], tokenEnv(token))).code).toBe(0);
    const opened = await fetch(`${gh.apiUrl}/repos/acme/widget/pulls`, {
      method: "POST",
      headers: { authorization: `token ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ title: "Feature X", head: branch, base: "main" }),
    });
    expect(opened.status).toBe(201);
    const number = ((await opened.json()) as { number: number }).number;

    const w = await makeWorker(s, owner.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, { orgId: owner.orgId, projectId, token: owner.accessToken }, { kind: "review", review: { base: "main", head: branch } });
    const offer = await c.next("offer", (m) => m.taskId === task.id);
    const claim = await workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
    expect((await workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: claim.body.leaseToken, to: "completed", summary: "Looks good; one nit." })).status).toBe(200);
    const record = await until(async () => {
      const r = await api("GET", `${org()}/tasks/${task.id}`);
      return r.body.pullRequest?.reviewUrl ? r.body : null;
    }, 10_000);
    const reviews = gh.repository("acme", "widget")!.reviews;
    expect(reviews.at(-1)).toMatchObject({ body: expect.stringContaining("Looks good; one nit."), state: "COMMENTED" });
    expect(record.pullRequest).toMatchObject({ number, state: "open", headBranch: branch, repository: "acme/widget" });
    const events = (await api("GET", `${org()}/tasks/${task.id}/events`)).body.items;
    expect(events.some((e: any) => e.type === "review" && e.data.action === "posted")).toBe(true);
    c.close();
  });

  test("policy pullRequests: validated on create and update (400 naming the field); off means no push", async () => {
    const bad = await api("PATCH", `${org()}/projects/${projectId}`, { policy: { pullRequests: "sometimes" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details).toEqual([{ field: "policy.pullRequests", message: expect.any(String) }]);
    const badCreate = await api("POST", `${org()}/projects`, { name: "p-bad", policy: { pullRequests: 1 } });
    expect(badCreate.status).toBe(400);
    expect((await api("PATCH", `${org()}/projects/${projectId}`, { policy: { pullRequests: "off" } })).status).toBe(200);
    const w = await makeWorker(s, owner.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, { orgId: owner.orgId, projectId, token: owner.accessToken });
    const offer = await c.next("offer", (m) => m.taskId === task.id);
    const claim = await workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
    expect(claim.body.project.repositories[0].push).toBe(false);
    expect(claim.body.project.repositories[0].token).toMatch(/^ghs_/);
    c.close();
    await api("PATCH", `${org()}/projects/${projectId}`, { policy: { pullRequests: "open" } });
  });
});

describe("the command line", () => {
  test("ao codehost status and sync; ao task show prints the pull request", async () => {
    const env = { AO_CONFIG_DIR: newConfigDir(), AO_SERVER: s.url, AO_TOKEN: await makeToken(s, owner) };
    const status = await runCli(["codehost", "status"], env);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain("ao test app");
    expect(status.stdout).toContain("connection  octo-admin");
    expect(status.stdout).toMatch(new RegExp(`${installationId}\\s+acme\\s+Organization\\s+all\\s+13\\d`));
    const synced = await runCli(["codehost", "sync", "--json"], env);
    expect(synced.code).toBe(0);
    expect(JSON.parse(synced.stdout).installations[0].id).toBe(installationId);
    const show = await runCli(["task", "show", prTaskId], env);
    expect(show.code).toBe(0);
    const pull = gh.repository("acme", "widget")!.pulls[0];
    expect(show.stdout).toMatch(new RegExp(`pull request\\s+#${pull.number} merged .*/acme/widget/pull/${pull.number}`));
    const events = await runCli(["task", "events", prTaskId], env);
    expect(events.stdout).toMatch(/pull_request merged #\d+/);
    // A viewer's sync: refused with the server's words.
    const viewer = await addMember(s, owner, "viewer");
    const refused = await runCli(["codehost", "sync"], { ...env, AO_TOKEN: await makeToken(s, viewer) });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/forbidden/);
  });
});

describe("the app's webhooks route tasks and keep installations current", () => {
  test("an issue labeled in an app repository makes a task in the project holding that repository", async () => {
    const payload = example("issues", "labeled");
    payload.label.name = "ao";
    payload.installation = { id: installationId, node_id: "x" };
    payload.repository.full_name = "acme/widget";
    payload.repository.clone_url = `${gh.url}/acme/widget.git`;
    payload.repository.html_url = `${gh.url}/acme/widget`;
    const r = await gh.deliver(hookUrl, "issues", payload);
    expect(r.status).toBe(201);
    const taskId = JSON.parse(r.body).taskId;
    const task = await api("GET", `${org()}/tasks/${taskId}`);
    expect(task.body.projectId).toBe(projectId);
    // A repository no project holds: the app integration's own project (same org).
    payload.repository.clone_url = `${gh.url}/acme/repo-001.git`;
    payload.repository.html_url = `${gh.url}/acme/repo-001`;
    payload.issue.id += 1;
    const elsewhere = await gh.deliver(hookUrl, "issues", payload);
    expect(elsewhere.status).toBe(201);
    const integration = (await api("GET", `${org()}/integrations/${hookUrl.split("/").at(-1)}`)).body;
    expect((await api("GET", `${org()}/tasks/${JSON.parse(elsewhere.body).taskId}`)).body.projectId).toBe(integration.projectId);
  });

  test("a task the app makes in another organization names the app as its creator, never the owning org's integration or org id", async () => {
    // Another org installs the app on its own GitHub organization and makes a repository and its project through it.
    const other = await newOrg(s);
    const as = (method: string, path: string, body?: unknown) => api(method, `/orgs/${other.orgId}${path}`, body, other.accessToken);
    await connectGithub(other, "mallory");
    gh.signIn("mallory");
    const installation = (await gh.install(slug, "mallory-co", { type: "Organization", repositories: 1, webhook: false, state: "" })).installation.record.id;
    gh.signIn("octo-admin");
    const state = (await as("POST", "/codehost/installations")).body.state;
    expect((await visit(`${s.url}/api/v1/codehost/installations/callback?installation_id=${installation}&setup_action=install&state=${state}`)).status).toBe(302);
    const made = await as("POST", "/codehost/repositories", { owner: "mallory-co", name: "gadget" });
    expect(made.status).toBe(201);
    const projectId = made.body.project.id;

    const payload = example("issues", "labeled");
    payload.label.name = "ao";
    payload.installation = { id: installation, node_id: "x" };
    payload.issue.id += 1000;
    payload.repository.full_name = "mallory-co/gadget";
    payload.repository.clone_url = `${gh.url}/mallory-co/gadget.git`;
    payload.repository.html_url = `${gh.url}/mallory-co/gadget`;
    const delivered = await gh.deliver(hookUrl, "issues", payload);
    expect(delivered.status).toBe(201);
    // The answer goes to the app's delivery log at GitHub, which the app's owner reads: no task id of another org.
    expect(JSON.parse(delivered.body)).toEqual({ status: "created" });
    const again = await gh.deliver(hookUrl, "issues", payload);
    expect(again.status).toBe(200);
    expect(JSON.parse(again.body)).toEqual({ status: "duplicate" });
    const list = await as("GET", "/tasks?limit=200");
    const task = list.body.items.find((t: any) => t.projectId === projectId);
    expect(task.createdBy).toEqual({ type: "app", id: slug, name: "ao test app" });
    expect(task.source).toMatchObject({ integrationKind: "github", item: { type: "github_issue" } });
    expect(task.source.integrationId).toBeUndefined();
    const events = await as("GET", `/tasks/${task.id}/events`);
    expect(events.body.items[0].actor).toEqual({ type: "app", id: slug, name: "ao test app" });

    // Nothing the task's org reads about it carries the app owner's integration or organization id.
    const appIntegrationId = hookUrl.split("/").at(-1)!;
    const answers = [list, await as("GET", `/tasks/${task.id}`), events, await as("GET", "/tasks?status=queued"), await as("GET", `/tasks?projectId=${projectId}`)];
    for (const answer of answers) {
      expect(answer.status).toBe(200);
      expect(JSON.stringify(answer.body)).not.toContain(appIntegrationId);
      expect(JSON.stringify(answer.body)).not.toContain(owner.orgId);
    }
    // In the owning org the app's tasks stay its integration's.
    const own = (await api("GET", `${org()}/tasks?limit=200`)).body.items.find((t: any) => t.source?.item?.type === "github_issue");
    expect(own.createdBy).toMatchObject({ type: "integration", id: appIntegrationId, name: "GitHub app" });
  });

  test("an installation made at GitHub and never connected here makes no task, even on a repository the owner's project holds", async () => {
    // A public app can be installed by anyone; this one is never connected to an organization here.
    gh.signIn("stranger");
    const stranger = (await gh.install(slug, "stranger-co", { type: "Organization", repositories: 1, webhook: false, state: "" })).installation.record.id;
    gh.signIn("octo-admin");
    const before = (await api("GET", `${org()}/tasks?limit=200`)).body.items.length;
    const payload = example("issues", "labeled");
    payload.label.name = "ao";
    payload.installation = { id: stranger, node_id: "x" };
    payload.issue.id += 2000;
    // Even naming the owner's repository (its clone URL is no secret) finds no project through it.
    payload.repository.full_name = "acme/widget";
    payload.repository.clone_url = `${gh.url}/acme/widget.git`;
    payload.repository.html_url = `${gh.url}/acme/widget`;
    const r = await gh.deliver(hookUrl, "issues", payload);
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body)).toEqual({ status: "ignored", reason: "installation not connected to an organization here (install it from ao to connect it)" });
    expect((await api("GET", `${org()}/tasks?limit=200`)).body.items.length).toBe(before);
  });

  test("installation suspended, then deleted at GitHub: claims get no token, then the record and its repositories go", async () => {
    const suspended = await gh.deliver(hookUrl, "installation", gh.payloads.installation(installationId, "suspend"));
    expect(JSON.parse(suspended.body)).toMatchObject({ status: "processed" });
    expect((await api("GET", `${org()}/codehost`)).body.installations[0].suspended).toBe(true);
    const deleted = await gh.deliver(hookUrl, "installation", gh.payloads.installation(installationId, "deleted"));
    expect(deleted.status).toBe(200);
    expect((await api("GET", `${org()}/codehost`)).body.installations).toEqual([]);
    expect((await api("GET", `${org()}/codehost/repositories`)).body.items).toEqual([]);
    // Its repositories are no longer app repositories: a claim carries neither token nor push.
    for (const queued of (await api("GET", `${org()}/tasks?status=queued&limit=200`)).body.items) {
      expect((await api("POST", `${org()}/tasks/${queued.id}/actions`, { action: "cancel" })).status).toBe(200);
    }
    const w = await makeWorker(s, owner.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, { orgId: owner.orgId, projectId, token: owner.accessToken });
    const offer = await c.next("offer", (m) => m.taskId === task.id);
    const claim = await workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
    expect(claim.body.project.repositories[0].token).toBeUndefined();
    expect(claim.body.project.repositories[0].push).toBeUndefined();
    c.close();
  });
});
