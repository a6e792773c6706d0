// The delivery log keeps every try (issue 8, item 9): a loopback receiver that fails, times out,
// then answers; GET .../deliveries/:deliveryId shows each try (when, status code or error,
// latency) and the body, the list shows the last 5; the history is bounded to the last 20 tries;
// the route is scoped to the org and integration and needs settings.manage like the list.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { openDatabase } from "../../src/db";
import { embeddedMigrations } from "../../src/db/migrations.macro";
import { get } from "../../src/db/query";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { deliver, eventually, makeIntegration, makeWorld, putInState, receiversStoppedAfterEach, sleep, svcSignature, type World } from "./fixtures";

let s: TestServer;
let w: World;
const receiver = receiversStoppedAfterEach();

beforeAll(async () => {
  s = await startTestServer({ allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [100, 200, 300], timeoutMs: 1000 } });
  w = await makeWorld(s);
});
afterAll(() => s.stop());

async function integrationWithTask(server: TestServer, world: World, url: string) {
  const i = await makeIntegration(server, world.owner, { kind: "signed_json", name: "CI", projectId: world.projectId, callbackUrl: url });
  const body = JSON.stringify({ title: "Flaky receiver", prompt: "x", ref: "run-9" });
  const r = await deliver(server, i.id, body, { "x-svc-signature": svcSignature(i.secret, body) });
  expect(r.status).toBe(201);
  await putInState(server, r.body.taskId, "running");
  await putInState(server, r.body.taskId, "completed");
  return i;
}

const base = (server: TestServer, world: World, integrationId: string) => `/orgs/${world.owner.orgId}/integrations/${integrationId}/deliveries`;
const list = async (server: TestServer, world: World, integrationId: string) =>
  (await server.api("GET", base(server, world, integrationId), { token: world.owner.accessToken })).body.items;

describe("each try is kept", () => {
  test("500, a timeout, then 200: three tries with when, status or error and latency; the list shows them too; a redelivery adds the 4th", async () => {
    const rx = receiver();
    rx.answer = async (_, n) => {
      if (n === 1) return new Response("down", { status: 500 });
      if (n === 2) await sleep(1300);
      return new Response("ok");
    };
    const i = await integrationWithTask(s, w, rx.url());
    const [d] = await eventually(async () => {
      const items = await list(s, w, i.id);
      return items[0]?.status === "succeeded" ? items : null;
    });
    const got = await s.api("GET", `${base(s, w, i.id)}/${d.id}`, { token: w.owner.accessToken });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: d.id, status: "succeeded", attempts: 3, lastStatusCode: 200, body: rx.requests[0].body });
    const tries = got.body.tries;
    expect(tries.map((t: any) => [t.attempt, t.outcome, t.statusCode])).toEqual([
      [3, "succeeded", 200],
      [2, "retrying", null],
      [1, "retrying", 500],
    ]);
    expect(tries[0].error).toBeNull();
    expect(tries[1].error).toContain("timed out after 1000 ms");
    expect(tries[1].latencyMs).toBeGreaterThanOrEqual(990);
    expect(tries[2].error).toBe("HTTP 500");
    for (const t of tries) expect(t.latencyMs).toBeNumber();
    // Each try's time is when it ended, after its request reached the receiver.
    for (const [k, t] of [...tries].reverse().entries()) expect(Date.parse(t.at)).toBeGreaterThanOrEqual(rx.requests[k].at - 5);
    expect(Date.parse(tries[0].at)).toBeGreaterThan(Date.parse(tries[1].at));
    expect(d.recentTries).toEqual(tries);

    const again = await s.api("POST", `${base(s, w, i.id)}/${d.id}/redeliver`, { token: w.owner.accessToken });
    expect(again.status).toBe(202);
    const after = await eventually(async () => {
      const r = await s.api("GET", `${base(s, w, i.id)}/${d.id}`, { token: w.owner.accessToken });
      return r.body.attempts === 4 && r.body.status === "succeeded" ? r.body : null;
    });
    expect(after.tries.map((t: any) => t.attempt)).toEqual([4, 3, 2, 1]);
    expect(after.tries[0]).toMatchObject({ outcome: "succeeded", statusCode: 200 });
  });

  test("gave up: the last try says failed and why", async () => {
    const rx = receiver();
    rx.answer = () => new Response("nope", { status: 502 });
    const i = await integrationWithTask(s, w, rx.url());
    const [d] = await eventually(async () => {
      const items = await list(s, w, i.id);
      return items[0]?.status === "failed" ? items : null;
    });
    expect(d.recentTries.map((t: any) => [t.attempt, t.outcome, t.statusCode])).toEqual([
      [4, "failed", 502],
      [3, "retrying", 502],
      [2, "retrying", 502],
      [1, "retrying", 502],
    ]);
    expect(d.recentTries[0].error).toContain("gave up after 4 tries");
  });
});

