// Credentials are checked before bodies (SPEC §1, issue 8 item 1): every route of the OpenAPI
// document that declares a credential answers 401 in the error format to a request without a
// valid one, whatever its body and query, and so learns nothing of the route's schema. An
// authenticated caller without access to the org gets 403/404 before the body is looked at too.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, makeToken, newOrg, type Session } from "../helpers/identity";
import { makeWorker } from "../workers/helpers";
import { newChecksummedToken } from "../../src/lib/tokens";

let s: TestServer;
let owner: Session;
let operations: { method: string; path: string; security: string[]; query: string[]; responses: string[]; body: boolean }[];

beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  const doc = (await s.api("GET", "/openapi.json")).body;
  const globalSecurity = doc.security as Record<string, string[]>[];
  operations = [];
  for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      const security = (op.security ?? globalSecurity) as Record<string, string[]>[];
      const query = (op.parameters ?? []).filter((p: any) => p.in === "query").map((p: any) => p.name as string);
      const responses = Object.keys(op.responses ?? {});
      operations.push({ method: method.toUpperCase(), path, security: security.flatMap((x) => Object.keys(x)), query, responses, body: !!op.requestBody });
    }
  }
});
afterAll(() => s.stop());

// Routes anyone may call. Kept by hand so that a route which loses its credential by mistake
// (and so declares security: []) fails the first test instead of leaving this list quietly.
const PUBLIC = [
  "GET /api/v1/health",
  "POST /api/v1/auth/login",
  "POST /api/v1/auth/refresh",
  "GET /api/v1/setup",
  "POST /api/v1/setup",
  "POST /api/v1/auth/device/start",
  "POST /api/v1/auth/device/poll",
  "POST /api/v1/worker/pair",
  "POST /api/v1/worker/pair/poll",
  "POST /api/v1/hooks/{id}",
  // GitHub's browser redirects: the single-use state made for a signed-in caller is the credential.
  "GET /api/v1/codehost/app/callback",
  "GET /api/v1/codehost/installations/callback",
  "GET /api/v1/codehost/user/callback",
];
// The live socket authenticates at the upgrade or in its first message (test/live); its GET only
// documents the upgrade and answers 400 to anything else.
const SOCKET = "GET /api/v1/ws";
// The metrics route takes its own token and hides itself (404) while AO_METRICS_TOKEN is unset
// (test/server/metrics.test.ts); it reads no body or query.
const METRICS = "GET /metrics";

const key = (o: { method: string; path: string }) => `${o.method} ${o.path}`;
const secured = () => operations.filter((o) => o.security.length > 0 && key(o) !== SOCKET && key(o) !== METRICS);

/** The path with every {param} filled in, and a query that breaks each documented parameter. */
function target(o: (typeof operations)[number], orgId = "org_0000000000000000000000000") {
  const path = o.path.replace("/api/v1", "").replace(/\{(\w+)\}/g, (_, name) => (name === "orgId" ? orgId : `${name}_x`));
  const query = new URLSearchParams([...o.query.map((q): [string, string] => [q, "abc\u0000"]), ["limit", "-1"], ["bogus", "1"]]);
  return `${path}?${query}`;
}

const BODIES = ["[1]", JSON.stringify({ bogus: 1 }), "{not json", "{}"];

async function expectRefused(o: (typeof operations)[number], token: string | undefined, status: number, code: string) {
  for (const body of o.method === "GET" ? [undefined] : BODIES) {
    const r = await s.api(o.method, target(o), { token, body });
    // The route and body in the compared value, so a failure says which one answered what.
    expect({ request: `${key(o)} with ${body ?? "no body"}`, status: r.status, code: r.body?.error?.code }).toEqual({
      request: `${key(o)} with ${body ?? "no body"}`,
      status,
      code,
    });
    expect(typeof r.body.error.message).toBe("string");
  }
}

