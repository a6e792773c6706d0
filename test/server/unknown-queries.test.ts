// A query parameter a route does not declare is refused (src/server/query.ts): before, Elysia
// dropped it, and ?status=failed on a delivery log listed every delivery as if it had filtered.
// 400 validation_failed names the parameter and those the route takes, before any work and after
// the credential check. The audit takes the routes from the server itself, so a route mounted
// later is covered the day it is mounted.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, newOrg, type Session } from "../helpers/identity";
import { makeWorker } from "../workers/helpers";
import { deliver, svcSignature } from "../integrations/fixtures";
import { all } from "../../src/db/query";

let s: TestServer;
let owner: Session;
let stranger: Session;
let worker: string;
let secret: string;
let ids: Record<string, string>;

beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  stranger = await newOrg(s);
  const call = (method: string, path: string, body?: unknown) => s.api(method, `/orgs/${owner.orgId}${path}`, { token: owner.accessToken, body });
  const project = await call("POST", "/projects", { name: "queries", repositories: [{ url: "https://example.com/acme/app.git" }] });
  const task = await call("POST", "/tasks", { projectId: project.body.id, title: "t", prompt: "p" });
  const integration = await call("POST", "/integrations", { kind: "signed_json", name: "ci", projectId: project.body.id });
  const w = await makeWorker(s, owner.orgId);
  worker = w.credential;
  secret = integration.body.secret;
  ids = { orgId: owner.orgId, projectId: project.body.id, repositoryId: project.body.repositories[0].id, taskId: task.body.id, id: integration.body.id, workerId: w.workerId };
});
afterAll(() => s.stop());

const TASKS_TAKE = "limit, cursor, status, projectId, kind, parentId";
const fieldsOf = (body: any): string[] => (body?.error?.details ?? []).map((d: { field: string }) => d.field);
const org = (path: string) => `/orgs/${owner.orgId}${path}`;

// Scenarios: a request with a parameter its route does not take, and the parameters named back.
const SCENARIOS = () => [
  { name: "GET list: the bug's own, a delivery log's state", method: "GET", path: org(`/integrations/${ids.id}/deliveries?state=failed`), unknown: ["state"], takes: "limit, cursor, status" },
  { name: "GET list: a misspelt filter", method: "GET", path: org("/tasks?statuses=queued&limit=5"), unknown: ["statuses"], takes: TASKS_TAKE },
  { name: "GET list: a cache buster", method: "GET", path: org(`/tasks?_=${Date.now()}`), unknown: ["_"], takes: TASKS_TAKE },
  { name: "GET single", method: "GET", path: org(`/tasks/${ids.taskId}?fields=title`), unknown: ["fields"], takes: "none" },
  { name: "POST with a valid body", method: "POST", path: org("/tasks?dryRun=true"), body: { projectId: ids.projectId, title: "not made", prompt: "p" }, unknown: ["dryRun"], takes: "none" },
  { name: "PATCH", method: "PATCH", path: org(`/projects/${ids.projectId}?notify=1`), body: { name: "renamed" }, unknown: ["notify"], takes: "none" },
  { name: "DELETE, two unknown", method: "DELETE", path: org(`/integrations/${ids.id}?force=1&cascade=true`), unknown: ["force", "cascade"], takes: "none" },
];

