// Issue 9 end to end, through the BUILT executable: `ao serve` pointed at the GitHub stand-in
// (AO_GITHUB_URL, AO_GITHUB_API_URL), a real `ao worker` paired by code. manifest -> callback ->
// install (101 repositories, two pages) -> sync -> create repository -> task -> the worker clones
// with the claim's installation token, commits and pushes ao/<taskId> -> the pull request opens
// (after a rate limit, backing off) -> GitHub's pull_request closed+merged webhook, signed with
// the app's secret -> the task shows merged. Then a restart with a pull request still queued.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startGitHubStandIn, type GitHubStandIn } from "../helpers/github-standin";
import { inheritedEnv } from "../helpers/processes";

const root = join(import.meta.dir, "..", "..");
const baseEnv = { ...inheritedEnv(), AO_LOG_FORMAT: "pretty" };

let tmp: string;
let ao: string;
let gh: GitHubStandIn;
const procs: Bun.Subprocess[] = [];

class Proc {
  text = "";
  readonly proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  constructor(args: string[], cwd: string, env: Record<string, string>) {
    this.proc = Bun.spawn([ao, ...args], { cwd, env: { ...baseEnv, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
    procs.push(this.proc);
    for (const stream of [this.proc.stdout, this.proc.stderr]) {
      void (async () => {
        const decoder = new TextDecoder();
        for await (const chunk of stream) this.text += decoder.decode(chunk, { stream: true });
      })();
    }
  }
  async waitFor(re: RegExp, ms = 20_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + ms;
    for (;;) {
      const m = this.text.match(re);
      if (m) return m;
      if (Date.now() > deadline || this.proc.exitCode !== null) throw new Error(`no ${re} in:\n${this.text}`);
      await Bun.sleep(25);
    }
  }
  async stop() {
    if (this.proc.exitCode === null) this.proc.kill("SIGTERM");
    await Promise.race([this.proc.exited, Bun.sleep(5000)]);
    if (this.proc.exitCode === null) this.proc.kill("SIGKILL");
  }
}

async function until<T>(fn: () => Promise<T | null | undefined | false>, ms = 20_000, what = "condition"): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

const visit = async (url: string, init: RequestInit = {}) => {
  const r = await fetch(url, { ...init, redirect: "manual" });
  return { status: r.status, location: r.headers.get("location"), body: await r.text() };
};

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-codehost-e2e-"));
  ao = join(tmp, "bin", "ao");
  const build = Bun.spawn([process.execPath, join(root, "scripts", "build.ts"), ao], { cwd: root, stdout: "pipe", stderr: "pipe" });
  const [code, err] = await Promise.all([build.exited, new Response(build.stderr).text()]);
  if (code !== 0) throw new Error(`scripts/build.ts failed (exit ${code}):\n${err}`);
  gh = await startGitHubStandIn();
  gh.signIn("octo");
}, 180_000);

afterAll(async () => {
  for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
  await gh?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("the GitHub app through the built executable and a real worker", () => {
  let server: Proc;
  let base: string;
  let token: string;
  let orgId: string;
  let hookUrl: string;
  let slug: string;
  let projectId: string;
  let worker: Proc;
  const dataDir = () => join(tmp, "server-data");
  const env = () => ({ AO_GITHUB_URL: gh.url, AO_GITHUB_API_URL: gh.apiUrl, AO_ADMIN_EMAIL: "admin@example.com", AO_ADMIN_PASSWORD: "change-me-now" });
  const api = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${base}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, headers: r.headers, body: text ? JSON.parse(text) : null };
  };
  const startServer = async (port = 0) => {
    mkdirSync(join(tmp, "cwd"), { recursive: true });
    server = new Proc(["serve", "--port", String(port), "--host", "127.0.0.1", "--data-dir", dataDir()], join(tmp, "cwd"), env());
    const [, bound] = await server.waitFor(/listening on http:\/\/[^:]+:(\d+)/);
    base = `http://127.0.0.1:${bound}`;
    const login = await fetch(`${base}/api/v1/auth/login`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email: "admin@example.com", password: "change-me-now" }) });
    token = ((await login.json()) as { accessToken: string }).accessToken;
  };

  test("manifest -> callback -> install with 101 repositories -> sync every page -> create a repository", async () => {
    await startServer();
    orgId = (await api("GET", "/orgs")).body.items?.[0]?.id ?? (await api("GET", "/orgs")).body[0].id;
    const started = await api("POST", `/orgs/${orgId}/codehost/app/manifest`, { name: "ao e2e" });
    expect(started.status).toBe(200);
    hookUrl = started.body.manifest.hook_attributes.url;
    const made = await visit(started.body.url, { method: "POST", body: new URLSearchParams({ manifest: JSON.stringify(started.body.manifest) }) });
    const back = await visit(made.location!);
    expect(back.status).toBe(302);
    slug = gh.app("ao-e2e").record.slug;
    // The setup callback checks the installation against the person's own connection: connect first.
    const connect = await api("POST", `/orgs/${orgId}/codehost/user`);
    const authorized = await visit(connect.body.url);
    expect((await visit(authorized.location!)).status).toBe(302);
    const link = await api("POST", `/orgs/${orgId}/codehost/installations`);
    await visit(link.body.url);
    const installed = await gh.install(slug, "acme", { type: "Organization", repositories: 101 });
    expect((await visit(installed.setupRedirect!)).status).toBe(302);
    const synced = await api("POST", `/orgs/${orgId}/codehost/sync`);
    expect(synced.status).toBe(200);
    expect(synced.body.repositories).toBe(101);
    const created = await api("POST", `/orgs/${orgId}/codehost/repositories`, { owner: "acme", name: "e2e-app" });
    expect(created.status).toBe(201);
    projectId = created.body.project.id;
  }, 60_000);

  test("a task: the real worker clones with the claim's token, pushes ao/<taskId>; the pull request opens; merged by webhook", async () => {
    const workerDir = join(tmp, "worker-data");
    worker = new Proc(
      ["worker", "--server", base, "--data-dir", workerDir, "--name", "e2e", "--exec", `echo "hello from $AO_TASK_ID" > greeting.txt && echo "::ao::summary Added greeting.txt"`],
      tmp,
      {},
    );
    const [, code] = await worker.waitFor(/code: ([A-Z]{4}-[A-Z]{4})/);
    expect((await api("POST", "/pairing/approve", { userCode: code, orgId })).status).toBe(200);
    await worker.waitFor(/connected as wkr_/);

    const task = (await api("POST", `/orgs/${orgId}/tasks`, { projectId, title: "Add a greeting", prompt: "Write greeting.txt" })).body;
    const done = await until(async () => {
      const t = (await api("GET", `/orgs/${orgId}/tasks/${task.id}`)).body;
      return (t.status === "completed" || t.status === "failed") && t;
    }, 60_000, "the task to finish");
    expect(done.status).toBe("completed");
    expect(done.changes).toMatchObject({ files: 1, branch: `ao/${task.id}`, pushed: true });
    const record = await until(async () => {
      const t = (await api("GET", `/orgs/${orgId}/tasks/${task.id}`)).body;
      return t.pullRequest && t;
    }, 30_000, "the pull request").catch(async (err) => {
      const evs = (await api("GET", `/orgs/${orgId}/tasks/${task.id}/events?limit=200`)).body.items;
      throw new Error(`${err.message}\nevents: ${JSON.stringify(evs.filter((e: any) => e.type !== "log"), null, 1)}\nserver: ${server.text.slice(-3000)}`);
    });
    const repo = gh.repository("acme", "e2e-app")!;
    const pull = repo.pulls.find((p) => p.head === `ao/${task.id}`)!;
    expect(pull).toBeDefined();
    expect(record.pullRequest).toMatchObject({ number: pull.number, state: "open", headBranch: `ao/${task.id}`, repository: "acme/e2e-app" });
    expect(pull.title).toBe("Add a greeting");
    expect(pull.body).toContain("Added greeting.txt");
    expect(pull.body).toContain(`${base}/tasks/${task.id}`);
    // The branch really landed in the bare repository with the file.
    const shown = Bun.spawnSync(["git", "show", `ao/${task.id}:greeting.txt`], { cwd: repo.dir });
    expect(shown.stdout.toString()).toBe(`hello from ${task.id}\n`);
    // The token went to git through the environment only: never in the worker's output.
    const minted = gh.requests.filter((r) => /\/access_tokens$/.test(r.path));
    expect(minted.length).toBeGreaterThan(0);
    expect(worker.text).not.toMatch(/ghs_[A-Za-z0-9]{20,}/);
    expect(server.text).not.toMatch(/ghs_[A-Za-z0-9]{20,}/);

    gh.merge("acme", "e2e-app", pull.number);
    const hook = await gh.deliver(hookUrl, "pull_request", gh.payloads.pullRequest("acme", "e2e-app", pull.number, "closed"));
    expect(hook.status).toBe(200);
    const merged = (await api("GET", `/orgs/${orgId}/tasks/${task.id}`)).body;
    expect(merged.pullRequest.state).toBe("merged");
    const events = (await api("GET", `/orgs/${orgId}/tasks/${task.id}/events?limit=200`)).body.items;
    expect(events.filter((e: any) => e.type === "pull_request").map((e: any) => e.data.action)).toEqual(["opened", "merged"]);
    // The same webhook signed with another secret: 401, nothing changes.
    const forged = await gh.deliver(hookUrl, "pull_request", gh.payloads.pullRequest("acme", "e2e-app", pull.number, "reopened"), { secret: "another" });
    expect(forged.status).toBe(401);
  }, 120_000);

  test("GitHub rate-limited and the server restarted: the queued pull request is not lost, and the timeline says it backed off", async () => {
    // Every API answer is rate limited for a while: the claim's token comes from ao's cache (minted
    // for the first task), the pull request's tries back off until the server is stopped.
    gh.rateLimitNext(1000, { status: 403, resetInSeconds: 3, retryAfterSeconds: 3 });
    const task = (await api("POST", `/orgs/${orgId}/tasks`, { projectId, title: "Second change", prompt: "again" })).body;
    await until(async () => {
      const evs = (await api("GET", `/orgs/${orgId}/tasks/${task.id}/events?limit=200`)).body.items;
      return evs.some((e: any) => e.type === "pull_request" && e.data.action === "backing_off") && evs;
    }, 60_000, "a backing_off event");
    expect(server.text).toMatch(/backs off/);
    const port = new URL(base).port;
    await server.stop();
    gh.rateLimitNext(0);
    await startServer(Number(port));
    const record = await until(async () => {
      const t = (await api("GET", `/orgs/${orgId}/tasks/${task.id}`)).body;
      return t.pullRequest && t;
    }, 30_000, "the pull request after the restart");
    expect(record.pullRequest.state).toBe("open");
    const evs = (await api("GET", `/orgs/${orgId}/tasks/${task.id}/events?limit=200`)).body.items;
    const backing = evs.find((e: any) => e.type === "pull_request" && e.data.action === "backing_off");
    expect(backing.data.message).toContain("rate limit");
    await worker.stop();
    await server.stop();
  }, 120_000);
});