describe("the OpenAPI document", () => {
  test("declares a credential on every route but the public ones", () => {
    const open = operations.filter((o) => o.security.length === 0).map(key);
    expect(open.sort()).toEqual([...PUBLIC].sort());
    expect(operations.map(key)).toContain(SOCKET);
    expect(secured().length).toBeGreaterThan(60);
  });

  test("every route that takes a credential documents its 401", () => {
    const missing = secured().filter((o) => !o.responses.includes("401")).map(key);
    expect(missing).toEqual([]);
  });

  test("every route that takes a body or a query documents its 400", () => {
    const missing = operations.filter((o) => (o.body || o.query.length > 0) && !o.responses.includes("400")).map(key);
    expect(missing).toEqual([]);
  });

  test("worker routes declare the worker credential, the others the bearer token", () => {
    for (const o of secured()) {
      expect(`${key(o)}: ${o.security.join(",")}`).toBe(`${key(o)}: ${o.path.startsWith("/api/v1/worker/") ? "worker" : "bearer"}`);
    }
  });
});

describe("no valid credential: 401 before the body and query are read", () => {
  test("without a credential", async () => {
    for (const o of secured()) await expectRefused(o, undefined, 401, "unauthorized");
  });

  test("a HEAD request, answered by its GET route: 401 without a credential, whatever its query", async () => {
    const heads = secured().filter((o) => o.method === "GET");
    expect(heads.length).toBeGreaterThan(20);
    for (const o of heads) {
      const r = await fetch(`${s.url}/api/v1${target(o)}`, { method: "HEAD" });
      expect([`HEAD ${o.path}`, r.status]).toEqual([`HEAD ${o.path}`, 401]);
    }
  });

  test("with a made-up API token (well formed, unknown)", async () => {
    const token = newChecksummedToken("aot_");
    for (const o of secured()) await expectRefused(o, token, 401, "unauthorized");
  });

  test("with a made-up worker credential (well formed, unknown, or malformed), on worker routes and the others alike", async () => {
    // On a person's route a real worker's credential is 403 (authz-matrix.test.ts); a made-up one is no credential.
    for (const credential of [newChecksummedToken("aow_"), "aow_garbage", "aow_"]) {
      for (const o of secured()) await expectRefused(o, credential, 401, "unauthorized");
    }
  });

  test("with a revoked API token and a revoked worker credential", async () => {
    const token = await makeToken(s, owner);
    const listed = await s.api("GET", "/me/tokens", { token: owner.accessToken });
    const id = listed.body.items[0].id;
    expect((await s.api("DELETE", `/me/tokens/${id}`, { token: owner.accessToken })).status).toBe(204);
    const task = secured().find((o) => key(o) === "POST /api/v1/orgs/{orgId}/tasks")!;
    await expectRefused(task, token, 401, "unauthorized");

    const { workerId, credential } = await makeWorker(s, owner.orgId);
    expect((await s.api("DELETE", `/orgs/${owner.orgId}/workers/${workerId}`, { token: owner.accessToken })).status).toBeLessThan(300);
    const claim = secured().find((o) => key(o) === "POST /api/v1/worker/tasks/{taskId}/claim")!;
    await expectRefused(claim, credential, 401, "unauthorized");
  });

  test("a valid credential still gets the body's and query's 400", async () => {
    const r = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: owner.accessToken, body: {} });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
    const q = await s.api("GET", `/orgs/${owner.orgId}/tasks?limit=abc`, { token: owner.accessToken });
    expect(q.status).toBe(400);
  });
});

describe("signed in without access: 403/404 before the body", () => {
  test("a viewer creating a task with a wrong body gets 403", async () => {
    const viewer = await addMember(s, owner, "viewer");
    for (const body of BODIES) {
      const r = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: viewer.accessToken, body });
      expect(`${body}: ${r.status} ${r.body.error.code}`).toBe(`${body}: 403 forbidden`);
    }
  });

  test("someone of another org gets 404 for the org, whatever the body or query", async () => {
    const stranger = await newOrg(s);
    for (const body of BODIES) {
      const r = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: stranger.accessToken, body });
      expect(`${body}: ${r.status} ${r.body.error.code}`).toBe(`${body}: 404 not_found`);
    }
    const q = await s.api("GET", `/orgs/${owner.orgId}/tasks?limit=abc&status=bogus`, { token: stranger.accessToken });
    expect(q.status).toBe(404);
  });

  test("a personal API token on another org's route gets 403", async () => {
    const token = await makeToken(s, owner);
    const other = await newOrg(s);
    const r = await s.api("PATCH", `/orgs/${other.orgId}`, { token, body: { nmae: 1 } });
    expect(r.status).toBe(403);
  });
});
