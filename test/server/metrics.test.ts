// GET /metrics (issue 12, operations 2): Prometheus text for the holder of AO_METRICS_TOKEN only,
// counters moved by real requests, offers, claims, lost attempts and callbacks, gauges read from
// the database at scrape time.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, newOrg } from "../helpers/identity";
import { createTaskApi, FAST, makeWorker, orgWithProject, ProtocolClient, until, workerApi } from "../workers/helpers";
import { deliver, makeIntegration, putInState, Receiver, svcSignature } from "../integrations/fixtures";
import { get, run } from "../../src/db/query";

const TOKEN = "scrape-secret-7f3a9c";
let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ metricsToken: TOKEN, workerTimeouts: FAST, allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [30, 30], timeoutMs: 500 } });
});
afterAll(() => s.stop());

const scrapeAs = (authorization?: string) => fetch(`${s.url}/metrics`, { headers: authorization ? { authorization } : {} });

async function scrape(): Promise<string> {
  const r = await scrapeAs(`Bearer ${TOKEN}`);
  expect(r.status).toBe(200);
  return r.text();
}

/** The sample of `name` whose labels include `labels` (0 when absent, as Prometheus reads a missing counter). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split("\n")) {
    const m = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    if (Object.entries(labels).every(([k, v]) => (m[2] ?? "").includes(`${k}="${v}"`))) return Number(m[3]);
  }
  return 0;
}

const value = async (name: string, labels: Record<string, string> = {}) => sample(await scrape(), name, labels);

describe("who may scrape", () => {
  test("404 in the error format while AO_METRICS_TOKEN is unset", async () => {
    const bare = await startTestServer({ metricsToken: null });
    try {
      const r = await fetch(`${bare.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(r.status).toBe(404);
      expect(await r.json()).toEqual({ error: { code: "not_found", message: expect.any(String) } });
    } finally {
      await bare.stop();
    }
  });

  test.each([
    ["no credential", undefined],
    ["a wrong token", `Bearer ${TOKEN}x`],
    ["a prefix of the token", `Bearer ${TOKEN.slice(0, 6)}`],
    ["another scheme", `Basic ${btoa(`x:${TOKEN}`)}`],
  ])("401 for %s", async (_, authorization) => {
    const r = await scrapeAs(authorization);
    expect(r.status).toBe(401);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe("unauthorized");
  });

  test("a signed-in owner's access token is not the metrics token", async () => {
    const owner = await createAdmin(s);
    expect((await scrapeAs(`Bearer ${owner.accessToken}`)).status).toBe(401);
  });

  test("the token: 200 in Prometheus text format", async () => {
    const r = await scrapeAs(`Bearer ${TOKEN}`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
    const text = await r.text();
    for (const name of ["ao_http_requests_total", "ao_http_request_duration_seconds", "ao_tasks", "ao_queue_depth", "ao_workers_online", "ao_offers_total", "ao_claims_total", "ao_attempts_lost_total", "ao_callback_deliveries_total", "ao_database_size_bytes", ...(onPostgres ? [] : ["ao_database_wal_size_bytes"])]) {
      expect(text).toContain(`# TYPE ${name} `);
    }
  });

  test("documented in the OpenAPI document with its error answers", async () => {
    const doc = (await s.api("GET", "/openapi.json")).body;
    expect(Object.keys(doc.paths["/metrics"].get.responses).sort()).toEqual(["200", "400", "401", "404"]);
    // It takes no query parameter (unknown-queries-elsewhere.test.ts).
    expect((doc.paths["/metrics"].get.parameters ?? []).filter((p: { in: string }) => p.in === "query")).toEqual([]);
  });
});

describe("requests", () => {
  test("counted by method, route pattern and status, with a latency histogram", async () => {
    const owner = await createAdmin(s);
    const labels = { method: "GET", route: "/api/v1/orgs/:orgId/projects", status: "200" };
    const before = await scrape();
    for (let i = 0; i < 3; i++) expect((await s.api("GET", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken })).status).toBe(200);
    expect((await s.api("GET", `/orgs/${owner.orgId}/projects`)).status).toBe(401);
    const after = await scrape();
    expect(sample(after, "ao_http_requests_total", labels) - sample(before, "ao_http_requests_total", labels)).toBe(3);
    expect(sample(after, "ao_http_requests_total", { ...labels, status: "401" }) - sample(before, "ao_http_requests_total", { ...labels, status: "401" })).toBe(1);
    const count = { method: "GET", route: "/api/v1/orgs/:orgId/projects" };
    expect(sample(after, "ao_http_request_duration_seconds_count", count) - sample(before, "ao_http_request_duration_seconds_count", count)).toBe(4);
    // Ids never become labels: one series per route pattern however many orgs ask.
    expect(after).not.toContain(owner.orgId);
  });
});

describe("stored state, read at scrape time", () => {
  test("tasks by status; queue depth and the oldest queued task's age per project", async () => {
    const other = await newOrg(s);
    const p = await orgWithProject(s, other);
    const queuedBefore = await value("ao_tasks", { status: "queued" });
    const a = await createTaskApi(s, p);
    const b = await createTaskApi(s, p);
    // Given a task that entered the queue 90 s ago:
    await s.core.store.write(run("UPDATE tasks SET updated_at = ? WHERE id = ?", new Date(Date.now() - 90_000).toISOString(), a.id));
    const text = await scrape();
    expect(sample(text, "ao_tasks", { status: "queued" }) - queuedBefore).toBe(2);
    const labels = { org: p.orgId, project: p.projectId };
    expect(sample(text, "ao_queue_depth", labels)).toBe(2);
    const age = sample(text, "ao_queue_oldest_age_seconds", labels);
    expect(age).toBeGreaterThanOrEqual(90);
    expect(age).toBeLessThan(120);

    // An emptied queue leaves no stale series behind.
    const cancelled = await value("ao_tasks", { status: "cancelled" });
    for (const id of [a.id, b.id]) {
      expect((await s.api("POST", `/orgs/${p.orgId}/tasks/${id}/actions`, { token: p.token, body: { action: "cancel" } })).status).toBe(200);
    }
    const emptied = await scrape();
    expect(emptied).not.toContain(`project="${p.projectId}"`);
    expect(sample(emptied, "ao_tasks", { status: "cancelled" }) - cancelled).toBe(2);
  });

  // The sizes of ao.db and its write-ahead log: files only SQLite has.
  test.skipIf(onPostgres)("database and WAL file sizes", async () => {
    const text = await scrape();
    const db = sample(text, "ao_database_size_bytes");
    expect(db).toBeGreaterThan(0);
    expect(db).toBe(statSync(join(s.dataDir, "ao.db")).size);
    expect(text).toMatch(/^ao_database_wal_size_bytes \d+$/m);
  });

  test.skipIf(!onPostgres)("on PostgreSQL: the database's size as PostgreSQL counts it, and no WAL file size", async () => {
    const text = await scrape();
    const reported = sample(text, "ao_database_size_bytes");
    const measured = Number((await s.core.store.read(get<{ n: string }>("SELECT pg_database_size(current_database()) AS n")))!.n);
    expect(reported).toBeGreaterThan(1024 * 1024);
    expect(Math.abs(reported - measured)).toBeLessThan(measured / 10);
    expect(text).not.toContain("ao_database_wal_size_bytes");
  });
});

describe("workers", () => {
  test("online workers, offers, claims and a lost attempt", async () => {
    const p = await orgWithProject(s);
    const { workerId, credential } = await makeWorker(s, p.orgId);
    const before = await scrape();
    const client = await ProtocolClient.connect(s, credential);
    try {
      expect(sample(await scrape(), "ao_workers_online") - sample(before, "ao_workers_online")).toBe(1);
      const task = await createTaskApi(s, p);
      const offer = await client.next("offer", (m) => m.taskId === task.id);
      const claim = await workerApi(s, credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
      expect(claim.status).toBe(200);
      const claimed = await scrape();
      expect(sample(claimed, "ao_offers_total") - sample(before, "ao_offers_total")).toBe(1);
      expect(sample(claimed, "ao_claims_total") - sample(before, "ao_claims_total")).toBe(1);
      expect(sample(claimed, "ao_attempts_lost_total") - sample(before, "ao_attempts_lost_total")).toBe(0);

      // The worker goes away holding the attempt: after the offline timeout the attempt is lost.
      client.close();
      await until(async () => (await value("ao_attempts_lost_total")) - sample(before, "ao_attempts_lost_total") === 1, 5000);
      expect(sample(await scrape(), "ao_workers_online") - sample(before, "ao_workers_online")).toBe(0);
      const row = await s.core.store.read(get<{ worker_id: string | null }>("SELECT worker_id FROM tasks WHERE id = ?", task.id));
      expect(row!.worker_id).not.toBe(workerId);
    } finally {
      client.close();
    }
  });
});

describe("callbacks", () => {
  test("a delivered callback, and one whose receiver keeps failing: retrying, then failed", async () => {
    const owner = await createAdmin(s);
    const project = (await orgWithProject(s, owner)).projectId;
    const good = new Receiver();
    const bad = new Receiver();
    bad.answer = () => new Response("down", { status: 503 });
    try {
      const before = await scrape();
      for (const rx of [good, bad]) {
        const i = await makeIntegration(s, owner, { kind: "signed_json", name: `cb-${rx.port}`, projectId: project, callbackUrl: rx.url() });
        const body = JSON.stringify({ title: "t", prompt: "p" });
        const r = await deliver(s, i.id, body, { "x-svc-signature": svcSignature(i.secret, body) });
        expect(r.status).toBe(201);
        await putInState(s, r.body.taskId, "running");
        await putInState(s, r.body.taskId, "completed");
      }
      const delta = async (outcome: string) => (await value("ao_callback_deliveries_total", { outcome })) - sample(before, "ao_callback_deliveries_total", { outcome });
      // Three tries for the failing receiver (two retry delays configured): two retrying, then failed.
      await until(async () => (await delta("failed")) === 1, 5000);
      expect(await delta("delivered")).toBe(1);
      expect(await delta("retrying")).toBe(2);
      expect(bad.requests).toHaveLength(3);
    } finally {
      await Promise.all([good.stop(), bad.stop()]);
    }
  });
});
