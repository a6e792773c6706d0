// Background jobs with two servers on one database: the callback relay and the codehost job runner
// run on both. Every callback and every pull request goes out once; a server that dies in the
// middle of one (its claim never recorded) is taken over by the other once its claim ran out, and
// a job that outlasts its claim keeps it while its server lives (the runner renews it).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startCluster, type Cluster } from "../helpers/cluster";
import type { TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { deliver, eventually, makeIntegration, makeWorld, putInState, Receiver, svcSignature, type World } from "../integrations/fixtures";
import { commitFiles, startGitHubStandIn, type GitHubStandIn } from "../helpers/github-standin";
import { createTaskApi, makeWorker, orgWithProject, ProtocolClient, workerApi } from "../workers/helpers";
import { Relay, relayOf } from "../../src/modules/integrations/relay";
import { enqueueJob } from "../../src/modules/codehost/pulls";
import { all, get, run } from "../../src/db/query";

/** A server that dies: nothing it does from now on reaches the database, and it stops. */
async function kill(cluster: Cluster, s: TestServer) {
  s.core.store.write = () => Promise.reject(new Error("this server was killed"));
  cluster.servers.splice(cluster.servers.indexOf(s), 1);
  await s.stop();
}

describe("the callback relay on two servers", () => {
  const CLAIM_MS = 3000;
  let cluster: Cluster;
  let a: TestServer;
  let b: TestServer;
  let w: World;
  const rx = new Receiver();
  beforeAll(async () => {
    cluster = await startCluster(2, { allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [60_000], timeoutMs: 2000, claimMs: CLAIM_MS } });
    [a, b] = cluster.servers as [TestServer, TestServer];
    w = await makeWorld(a);
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
    await rx.stop();
  });

  async function completedTask(s: TestServer, integration: { id: string; secret: string }) {
    const body = JSON.stringify({ title: "Ship it", prompt: `x ${crypto.randomUUID()}` });
    const r = await deliver(s, integration.id, body, { "x-svc-signature": svcSignature(integration.secret, body), "x-svc-delivery": crypto.randomUUID() });
    expect(r.status).toBe(201);
    await putInState(s, r.body.taskId, "running");
    await putInState(s, r.body.taskId, "completed");
    return r.body.taskId as string;
  }

  test("tasks ending on both servers: every callback is delivered once", async () => {
    const integration = await makeIntegration(a, w.owner, { kind: "signed_json", name: "CI", projectId: w.projectId, callbackUrl: rx.url() });
    const count = 40;
    // Four at a time on each server, so both relays are woken and polling while rows are due.
    for (let i = 0; i < count; i += 8) {
      await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((k) => completedTask(k % 2 ? b : a, integration)));
    }
    const rows = () => all<{ status: string; attempts: number }>("SELECT status, attempts FROM deliveries WHERE target_id = ?", integration.id);
    const delivered = await eventually(async () => {
      const r = await b.core.store.read(rows());
      return r.length === count && r.every((x) => x.status === "succeeded") ? r : null;
    }, 30_000);
    // Each row records every try it had: one.
    expect(delivered!.every((x) => x.attempts === 1)).toBe(true);
    const ids = rx.requests.filter((r) => r.url.endsWith("/callback")).map((r) => r.headers["x-svc-delivery"]);
    expect(ids).toHaveLength(count);
    expect(new Set(ids).size).toBe(count);
  }, 90_000);

  test("the server sending a callback dies mid-send: the other sends it again, same delivery id, once the claim ran out", async () => {
    const integration = await makeIntegration(a, w.owner, { kind: "signed_json", name: "CI hanging", projectId: w.projectId, callbackUrl: rx.url("/hang") });
    let release!: () => void;
    const hanging = new Promise<void>((r) => (release = r));
    const first = rx.requests.length;
    rx.answer = async (req) => {
      // The first try to /hang never gets its answer while its server lives.
      if (req.url.endsWith("/hang") && rx.requests.filter((r) => r.url.endsWith("/hang")).length === 1) await hanging;
      return new Response("ok");
    };
    // B's relay rests while A claims the row, so the dying server is A.
    await relayOf(b.core)!.stop();
    const started = Date.now();
    const taskId = await completedTask(a, integration);
    await rx.waitFor(first + 1, 10_000);
    await kill(cluster, a);
    release();

    const takeover = new Relay(b.core);
    takeover.start();
    try {
      await rx.waitFor(first + 2, 20_000);
      const [sent, again] = rx.requests.slice(first);
      expect(again!.headers["x-svc-delivery"]).toBe(sent!.headers["x-svc-delivery"]);
      expect(again!.body).toBe(sent!.body);
      // Not before the claim ran out.
      expect(again!.at - started).toBeGreaterThanOrEqual(CLAIM_MS);
      const row = await eventually(async () => {
        const r = await b.core.store.read(get<{ status: string; attempts: number; claim: string | null }>("SELECT status, attempts, claim FROM deliveries WHERE task_id = ?", taskId));
        return r?.status === "succeeded" ? r : null;
      }, 10_000);
      expect(row).toEqual({ status: "succeeded", attempts: 1, claim: null });
      expect(rx.requests.filter((r) => r.url.endsWith("/hang"))).toHaveLength(2);
    } finally {
      await takeover.stop();
    }
  }, 60_000);
});

