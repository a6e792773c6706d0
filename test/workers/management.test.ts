// Managing workers and the project features that need them, as people and other organizations see
// them: PATCH validation, list pagination, and isolation of every /orgs/:orgId/workers*, clone,
// readiness and discovered route (another org's person, token or worker changes nothing).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeToken, newOrg, type Session } from "../helpers/identity";
import { FAST, ProtocolClient, createTaskApi, makeWorker, orgWithProject, workerApi } from "./helpers";
import { LEASE_HEADER } from "../../src/protocol/requests";
import { all } from "../../src/db/query";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ workerTimeouts: FAST });
});
afterAll(() => s.stop());

async function addRepo(p: { orgId: string; projectId: string; token: string }, url: string) {
  const r = await s.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/repositories`, { token: p.token, body: { url } });
  expect(r.status).toBe(201);
  return r.body.repository.id as string;
}

/**
 * Everything a route of these could change, for before/after comparisons (but a connected worker's
 * last_seen_at, which moves by itself: on PostgreSQL it is written several times a second here).
 */
async function snapshot() {
  const q = (sql: string) => s.core.store.read(all(sql));
  return JSON.stringify(await Promise.all([
    q("SELECT * FROM workers ORDER BY id").then((rows) => rows.map((r) => ({ ...(r as object), last_seen_at: undefined }))),
    q("SELECT * FROM worker_repositories ORDER BY worker_id, repository_id"),
    q("SELECT * FROM discovered_repositories ORDER BY id"),
    q("SELECT * FROM readiness_runs ORDER BY id"),
    q("SELECT * FROM projects ORDER BY id"),
    q("SELECT * FROM repositories ORDER BY id"),
    q("SELECT id, status, attempt, worker_id FROM tasks ORDER BY id"),
  ]));
}

describe("PATCH /orgs/:orgId/workers/:workerId", () => {
  test("name, labels and policy are validated; a refused update changes nothing", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const other = await orgWithProject(s, await newOrg(s));
    const w = await makeWorker(s, p.orgId, { labels: ["linux"] });
    const path = `/orgs/${p.orgId}/workers/${w.workerId}`;
    const before = await snapshot();
    const cases: [string, unknown][] = [
      ["empty name", { name: "" }],
      ["long name", { name: "x".repeat(101) }],
      ["name not text", { name: 7 }],
      ["blank name", { name: "   " }],
      ["name of two lines", { name: "build\n2" }],
      ["labels not a list", { labels: "gpu" }],
      ["label with a space", { labels: ["Has Space"] }],
      ["upper-case label", { labels: ["GPU"] }],
      ["repeated label", { labels: ["gpu", "gpu"] }],
      ["21 labels", { labels: Array.from({ length: 21 }, (_, i) => `l${i}`) }],
      ["policy not an object", { policy: "any" }],
      ["policy a list", { policy: ["a"] }],
      ["policy null", { policy: null }],
      ["policy.projects not a list", { policy: { projects: p.projectId } }],
      ["policy.projects with a number", { policy: { projects: [5] } }],
      ["policy.projects repeated", { policy: { projects: [p.projectId, p.projectId] } }],
      ["unknown project", { policy: { projects: ["prj_nope"] } }],
      ["another org's project", { policy: { projects: [p.projectId, other.projectId] } }],
    ];
    for (const [name, body] of cases) {
      const r = await s.api("PATCH", path, { token: p.token, body });
      expect([name, r.status, r.body?.error?.code]).toEqual([name, 400, "validation_failed"]);
    }
    // A label's refusal names it and says what a label may be, in words.
    const label = await s.api("PATCH", path, { token: p.token, body: { labels: ["gpu", "Has Space"] } });
    expect(label.body.error.details).toEqual([{ field: "labels.1", message: "must be a label: lower-case letters, digits and . _ : -, starting with a letter or digit, up to 50 characters" }]);
    const foreign = await s.api("PATCH", path, { token: p.token, body: { policy: { projects: [other.projectId] } } });
    expect(foreign.body.error.details).toEqual([{ field: "policy.projects.0", message: "no such project in this organization" }]);
    expect(await snapshot()).toBe(before);

    const ok = await s.api("PATCH", path, { token: p.token, body: { name: "  build-2 ", labels: ["gpu", "linux"], policy: { projects: [p.projectId] } } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ name: "build-2", labels: ["gpu", "linux"], policy: { projects: [p.projectId] } });
    // Fields left out keep their values.
    const partial = await s.api("PATCH", path, { token: p.token, body: { labels: ["gpu", "linux"] } });
    expect(partial.body).toMatchObject({ name: "build-2", labels: ["gpu", "linux"], policy: { projects: [p.projectId] } });
    expect((await s.api("PATCH", path, { token: p.token, body: { policy: {} } })).body.policy).toEqual({});
  });
});

describe("GET /orgs/:orgId/workers", () => {
  test("pages newest first with keyset cursors; bad limits and cursors are 400", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await makeWorker(s, p.orgId)).workerId);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r: any = await s.api("GET", `/orgs/${p.orgId}/workers?limit=2${cursor ? `&cursor=${cursor}` : ""}`, { token: p.token });
      expect(r.status).toBe(200);
      expect(r.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.items.map((w: any) => w.id));
      cursor = r.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
    for (const q of ["limit=0", "limit=201", "limit=x", "cursor=garbage"]) {
      expect([q, (await s.api("GET", `/orgs/${p.orgId}/workers?${q}`, { token: p.token })).status]).toEqual([q, 400]);
    }
  });
});

describe("another organization", () => {
  let a: Awaited<ReturnType<typeof orgWithProject>>;
  let b: Awaited<ReturnType<typeof orgWithProject>>;
  let bSession: Session;
  let ids: { worker: string; pending: string; repo: string; discovered: string; bRepo: string; bDiscovered: string; task: string; runId: string };
  let aWorker: Awaited<ReturnType<typeof makeWorker>>;
  let bWorker: Awaited<ReturnType<typeof makeWorker>>;
  let aConn: ProtocolClient;

  beforeAll(async () => {
    a = await orgWithProject(s, await newOrg(s));
    bSession = await newOrg(s);
    b = await orgWithProject(s, bSession);
    aWorker = await makeWorker(s, a.orgId);
    const pending = await makeWorker(s, a.orgId, { approved: false });
    bWorker = await makeWorker(s, b.orgId);
    const repo = await addRepo(a, "https://git.example.test/a/app.git");
    const bRepo = await addRepo(b, "https://git.example.test/b/app.git");
    // A's worker has A's repository and found another; B's worker found one of its own.
    aConn = await ProtocolClient.connect(s, aWorker.credential);
    const report = await workerApi(s, aWorker.credential)("POST", "/worker/repos", {
      repos: [
        { path: "/ws/app", url: "https://git.example.test/a/app.git" },
        { path: "/ws/found", url: "https://git.example.test/a/found.git" },
      ],
    });
    expect(report.body).toEqual({ known: 1, discovered: 1 });
    await workerApi(s, bWorker.credential)("POST", "/worker/repos", { repos: [{ path: "/ws/b", url: "https://git.example.test/b/found.git" }] });
    const run = await s.api("POST", `/orgs/${a.orgId}/projects/${a.projectId}/readiness`, { token: a.token, body: {} });
    expect(run.status).toBe(202);
    const discovered = (await s.api("GET", `/orgs/${a.orgId}/discovered`, { token: a.token })).body.items[0].id;
    const bDiscovered = (await s.api("GET", `/orgs/${b.orgId}/discovered`, { token: b.token })).body.items[0].id;
    // A queued task of A's that nobody may claim (A's worker is at capacity with nothing: pause it out of offers).
    const task = await createTaskApi(s, a);
    ids = { worker: aWorker.workerId, pending: pending.workerId, repo, discovered, bRepo, bDiscovered, task: task.id, runId: run.body.runId };
  });
  afterAll(() => aConn?.close());

  const routes = (org: string, body = true) =>
    [
      ["GET", `/orgs/${org}/workers`],
      ["GET", `/orgs/${org}/workers/${ids.worker}`],
      ["PATCH", `/orgs/${org}/workers/${ids.worker}`, { name: "taken" }],
      ["POST", `/orgs/${org}/workers/${ids.pending}/approve`],
      ["DELETE", `/orgs/${org}/workers/${ids.worker}`],
      ["POST", `/orgs/${org}/projects/${a.projectId}/repositories/${ids.repo}/clone`, { workerIds: [ids.worker] }],
      ["GET", `/orgs/${org}/projects/${a.projectId}/repositories/${ids.repo}/clones`],
      ["POST", `/orgs/${org}/projects/${a.projectId}/readiness`, { workerId: ids.worker }],
      ["GET", `/orgs/${org}/projects/${a.projectId}/readiness`],
      ["POST", `/orgs/${org}/discovered/accept`, { ids: [ids.discovered] }],
      ["POST", `/orgs/${org}/discovered/dismiss`, { ids: [ids.discovered] }],
    ].map(([method, path, b]) => [method, path, body ? b : undefined] as [string, string, unknown]);

  test("A's paths with B's session (404), B's token (403) or B's worker credential (403): nothing changes", async () => {
    const before = await snapshot();
    const bToken = await makeToken(s, bSession);
    for (const [who, token, status] of [
      ["B's session", bSession.accessToken, 404],
      ["B's token", bToken, 403],
      ["B's worker", bWorker.credential, 403],
    ] as const) {
      for (const [method, path, body] of routes(a.orgId)) {
        const r = await s.api(method, path, { token, body });
        expect([who, method, path, r.status]).toEqual([who, method, path, status]);
      }
    }
    expect(await snapshot()).toBe(before);
  });

  test("B's own paths naming A's workers, projects, repositories and discovered ids: 404 or 400, nothing changes", async () => {
    const before = await snapshot();
    const cases: [string, string, unknown, number][] = [
      ...routes(b.orgId).map(([m, p, body]) => [m, p, body, 404] as [string, string, unknown, number]).filter(([, p]) => !p.endsWith("/workers")),
      // B's own repository and project, but A's worker: not a worker of this organization.
      ["POST", `/orgs/${b.orgId}/projects/${b.projectId}/repositories/${ids.bRepo}/clone`, { workerIds: [ids.worker] }, 400],
      ["POST", `/orgs/${b.orgId}/projects/${b.projectId}/readiness`, { workerId: ids.worker }, 400],
      // B's discovered repository into A's project.
      ["POST", `/orgs/${b.orgId}/discovered/accept`, { ids: [ids.bDiscovered], projectId: a.projectId }, 404],
    ];
    for (const [method, path, body, status] of cases) {
      const r = await s.api(method, path, { token: b.token, body });
      expect([method, path, r.status]).toEqual([method, path, status]);
    }
    expect((await s.api("GET", `/orgs/${b.orgId}/workers`, { token: b.token })).body.items.map((w: any) => w.id)).toEqual([bWorker.workerId]);
    expect(await snapshot()).toBe(before);
  });

  test("B's worker on the protocol routes with A's task, repository and readiness run: 404, nothing changes", async () => {
    const before = await snapshot();
    const api = workerApi(s, bWorker.credential);
    const cases: [string, string, unknown][] = [
      ["POST", `/worker/tasks/${ids.task}/claim`, { offerId: "ofr_x" }],
      ["POST", `/worker/tasks/${ids.task}/transition`, { leaseToken: "x", to: "failed" }],
      ["POST", `/worker/tasks/${ids.task}/events`, { leaseToken: "x", events: [{ seq: 1, type: "log", data: {} }] }],
      ["POST", `/worker/clones/${ids.repo}`, { ok: true, path: "/tmp/x" }],
      ["POST", `/worker/readiness/${ids.runId}`, { status: "failed", error: "no" }],
    ];
    for (const [method, path, body] of cases) {
      const r = await api(method, path, body);
      expect([method, path, r.status]).toEqual([method, path, 404]);
    }
    const upload = await fetch(`${s.url}/api/v1/worker/tasks/${ids.task}/artifacts/x.txt`, {
      method: "PUT",
      headers: { authorization: `Bearer ${bWorker.credential}`, [LEASE_HEADER]: "x" },
      body: "x",
    });
    expect(upload.status).toBe(404);
    expect(await snapshot()).toBe(before);
  });
});

describe("clone", () => {
  test("a worker that is away gets the clone at its next hello, and at every hello until it reports", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const repo = await addRepo(p, "https://git.example.test/c/app.git");
    const w = await makeWorker(s, p.orgId);
    const r = await s.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/repositories/${repo}/clone`, { token: p.token, body: { workerIds: [w.workerId, w.workerId] } });
    expect(r.status).toBe(202);
    expect(r.body.workers).toEqual([{ workerId: w.workerId, status: "cloning", delivered: false }]);
    const first = await ProtocolClient.connect(s, w.credential);
    expect(await first.next("clone")).toMatchObject({ repositoryId: repo, projectId: p.projectId, url: "https://git.example.test/c/app.git", branch: "main", name: "app" });
    first.close();
    const second = await ProtocolClient.connect(s, w.credential);
    await second.next("clone");
    expect((await workerApi(s, w.credential)("POST", `/worker/clones/${repo}`, { ok: true, path: "/ws/app" })).body).toEqual({ status: "cloned" });
    second.close();
    const third = await ProtocolClient.connect(s, w.credential);
    expect(await third.quiet("clone", 300)).toBe(true);
    third.close();
    const statuses = await s.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/repositories/${repo}/clones`, { token: p.token });
    expect(statuses.body.items).toMatchObject([{ workerId: w.workerId, status: "cloned", path: "/ws/app", error: null }]);
    expect(statuses.body.nextCursor).toBeNull();
  });

  test("who has it is a list in pages by worker, like every list: limit and cursor checked", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const repo = await addRepo(p, "https://git.example.test/c/paged.git");
    const workers = [];
    for (let i = 0; i < 3; i++) workers.push((await makeWorker(s, p.orgId)).workerId);
    expect((await s.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/repositories/${repo}/clone`, { token: p.token, body: { workerIds: workers } })).status).toBe(202);
    const clones = (query: string) => s.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/repositories/${repo}/clones${query}`, { token: p.token });
    const first = await clones("?limit=2");
    expect(first.body.items.map((c: { workerId: string }) => c.workerId)).toEqual([...workers].sort().slice(0, 2));
    const rest = await clones(`?limit=2&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect(rest.body).toEqual({ items: [expect.objectContaining({ workerId: [...workers].sort()[2], status: "cloning" })], nextCursor: null });
    for (const bad of ["?limit=0", "?limit=201", "?cursor=zzz"]) expect([bad, (await clones(bad)).status]).toEqual([bad, 400]);
  });
});

