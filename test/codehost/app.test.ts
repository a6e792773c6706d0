// The code-hosting app against the GitHub stand-in (real HTTP on loopback, real git): the app made
// from ao's manifest, installed, synced over every page, a repository created, a claim's token
// used by real git, the pull request opened with backoff through 5xx, merged by webhook; and the
// bad paths: states replayed or wrong, tokens expired early, rate limits, bad signatures, roles.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, newOrg, type Session } from "../helpers/identity";
import { startGitHubStandIn, type GitHubStandIn } from "../helpers/github-standin";
import { createTaskApi, makeWorker, ProtocolClient, until, workerApi } from "../workers/helpers";
import { emitTaskCompletedWithBranch } from "../../src/modules/tasks/results";
import { makeToken } from "../helpers/identity";
import { newConfigDir, runCli } from "../cli/helpers";
import definitions from "@octokit/webhooks-examples";
import { get } from "../../src/db/query";

/** A recorded GitHub webhook example (event, action), deep-copied. */
function example(event: string, action: string): any {
  const def = (definitions as any[]).find((d) => d.name === event);
  return structuredClone(def.examples.find((e: any) => e.action === action));
}

let gh: GitHubStandIn;
let s: TestServer;
let owner: Session;
let work: string;
let hookUrl: string;
let slug: string;

const org = () => `/orgs/${owner.orgId}`;
const api = (method: string, path: string, body?: unknown, token = owner.accessToken) => s.api(method, path, { token, body });

/** A browser following one redirect without following it further. */
async function visit(url: string, init: RequestInit = {}) {
  const r = await fetch(url, { ...init, redirect: "manual" });
  return { status: r.status, location: r.headers.get("location"), body: await r.text() };
}

async function run(cwd: string, cmd: string[], env: Record<string, string> = {}) {
  const r = Bun.spawn(cmd, {
    cwd,
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_AUTHOR_NAME: "A", GIT_AUTHOR_EMAIL: "a@ao.invalid", GIT_COMMITTER_NAME: "A", GIT_COMMITTER_EMAIL: "a@ao.invalid", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(r.stdout).text(), new Response(r.stderr).text(), r.exited]);
  return { code, out: out.trim(), err };
}