describe("codehost jobs on two servers", () => {
  const CLAIM_MS = 2500;
  let gh: GitHubStandIn;
  let cluster: Cluster;
  let a: TestServer;
  let b: TestServer;
  let owner: Session;
  let projectId: string;
  let repositoryId: string;
  // GitHub's API through a proxy that can hold POST .../pulls for a while (a slow GitHub).
  let slowPullsMs = 0;
  let proxy: ReturnType<typeof Bun.serve>;

  const visit = async (url: string, init: RequestInit = {}) => {
    const r = await fetch(url, { ...init, redirect: "manual" });
    return { status: r.status, location: r.headers.get("location") };
  };

  beforeAll(async () => {
    gh = await startGitHubStandIn();
    gh.signIn("octo-admin");
    proxy = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: async (req) => {
        const url = new URL(req.url);
        if (slowPullsMs && req.method === "POST" && url.pathname.endsWith("/pulls")) await Bun.sleep(slowPullsMs);
        const headers = new Headers(req.headers);
        headers.delete("host");
        const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
        const res = await fetch(gh.apiUrl + url.pathname + url.search, { method: req.method, headers, body });
        return new Response(await res.arrayBuffer(), { status: res.status, headers: res.headers });
      },
    });
    cluster = await startCluster(2, { github: { url: gh.url, apiUrl: `http://127.0.0.1:${proxy.port}`, retryBaseMs: 200, maxTries: 6, claimMs: CLAIM_MS } });
    [a, b] = cluster.servers as [TestServer, TestServer];
    owner = await createAdmin(a);
    const api = (method: string, path: string, body?: unknown) => a.api(method, `/orgs/${owner.orgId}${path}`, { token: owner.accessToken, body });
    // The app from ao's manifest, the person's connection, an installation on acme, a repository.
    const started = await api("POST", "/codehost/app/manifest", { name: "ao cluster app" });
    const made = await visit(started.body.url, { method: "POST", body: new URLSearchParams({ manifest: JSON.stringify(started.body.manifest) }) });
    expect((await visit(made.location!)).status).toBe(302);
    const slug = gh.app("ao-cluster-app").record.slug;
    const connect = await api("POST", "/codehost/user");
    expect((await visit((await visit(connect.body.url)).location!)).status).toBe(302);
    const link = await api("POST", "/codehost/installations");
    await visit(link.body.url);
    const installed = await gh.install(slug, "acme", { type: "Organization", repositories: 1 });
    expect((await visit(installed.setupRedirect!)).status).toBe(302);
    const created = await api("POST", "/codehost/repositories", { owner: "acme", name: "widget" });
    expect(created.status).toBe(201);
    projectId = created.body.project.id;
    repositoryId = created.body.project.repositories[0].id;
  }, 90_000);
  afterAll(async () => {
    await cluster?.stop();
    proxy?.stop(true);
    await gh?.close();
  });

  /** A task with a pushed branch ao/<taskId>, ready for its pull request. */
  async function taskWithBranch(): Promise<{ taskId: string; branch: string }> {
    const task = await createTaskApi(a, { orgId: owner.orgId, projectId, token: owner.accessToken }, { title: `Change ${crypto.randomUUID().slice(0, 8)}` });
    const branch = `ao/${task.id}`;
    commitFiles(gh.repository("acme", "widget")!.dir, branch, { [`${task.id}.txt`]: "hello\n" }, "A change");
    return { taskId: task.id, branch };
  }

  const posts = () => gh.requests.filter((r) => r.method === "POST" && r.path === "/repos/acme/widget/pulls");
  const pullsOf = (branch: string) => gh.repository("acme", "widget")!.pulls.filter((p) => p.head === branch);
  const job = (taskId: string) =>
    b.core.store.read(get<{ status: string; attempts: number; claim: string | null; updated_at: string }>("SELECT status, attempts, claim, updated_at FROM codehost_jobs WHERE task_id = ?", taskId));

  test("jobs queued on both servers: each pull request is opened once", async () => {
    const before = posts().length;
    const tasks = [];
    for (let i = 0; i < 10; i++) tasks.push(await taskWithBranch());
    await Promise.all(tasks.map(({ taskId, branch }, i) => {
      const s = i % 2 ? b : a;
      return s.core.store.write(enqueueJob(s.core, owner.orgId, taskId, "open_pull_request", { repositoryId, branch, base: "main" }));
    }));
    for (const { taskId } of tasks) await eventually(async () => (await job(taskId))?.status === "done", 30_000);
    for (const { taskId, branch } of tasks) {
      expect(await job(taskId)).toMatchObject({ status: "done", attempts: 1, claim: null });
      expect(pullsOf(branch)).toHaveLength(1);
    }
    const sent = posts().slice(before);
    expect(sent.map((r) => r.status)).toEqual(tasks.map(() => 201));
  }, 60_000);

  test("a job that takes longer than its claim keeps it: it runs once", async () => {
    const before = posts().length;
    const { taskId, branch } = await taskWithBranch();
    slowPullsMs = CLAIM_MS * 3;
    try {
      await a.core.store.write(enqueueJob(a.core, owner.orgId, taskId, "open_pull_request", { repositoryId, branch, base: "main" }));
      await eventually(async () => (await job(taskId))?.status === "done", 30_000);
    } finally {
      slowPullsMs = 0;
    }
    expect(await job(taskId)).toMatchObject({ status: "done", attempts: 1, claim: null });
    expect(pullsOf(branch)).toHaveLength(1);
    expect(posts().length - before).toBe(1);
  }, 60_000);

  test("a job whose server died after claiming it is taken over once the claim ran out", async () => {
    const { taskId, branch } = await taskWithBranch();
    // Queued and claimed in one write, as a server leaves it that claimed the job and died before a word to GitHub.
    const claimedAt = Date.now();
    await a.core.store.write(
      (function* () {
        yield* enqueueJob(a.core, owner.orgId, taskId, "open_pull_request", { repositoryId, branch, base: "main" });
        yield* run("UPDATE codehost_jobs SET status = 'working', claim = 'dead', next_attempt_at = ? WHERE task_id = ?", claimedAt + CLAIM_MS, taskId);
      })(),
    );
    const done = await eventually(async () => {
      const j = await job(taskId);
      return j?.status === "done" ? j : null;
    }, 20_000);
    expect(done).toMatchObject({ attempts: 1, claim: null });
    expect(Date.parse(done!.updated_at) - claimedAt).toBeGreaterThanOrEqual(CLAIM_MS);
    expect(pullsOf(branch)).toHaveLength(1);
  }, 60_000);
});