describe("?status= filters the log", () => {
  test("failed lists only the delivery given up on, succeeded only the other, and paging keeps the filter; an unknown status is 400", async () => {
    const rx = receiver();
    rx.answer = (req) => new Response(JSON.parse(req.body).title === "Healthy" ? "ok" : "nope", { status: JSON.parse(req.body).title === "Healthy" ? 200 : 502 });
    const i = await makeIntegration(s, w.owner, { kind: "signed_json", name: "Filtered CI", projectId: w.projectId, callbackUrl: rx.url() });
    const taskIds: Record<string, string> = {};
    for (const title of ["Broken", "Healthy", "Broken again"]) {
      const body = JSON.stringify({ title, prompt: "x" });
      const r = await deliver(s, i.id, body, { "x-svc-signature": svcSignature(i.secret, body) });
      taskIds[title] = r.body.taskId;
      await putInState(s, r.body.taskId, "running");
      await putInState(s, r.body.taskId, "completed");
    }
    const all = await eventually(async () => {
      const items = await list(s, w, i.id);
      return items.length === 3 && items.every((d: any) => d.status === "succeeded" || d.status === "failed") ? items : null;
    });
    const byStatus = async (query: string) => {
      const r = await s.api("GET", `${base(s, w, i.id)}?${query}`, { token: w.owner.accessToken });
      expect([query, r.status]).toEqual([query, 200]);
      return r.body;
    };
    expect((await byStatus("status=failed")).items.map((d: any) => d.taskId)).toEqual([taskIds["Broken again"], taskIds["Broken"]]);
    expect((await byStatus("status=succeeded")).items.map((d: any) => d.taskId)).toEqual([taskIds["Healthy"]]);
    expect((await byStatus("status=pending")).items).toEqual([]);
    // A page of one, then the next from its cursor: still the failed ones only.
    const first = await byStatus("status=failed&limit=1");
    const second = await byStatus(`status=failed&limit=1&cursor=${encodeURIComponent(first.nextCursor)}`);
    expect([...first.items, ...second.items].map((d: any) => d.taskId)).toEqual([taskIds["Broken again"], taskIds["Broken"]]);
    expect(second.nextCursor).toBeNull();
    expect(all.map((d: any) => d.taskId)).toEqual([taskIds["Broken again"], taskIds["Healthy"], taskIds["Broken"]]);
    const bad = await s.api("GET", `${base(s, w, i.id)}?status=lost`, { token: w.owner.accessToken });
    expect([bad.status, bad.body.error.code, bad.body.error.details.map((d: any) => d.field)]).toEqual([400, "validation_failed", ["status"]]);
  });

  test("the completion webhook's log takes the same filter", async () => {
    const rx = receiver();
    rx.answer = () => new Response("nope", { status: 502 });
    const path = `/orgs/${w.owner.orgId}/plugins/completion-webhook`;
    expect((await s.api("PUT", path, { token: w.owner.accessToken, body: { url: rx.url("/done") } })).status).toBe(201);
    try {
      const t = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { projectId: w.projectId, title: "filtered", prompt: "x" } });
      await putInState(s, t.body.id, "running");
      await putInState(s, t.body.id, "completed");
      const [d] = await eventually(async () => {
        const items = (await s.api("GET", `${path}/deliveries?status=failed`, { token: w.owner.accessToken })).body.items;
        return items.length ? items : null;
      });
      expect(d.taskId).toBe(t.body.id);
      expect((await s.api("GET", `${path}/deliveries?status=succeeded`, { token: w.owner.accessToken })).body.items).toEqual([]);
    } finally {
      await s.api("DELETE", path, { token: w.owner.accessToken });
    }
  });
});