describe("a parameter the route does not take", () => {
  test("is 400 validation_failed naming it and the parameters the route takes; nothing is made, changed or deleted", async () => {
    const before = await snapshot();
    for (const c of SCENARIOS()) {
      const r = await s.api(c.method, c.path, { token: owner.accessToken, body: c.body });
      const message = `is not a parameter of this route, which takes ${c.takes}`;
      expect([c.name, r.status, r.body.error.code, r.body.error.details]).toEqual([c.name, 400, "validation_failed", c.unknown.map((field) => ({ field, message }))]);
    }
    expect(await snapshot()).toBe(before);
    // The message alone says what to fix (the web app shows it).
    const one = await s.api("GET", org(`/integrations/${ids.id}/deliveries?state=failed`), { token: owner.accessToken });
    expect(one.body.error.message).toBe("the request query is invalid: state is not a parameter of this route, which takes limit, cursor, status");
    // Without the unknown parameter each is answered as before.
    const ok = await s.api("GET", org(`/tasks/${ids.taskId}`), { token: owner.accessToken });
    expect([ok.status, ok.body.id]).toEqual([200, ids.taskId]);
  });

  test("credentials first: no credential, a bad one, or someone of another organization gets 401 / 404, never the query's 400", async () => {
    for (const c of SCENARIOS()) {
      for (const [who, token, status] of [
        ["no credential", undefined, 401],
        ["a malformed token", "aot_nope", 401],
        ["an expired or forged access token", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c3JfeCJ9.c2lnbmF0dXJl", 401],
        ["someone of another organization", stranger.accessToken, 404],
      ] as const) {
        const r = await s.api(c.method, c.path, { token, body: c.body });
        expect([c.name, who, r.status]).toEqual([c.name, who, status]);
      }
    }
  });

  test("a public route refuses it too (sign-in), and a worker protocol route after the worker's credential", async () => {
    const login = await s.api("POST", "/auth/login?next=/tasks", { body: { email: "nobody@example.com", password: "wrong" } });
    expect([login.status, fieldsOf(login.body)]).toEqual([400, ["next"]]);
    const path = "/worker/me?verbose=1";
    expect((await s.api("GET", path, { token: "aow_nope" })).status).toBe(401);
    const mine = await s.api("GET", path, { token: worker });
    expect([mine.status, fieldsOf(mine.body)]).toEqual([400, ["verbose"]]);
  });
});

describe("every route under /api/v1", () => {
  // GitHub's browser redirects take what GitHub adds, and an inbound hook checks its query after its
  // signature (both tested below). The live socket's route only documents it: its upgrades and
  // other requests are answered before the routes (unknown-queries-elsewhere.test.ts, test/live).
  const LEFT_OUT = new Set([
    "GET /api/v1/codehost/app/callback",
    "GET /api/v1/codehost/installations/callback",
    "GET /api/v1/codehost/user/callback",
    "POST /api/v1/hooks/:id",
    "GET /api/v1/ws",
  ]);

  test("refuses ?bogus=1 with the parameters it takes, with the right credential; nothing changes", async () => {
    const routes = (s.app.routes as { method: string; path: string; hooks: Record<string, any> }[]).filter(
      (r) => r.path.startsWith("/api/v1/") && !LEFT_OUT.has(`${r.method} ${r.path}`),
    );
    expect(routes.length).toBeGreaterThanOrEqual(100);
    const before = await snapshot();
    for (const r of routes) {
      const path = r.path.replace("/api/v1", "").replace(/:(\w+)/g, (_, name: string) => ids[name] ?? `${name}_x`);
      const token = path.startsWith("/worker/") && !path.startsWith("/worker/pair") ? worker : owner.accessToken;
      const res = await s.api(r.method, `${path}?bogus=1`, { token });
      const takes = Object.keys(r.hooks?.query?.properties ?? {});
      const message = `is not a parameter of this route, which takes ${takes.length ? takes.join(", ") : "none"}`;
      expect([r.method, r.path, res.status, res.body?.error?.details]).toEqual([r.method, r.path, 400, [{ field: "bogus", message }]]);
    }
    expect(await snapshot()).toBe(before);
  });

  test("GitHub's redirects back ignore what GitHub adds (an OAuth refusal's error, error_description, error_uri)", async () => {
    // The user callback takes `error` itself: a person who declined goes back to the page (codehost/app.test.ts).
    const declined = await fetch(`${s.url}/api/v1/codehost/user/callback?state=nope&error=access_denied&error_description=denied&error_uri=x`, { redirect: "manual" });
    expect([declined.status, declined.headers.get("location")]).toEqual([302, `${s.url}/github?refused=declined`]);
    for (const path of ["/codehost/app/callback", "/codehost/installations/callback"]) {
      // Answered as without them (here: a made-up state, or no app yet), never refused for them.
      const plain = await s.api("GET", `${path}?state=nope`);
      const added = await s.api("GET", `${path}?state=nope&error=access_denied&error_description=denied&error_uri=x`);
      expect([path, added.status, added.body]).toEqual([path, plain.status, plain.body]);
      expect(plain.body.error.code).not.toBe("validation_failed");
    }
  });

  test("an inbound hook: a bad signature is 401 whatever the query; a good one with an unknown parameter is 400 and makes no task", async () => {
    const body = JSON.stringify({ title: "from CI", prompt: "p" });
    const forged = await deliver(s, `${ids.id}?bogus=1`, body, { "x-svc-signature": svcSignature("aos_wrong", body) });
    expect(forged.status).toBe(401);
    const unknownId = await deliver(s, "int_nope?bogus=1", body, { "x-svc-signature": svcSignature(secret, body) });
    expect(unknownId.status).toBe(401);
    const before = await snapshot();
    const signed = await deliver(s, `${ids.id}?bogus=1`, body, { "x-svc-signature": svcSignature(secret, body), "x-svc-delivery": "d-1" });
    expect([signed.status, signed.body.error.code, signed.body.error.details]).toEqual([400, "validation_failed", [{ field: "bogus", message: "is not a parameter of this route, which takes none" }]]);
    expect(await snapshot()).toBe(before);
    // The same delivery without it is taken: the refused one left no trace of its delivery id.
    const taken = await deliver(s, ids.id, body, { "x-svc-signature": svcSignature(secret, body), "x-svc-delivery": "d-1" });
    expect([taken.status, taken.body.status]).toEqual([201, "created"]);
  });
});

async function snapshot() {
  const tables = ["users", "orgs", "memberships", "sessions", "api_tokens", "device_grants", "projects", "repositories", "tasks", "task_events", "integrations", "inbound_keys", "plugins", "deliveries", "codehost_states", "readiness_runs", "worker_mail"];
  return JSON.stringify(await Promise.all(tables.map((t) => s.core.store.read(all(`SELECT * FROM ${t} ORDER BY 1`)))));
}