describe("readiness runs with several servers", () => {
  let cluster: Cluster;
  beforeAll(async () => {
    cluster = await startCluster(2);
  }, 60_000);
  afterAll(() => cluster?.stop());

  test("a server starting fails the runs of workers nobody has seen, not those of a worker connected elsewhere", async () => {
    const [a, b] = cluster.servers as [TestServer, TestServer];
    const p = await orgWithProject(a);
    const repoUrl = "https://git.example.test/cluster/app.git";
    const added = await a.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/repositories`, { token: p.token, body: { url: repoUrl } });
    expect(added.status).toBe(201);
    const repositoryId = added.body.repository.id as string;
    const live = await makeWorker(a, p.orgId, { name: "live" });
    const c = await ProtocolClient.connect(a, live.credential);
    expect((await workerApi(a, live.credential)("POST", "/worker/repos", { repos: [{ path: "/ws/app", url: repoUrl }] })).status).toBe(200);
    const asked = await a.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/readiness`, { token: p.token, body: {} });
    expect(asked.status).toBe(202);
    await c.next("readiness");
    expect((await workerApi(b, live.credential)("POST", `/worker/readiness/${asked.body.runId}`, { status: "running" })).status).toBe(200);

    // A run of a worker last seen an hour ago, as a crash of every server would leave it.
    const away = await makeWorker(a, p.orgId, { name: "away" });
    const hourAgo = new Date(Date.now() - 3600_000).toISOString();
    await a.core.store.write(
      (function* () {
        yield* run("UPDATE workers SET last_seen_at = ? WHERE id = ?", hourAgo, away.workerId);
        yield* run(
          `INSERT INTO readiness_runs (id, org_id, project_id, repository_id, worker_id, status, requested_by, created_at, updated_at)
            VALUES ('rdy_00away', ?, ?, ?, ?, 'running', '{}', ?, ?)`,
          p.orgId, p.projectId, repositoryId, away.workerId, hourAgo, hourAgo,
        );
      })(),
    );

    const c3 = await cluster.add();
    const status = (id: string) => c3.core.store.read(get<{ status: string; error: string | null }>("SELECT status, error FROM readiness_runs WHERE id = ?", id));
    // The start's sweep fails the away worker's run; the same statement left the connected worker's alone.
    expect(await eventually(async () => ((await status("rdy_00away"))?.status === "failed" ? status("rdy_00away") : null), 10_000)).toMatchObject({
      error: expect.stringContaining("its worker is away"),
    });
    expect(await status(asked.body.runId)).toEqual({ status: "running", error: null });
    const report = { status: "completed", score: 80, checks: [{ id: "tests", passed: true, detail: "ok" }], report: "# fine" };
    expect((await workerApi(c3, live.credential)("POST", `/worker/readiness/${asked.body.runId}`, report)).status).toBe(200);
    const latest = await c3.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/readiness`, { token: p.token });
    expect(latest.body).toMatchObject({ runId: asked.body.runId, status: "completed", score: 80 });
    c.close();
  }, 60_000);

  test("a run asked through one server goes to a worker connected to another, named or chosen", async () => {
    const [a, b] = cluster.servers as [TestServer, TestServer];
    const p = await orgWithProject(a);
    const repoUrl = "https://git.example.test/cluster/elsewhere.git";
    expect((await a.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/repositories`, { token: p.token, body: { url: repoUrl } })).status).toBe(201);
    const w = await makeWorker(a, p.orgId, { name: "on-a" });
    const c = await ProtocolClient.connect(a, w.credential);
    expect((await workerApi(a, w.credential)("POST", "/worker/repos", { repos: [{ path: "/ws/app", url: repoUrl }] })).status).toBe(200);
    // B has no socket of this worker: it knows it is online from the hello A announced and last_seen_at.
    for (const body of [{ workerId: w.workerId }, {}]) {
      const asked = (await eventually(async () => {
        const r = await b.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/readiness`, { token: p.token, body });
        return r.status === 202 ? r : null;
      }, 10_000))!;
      expect(asked.body).toMatchObject({ workerId: w.workerId, status: "queued" });
      const message = await c.next("readiness");
      expect(message).toMatchObject({ runId: asked.body.runId, url: repoUrl });
    }
    c.close();
  }, 60_000);
});