describe("readiness", () => {
  test("a named worker must have the project and be online (409 otherwise); without one, an online holder is chosen", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const url = "https://git.example.test/r/app.git";
    await addRepo(p, url);
    const online = await makeWorker(s, p.orgId);
    const offline = await makeWorker(s, p.orgId);
    const without = await makeWorker(s, p.orgId);
    for (const w of [online, offline]) await workerApi(s, w.credential)("POST", "/worker/repos", { repos: [{ path: "/ws/app", url }] });
    const ask = (body: unknown) => s.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/readiness`, { token: p.token, body });
    expect((await ask({})).status).toBe(409); // nobody who has it is online
    const c = await ProtocolClient.connect(s, online.credential);
    const offlineRun = await ask({ workerId: offline.workerId });
    expect(offlineRun.status).toBe(409);
    expect(offlineRun.body.error.message).toContain("offline");
    expect((await ask({ workerId: without.workerId })).status).toBe(409);
    const any = await ask({});
    expect(any.status).toBe(202);
    expect(any.body.workerId).toBe(online.workerId);
    expect((await c.next("readiness")).runId).toBe(any.body.runId);
    const named = await ask({ workerId: online.workerId });
    expect(named.status).toBe(202);
    c.close();
  });
});

describe("GET /orgs/:orgId/discovered", () => {
  test("pages through every new repository even when some between were added to projects meanwhile", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const w = await makeWorker(s, p.orgId);
    const urls = Array.from({ length: 5 }, (_, i) => `https://git.example.test/d/r${i}.git`);
    // Reported one by one so their ids (and the list order) follow the URLs.
    const all: { path: string; url: string }[] = [];
    for (const [i, url] of urls.entries()) {
      all.push({ path: `/ws/r${i}`, url });
      await workerApi(s, w.credential)("POST", "/worker/repos", { repos: all });
    }
    await addRepo(p, urls[3]);
    await addRepo(p, urls[2]);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const r: any = await s.api("GET", `/orgs/${p.orgId}/discovered?limit=1${cursor ? `&cursor=${cursor}` : ""}`, { token: p.token });
      seen.push(...r.body.items.map((d: any) => d.url));
      cursor = r.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([urls[4], urls[1], urls[0]]);
  });
});