describe("bounded", () => {
  test("25 tries: the delivery counts 25, keeps the last 20 (6..25), the list shows the last 5", async () => {
    const many = await startTestServer({ allowPrivateCallbacks: true, callbacks: { retryDelaysMs: Array(24).fill(5), timeoutMs: 1000 } });
    try {
      const world = await makeWorld(many);
      const rx = receiver();
      rx.answer = () => new Response("down", { status: 500 });
      const i = await integrationWithTask(many, world, rx.url());
      const [d] = await eventually(async () => {
        const items = await list(many, world, i.id);
        return items[0]?.status === "failed" ? items : null;
      }, 25_000); // 25 tries written one by one: over 15 s on PostgreSQL under load
      expect(d.attempts).toBe(25);
      expect(d.recentTries.map((t: any) => t.attempt)).toEqual([25, 24, 23, 22, 21]);
      const got = (await many.api("GET", `${base(many, world, i.id)}/${d.id}`, { token: world.owner.accessToken })).body;
      expect(got.tries.map((t: any) => t.attempt)).toEqual(Array.from({ length: 20 }, (_, k) => 25 - k));
      const stored = (await many.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM delivery_tries WHERE delivery_id = ?", d.id)))!;
      expect(stored.n).toBe(20);
    } finally {
      await many.stop();
    }
  }, 45_000);
});

describe("GET .../deliveries/:deliveryId: scoping and permission", () => {
  test("404 for an unknown id, another integration's delivery or another org; 403 for a member without settings.manage; 401 without a credential", async () => {
    const rx = receiver();
    const i = await integrationWithTask(s, w, rx.url());
    const [d] = await eventually(async () => {
      const items = await list(s, w, i.id);
      return items[0]?.status === "succeeded" ? items : null;
    });
    const sibling = await makeIntegration(s, w.owner, { kind: "signed_json", name: "Other CI", projectId: w.projectId });
    const theirs = await makeIntegration(s, w.other, { kind: "signed_json", name: "Their CI", projectId: w.otherProjectId });
    for (const [path, token, status, code] of [
      [`${base(s, w, i.id)}/dlv_nope`, w.owner.accessToken, 404, "not_found"],
      [`${base(s, w, sibling.id)}/${d.id}`, w.owner.accessToken, 404, "not_found"],
      [`/orgs/${w.other.orgId}/integrations/${theirs.id}/deliveries/${d.id}`, w.other.accessToken, 404, "not_found"],
      [`/orgs/${w.other.orgId}/integrations/${i.id}/deliveries/${d.id}`, w.other.accessToken, 404, "not_found"],
      // Not a member of the org: the org itself is not found.
      [`${base(s, w, i.id)}/${d.id}`, w.other.accessToken, 404, "not_found"],
      [`${base(s, w, i.id)}/${d.id}`, w.member.accessToken, 403, "forbidden"],
      [`${base(s, w, i.id)}/${d.id}`, undefined, 401, "unauthorized"],
    ] as [string, string | undefined, number, string][]) {
      const r = await s.api("GET", path, { token });
      expect([path, r.status, r.body?.error?.code]).toEqual([path, status, code]);
    }
  });

  test("the completion webhook's deliveries have the same detail", async () => {
    const rx = receiver();
    rx.answer = (_, n) => new Response(n === 1 ? "down" : "ok", { status: n === 1 ? 500 : 200 });
    const path = `/orgs/${w.owner.orgId}/plugins/completion-webhook`;
    expect((await s.api("PUT", path, { token: w.owner.accessToken, body: { url: rx.url("/done") } })).status).toBe(201);
    try {
      const t = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { projectId: w.projectId, title: "by hand", prompt: "x" } });
      await putInState(s, t.body.id, "running");
      await putInState(s, t.body.id, "completed");
      const [d] = await eventually(async () => {
        const items = (await s.api("GET", `${path}/deliveries`, { token: w.owner.accessToken })).body.items;
        return items[0]?.status === "succeeded" ? items : null;
      });
      const got = await s.api("GET", `${path}/deliveries/${d.id}`, { token: w.owner.accessToken });
      expect(got.body.tries.map((x: any) => [x.attempt, x.statusCode])).toEqual([
        [2, 200],
        [1, 500],
      ]);
      expect((await s.api("GET", `${path}/deliveries/${d.id}`, { token: w.member.accessToken })).status).toBe(403);
    } finally {
      await s.api("DELETE", path, { token: w.owner.accessToken });
    }
  });

  test("documented in the OpenAPI document with its error answers", async () => {
    const doc = (await s.api("GET", "/openapi.json")).body;
    for (const p of ["/api/v1/orgs/{orgId}/integrations/{id}/deliveries/{deliveryId}", "/api/v1/orgs/{orgId}/plugins/completion-webhook/deliveries/{deliveryId}"]) {
      const op = doc.paths[p]?.get;
      expect(op).toBeDefined();
      expect(op.responses["200"].content["application/json"].schema.properties.tries).toBeDefined();
      for (const status of ["401", "403", "404"]) expect(op.responses[status]?.content?.["application/json"]?.schema?.required).toEqual(["error"]);
    }
  });
});