const tokenEnv = (token: string) => ({
  GIT_CONFIG_COUNT: "1",
  GIT_CONFIG_KEY_0: "http.extraHeader",
  GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`,
});

beforeAll(async () => {
  gh = await startGitHubStandIn();
  gh.signIn("octo-admin");
  s = await startTestServer({ github: { url: gh.url, apiUrl: gh.apiUrl, retryBaseMs: 300, maxTries: 6 } });
  owner = await createAdmin(s);
  work = mkdtempSync(join(tmpdir(), "ao-codehost-"));
});
afterAll(async () => {
  await s?.stop();
  await gh?.close();
  rmSync(work, { recursive: true, force: true });
});

describe("before the app exists", () => {
  test("GET codehost shows no app; installations, user and sync answer 409 no_app", async () => {
    const r = await api("GET", `${org()}/codehost`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ app: null, installations: [], connection: null, githubUrl: gh.url });
    for (const path of ["installations", "user", "sync"]) {
      const x = await api("POST", `${org()}/codehost/${path}`);
      expect({ path, status: x.status, reason: x.body.error.details?.reason }).toEqual({ path, status: 409, reason: "no_app" });
    }
  });
});

describe("the app, from ao's manifest", () => {
  test("manifest -> GitHub -> callback stores the app sealed; the state is single use", async () => {
    const r = await api("POST", `${org()}/codehost/app/manifest`, { name: "ao test app" });
    expect(r.status).toBe(200);
    const { url, manifest, state } = r.body;
    expect(url).toBe(`${gh.url}/settings/apps/new?state=${state}`);
    expect(manifest.redirect_url).toBe(`${s.url}/api/v1/codehost/app/callback`);
    expect(manifest.setup_url).toBe(`${s.url}/api/v1/codehost/installations/callback`);
    expect(manifest.callback_urls).toEqual([`${s.url}/api/v1/codehost/user/callback`]);
    expect(manifest.default_permissions).toEqual({ contents: "write", pull_requests: "write", issues: "write", metadata: "read", administration: "write" });
    expect(manifest.default_events).toEqual(["issues", "issue_comment", "pull_request", "installation", "installation_repositories"]);
    expect(manifest.public).toBe(false);
    hookUrl = manifest.hook_attributes.url;
    expect(hookUrl).toMatch(new RegExp(`^${s.url}/api/v1/hooks/int_`));

    // The browser posts the manifest; GitHub redirects back with a code and the state.
    const made = await visit(url, { method: "POST", body: new URLSearchParams({ manifest: JSON.stringify(manifest) }) });
    expect(made.status).toBe(302);
    expect(made.location!.startsWith(`${s.url}/api/v1/codehost/app/callback?code=`)).toBe(true);
    const back = await visit(made.location!);
    expect(back.status).toBe(302);
    slug = gh.app("ao-test-app").record.slug;
    expect(back.location).toBe(`${s.url}/github?app=${slug}`);

    // Replaying the same callback: the state is spent.
    const replay = await visit(made.location!);
    expect(replay.status).toBe(400);
    expect(JSON.parse(replay.body).error.code).toBe("invalid_state");

    const status = await api("GET", `${org()}/codehost`);
    expect(status.body.app).toMatchObject({ slug, name: "ao test app", ownedByThisOrg: true });
    // Sealed at rest: neither the key nor the secrets are in the database in clear.
    const row = (await s.core.store.read(get<any>("SELECT * FROM codehost_apps")))!;
    const standin = gh.app(slug);
    const dump = JSON.stringify(row);
    for (const secret of [standin.pem, standin.clientSecret, standin.webhookSecret]) expect(dump.includes(secret)).toBe(false);
    expect(row.private_key_sealed.startsWith("v1.")).toBe(true);
    // A second app is refused: one per server.
    expect((await api("POST", `${org()}/codehost/app/manifest`, {})).status).toBe(409);
  });

  test("a wrong state, a missing one, or another flow's state is refused and changes nothing", async () => {
    for (const q of ["?code=x&state=nope", "?code=x"]) {
      const r = await visit(`${s.url}/api/v1/codehost/app/callback${q}`);
      expect(r.status).toBe(400);
    }
    const user = await api("POST", `${org()}/codehost/user`);
    const r = await visit(`${s.url}/api/v1/codehost/app/callback?code=x&state=${user.body.state}`);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body).error.code).toBe("invalid_state");
    expect((await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM codehost_apps")))!.n).toBe(1);
  });

  test("the app's webhooks: signed with its secret they are heard, with another secret 401", async () => {
    const ping = await gh.deliver(hookUrl, "ping", { zen: "hi", hook_id: 1 });
    expect(ping.status).toBe(200);
    expect(JSON.parse(ping.body)).toEqual({ status: "pong" });
    const forged = await gh.deliver(hookUrl, "ping", { zen: "hi" }, { secret: "not-the-apps-secret" });
    expect(forged.status).toBe(401);
    // The app's integration cannot be deleted from under it.
    const integrationId = hookUrl.split("/").at(-1);
    const del = await api("DELETE", `${org()}/integrations/${integrationId}`);
    expect(del.status).toBe(409);
    expect((await api("GET", `${org()}/integrations/${integrationId}`)).body).toMatchObject({ kind: "github", name: "GitHub app" });
  });
});

let installationId: number;

/**
 * The person's own GitHub connection (the app's OAuth web flow), as `login` at GitHub; the stand-in
 * is signed in as octo-admin again after.
 */
async function connectGithub(who: Session, login: string) {
  gh.signIn(login);
  try {
    const r = await api("POST", `/orgs/${who.orgId}/codehost/user`, undefined, who.accessToken);
    expect(r.status).toBe(200);
    const atGithub = await visit(r.body.url);
    const back = await visit(atGithub.location!);
    expect(back.location).toBe(`${s.url}/github?connection=${login}`);
  } finally {
    gh.signIn("octo-admin");
  }
}

const callback = (installation: number, state: string) => visit(`${s.url}/api/v1/codehost/installations/callback?installation_id=${installation}&setup_action=install&state=${state}`);
const boundTo = async (installation: number) =>
  (await s.core.store.read(get<{ org_id: string }>("SELECT org_id FROM codehost_installations WHERE id = ?", installation)))?.org_id ?? null;

describe("installations and sync", () => {
  test("install on an organization with 130 repositories: the setup callback connects it and syncs every page", async () => {
    // The setup callback checks the installation against the person's own connection.
    await connectGithub(owner, "octo-admin");
    const link = await api("POST", `${org()}/codehost/installations`);
    expect(link.status).toBe(200);
    expect(link.body.url).toBe(`${gh.url}/apps/${slug}/installations/new?state=${link.body.state}`);
    expect((await visit(link.body.url)).status).toBe(200);
    const done = await gh.install(slug, "acme", { type: "Organization", repositories: 130 });
    installationId = done.installation.record.id;
    const back = await visit(done.setupRedirect!);
    expect(back.status).toBe(302);
    expect(back.location).toBe(`${s.url}/github?installation=${installationId}`);
    const status = await api("GET", `${org()}/codehost`);
    expect(status.body.installations).toEqual([
      expect.objectContaining({ id: installationId, account: expect.objectContaining({ login: "acme", type: "Organization" }), repositorySelection: "all", repositories: 130 }),
    ]);
    // Two pages of 100 at GitHub, followed through the Link header.
    expect(gh.requests.filter((r) => r.path.startsWith("/installation/repositories")).length).toBeGreaterThanOrEqual(2);
    // The setup link's state is spent too.
    expect((await visit(done.setupRedirect!)).status).toBe(400);
  });

  test("another org's admin with a valid state cannot bind an installation they did not make; nothing is bound", async () => {
    // Installed at GitHub outside ao's flow, on an organization only octo-admin belongs to.
    const victim = (await gh.install(slug, "victim-co", { type: "Organization", repositories: 2, webhook: false, state: "" })).installation.record.id;
    const mallory = await newOrg(s);
    const link = async () => (await api("POST", `/orgs/${mallory.orgId}/codehost/installations`, undefined, mallory.accessToken)).body.state as string;

    // No connection of their own yet: 409 no_connection, saying what to do.
    const bare = await callback(victim, await link());
    expect(bare.status).toBe(409);
    const bareError = JSON.parse(bare.body).error;
    expect(bareError.details.reason).toBe("no_connection");
    expect(bareError.message).toContain("connect your GitHub account first");
    expect(await boundTo(victim)).toBeNull();

    // Connected as a GitHub account that cannot reach the installation: 403, nothing bound, the state spent.
    await connectGithub(mallory, "mallory");
    const state = await link();
    const forged = await callback(victim, state);
    expect(forged.status).toBe(403);
    expect(JSON.parse(forged.body).error.message).toContain(`installation ${victim} is not one your GitHub account (mallory) can reach`);
    expect(await boundTo(victim)).toBeNull();
    expect((await api("GET", `/orgs/${mallory.orgId}/codehost`, undefined, mallory.accessToken)).body.installations).toEqual([]);
    expect((await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM codehost_repositories WHERE installation_id = ?", victim)))!.n).toBe(0);
    expect((await callback(victim, state)).status).toBe(400);
    // Nor can they mint a token for it: no claim of theirs reaches its repositories.
    expect((await api("GET", `/orgs/${mallory.orgId}/codehost/repositories?q=victim-co`, undefined, mallory.accessToken)).body.items).toEqual([]);

    // Their own installation, made by their own account, binds to their org.
    gh.signIn("mallory");
    const own = (await gh.install(slug, "mallory-co", { type: "Organization", repositories: 1, webhook: false, state: "" })).installation.record.id;
    gh.signIn("octo-admin");
    const mine = await callback(own, await link());
    expect(mine.status).toBe(302);
    expect(mine.location).toBe(`${s.url}/github?installation=${own}`);
    expect(await boundTo(own)).toBe(mallory.orgId);
    // The first org's installation is untouched.
    expect(await boundTo(installationId)).toBe(owner.orgId);
  });

  test("sync again, and the synced repositories are listed by name with paging", async () => {
    gh.createRepository("acme", "zz-new");
    const r = await api("POST", `${org()}/codehost/sync`);
    expect(r.status).toBe(200);
    expect(r.body.repositories).toBe(131);
    const names: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await api("GET", `${org()}/codehost/repositories?limit=50${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      names.push(...page.body.items.map((i: any) => i.fullName));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(names.length).toBe(131);
    expect(names).toEqual([...names].sort());
    expect(names.at(-1)).toBe("acme/zz-new");
    const found = await api("GET", `${org()}/codehost/repositories?q=ZZ-n`);
    expect(found.body.items.map((i: any) => i.fullName)).toEqual(["acme/zz-new"]);
    expect(found.body.items[0].cloneUrl).toBe(`${gh.url}/acme/zz-new.git`);
  });

  test("installation_repositories webhooks keep the record current without a sync", async () => {
    const removed = await gh.deliver(hookUrl, "installation_repositories", gh.payloads.installationRepositories(installationId, [], ["zz-new"]));
    expect(removed.status).toBe(200);
    expect(JSON.parse(removed.body).status).toBe("processed");
    expect((await api("GET", `${org()}/codehost/repositories?q=zz-new`)).body.items).toEqual([]);
    const added = await gh.deliver(hookUrl, "installation_repositories", gh.payloads.installationRepositories(installationId, ["zz-new"], []));
    expect(added.status).toBe(200);
    expect((await api("GET", `${org()}/codehost/repositories?q=zz-new`)).body.items.length).toBe(1);
  });

  test("tokens GitHub expired early: ao mints new ones and the sync still works", async () => {
    gh.expireTokens();
    const before = gh.requests.length;
    const r = await api("POST", `${org()}/codehost/sync`);
    expect(r.status).toBe(200);
    const after = gh.requests.slice(before);
    expect(after.some((x) => x.status === 401)).toBe(true);
    expect(after.filter((x) => x.method === "POST" && /\/access_tokens$/.test(x.path)).length).toBeGreaterThanOrEqual(1);
  });

  test("a rate limit or a 5xx at GitHub: 503 with Retry-After and a clear message", async () => {
    gh.rateLimitNext(1, { status: 403, resetInSeconds: 40 });
    const limited = await api("POST", `${org()}/codehost/sync`);
    expect(limited.status).toBe(503);
    expect(limited.body.error.code).toBe("codehost_unavailable");
    expect(limited.body.error.message).toContain("rate limit");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(30);
    gh.failNext(1, 502);
    const down = await api("POST", `${org()}/codehost/sync`);
    expect(down.status).toBe(503);
    expect(down.body.error.message).toContain("502");
  });
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

describe("the person's own connection", () => {
  test("OAuth web flow: the link, GitHub's redirect, the callback stores the login; a replay is refused", async () => {
    const r = await api("POST", `${org()}/codehost/user`);
    expect(r.status).toBe(200);
    const authorize = new URL(r.body.url);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${gh.url}/login/oauth/authorize`);
    expect(authorize.searchParams.get("state")).toBe(r.body.state);
    const atGithub = await visit(r.body.url);
    expect(atGithub.status).toBe(302);
    const back = await visit(atGithub.location!);
    expect(back.status).toBe(302);
    expect(back.location).toBe(`${s.url}/github?connection=octo-admin`);
    expect((await api("GET", `${org()}/codehost`)).body.connection).toEqual({ login: "octo-admin" });
    expect((await visit(atGithub.location!)).status).toBe(400);
    const row = (await s.core.store.read(get<{ token_sealed: string }>("SELECT token_sealed FROM codehost_connections")))!;
    expect(row.token_sealed.startsWith("v1.")).toBe(true);
  });

  test("a personal repository is created through the person's connection", async () => {
    const r = await api("POST", `${org()}/codehost/repositories`, { owner: "octo-admin", name: "mine", private: false });
    expect(r.status).toBe(201);
    expect(gh.repository("octo-admin", "mine")!.record.private).toBe(false);
    expect(r.body.project.repositories[0].url).toBe(`${gh.url}/octo-admin/mine.git`);
  });
});

const codehostRepositories = async () => (await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM codehost_repositories")))!.n;

describe("roles and organizations on every codehost route", () => {
  const routes: [string, string, unknown?][] = [
    ["GET", "/codehost"],
    ["POST", "/codehost/app/manifest", {}],
    ["POST", "/codehost/installations"],
    ["POST", "/codehost/user"],
    ["POST", "/codehost/sync"],
    ["GET", "/codehost/repositories"],
    ["POST", "/codehost/repositories", { owner: "acme", name: "by-viewer" }],
  ];

  test("a viewer reads, may connect their own account, and gets 403 on the rest; nothing changes", async () => {
    const viewer = await addMember(s, owner, "viewer");
    const repos = await codehostRepositories();
    for (const [method, path, body] of routes) {
      const r = await api(method, `${org()}${path}`, body, viewer.accessToken);
      const allowed = method === "GET" || path === "/codehost/user";
      expect({ path, status: r.status }).toEqual({ path, status: allowed ? 200 : 403 });
    }
    expect(await codehostRepositories()).toBe(repos);
    expect(gh.repository("acme", "by-viewer")).toBeUndefined();
  });

  test("another organization's people get 404 on this org's routes; their own org sees none of its installations", async () => {
    const stranger = await newOrg(s);
    for (const [method, path, body] of routes) {
      const r = await api(method, `${org()}${path}`, body, stranger.accessToken);
      expect({ path, status: r.status }).toEqual({ path, status: 404 });
    }
    const theirs = await api("GET", `/orgs/${stranger.orgId}/codehost`, undefined, stranger.accessToken);
    expect(theirs.body.installations).toEqual([]);
    expect(theirs.body.app.ownedByThisOrg).toBe(false);
    expect(theirs.body.app.integrationId).toBeNull();
    expect((await api("GET", `/orgs/${stranger.orgId}/codehost/repositories`, undefined, stranger.accessToken)).body.items).toEqual([]);
    // An installation already connected to the first org cannot be taken by the second.
    const link = await api("POST", `/orgs/${stranger.orgId}/codehost/installations`, undefined, stranger.accessToken);
    const taken = await visit(`${s.url}/api/v1/codehost/installations/callback?installation_id=${installationId}&setup_action=install&state=${link.body.state}`);
    expect(taken.status).toBe(409);
    expect((await api("GET", `${org()}/codehost`)).body.installations.length).toBe(1);
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