describe("upgrade", () => {
  // The upgrade of an SQLite file by its own migrations; PostgreSQL's schema starts with the tries table.
  test.skipIf(onPostgres)("deliveries tried before the tries table existed keep their last try as the start of their history", () => {
    const dir = mkdtempSync(join(tmpdir(), "ao-tries-"));
    try {
      const file = join(dir, "ao.db");
      // A database as the previous version left it: the migrations before delivery_tries, applied the way openDatabase does.
      const db = new Database(file, { create: true, strict: true });
      db.exec("CREATE TABLE __drizzle_migrations (id INTEGER PRIMARY KEY AUTOINCREMENT, hash text NOT NULL, created_at numeric)");
      const all = embeddedMigrations();
      for (const m of all.slice(0, all.findIndex((m) => m.tag === "0006_delivery_tries"))) {
        for (const statement of m.sql) if (statement.trim()) db.exec(statement);
        db.query("INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)").run(m.hash, m.folderMillis);
      }
      db.exec("INSERT INTO orgs (id, name, created_at, updated_at) VALUES ('org_1', 'o', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')");
      const insert = db.query(
        `INSERT INTO deliveries (id, org_id, target_type, target_id, task_id, event, payload, status, attempts, round_attempts, next_attempt_at,
           last_status_code, last_error, last_latency_ms, last_attempt_at, created_at, updated_at)
         VALUES (?, 'org_1', 'integration', 'int_1', 'tsk_1', 'completed', '{}', ?, ?, ?, 0, ?, ?, ?, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')`,
      );
      insert.run("dlv_ok", "succeeded", 2, 2, 200, null, 12, "2026-01-01T00:01:00.000Z");
      insert.run("dlv_retry", "pending", 1, 1, 503, "HTTP 503", 30, "2026-01-01T00:02:00.000Z");
      insert.run("dlv_new", "pending", 0, 0, null, null, null, null);
      db.close();

      const upgraded = openDatabase(file).$client;
      const rows = upgraded.query<any, []>("SELECT * FROM delivery_tries ORDER BY delivery_id").all();
      upgraded.close();
      expect(rows).toEqual([
        { delivery_id: "dlv_ok", attempt: 2, at: "2026-01-01T00:01:00.000Z", outcome: "succeeded", status_code: 200, error: null, latency_ms: 12 },
        { delivery_id: "dlv_retry", attempt: 1, at: "2026-01-01T00:02:00.000Z", outcome: "retrying", status_code: 503, error: "HTTP 503", latency_ms: 30 },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
