// A misspelled field where it would silently change the outcome (a task created at the default
// priority, a PATCH that answers 200 and changes nothing) is refused, naming the field.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { makeWorker } from "../workers/helpers";
import { all } from "../../src/db/query";
import { nestsTooDeep } from "../../src/server/errors";

let s: TestServer;
let owner: Session;
let ids: { projectId: string; repositoryId: string; taskId: string; workerId: string; integrationId: string };

beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  const call = (method: string, path: string, body?: unknown) => s.api(method, `/orgs/${owner.orgId}${path}`, { token: owner.accessToken, body });
  const project = await call("POST", "/projects", { name: "strict" });
  const repo = await call("POST", `/projects/${project.body.id}/repositories`, { url: "https://example.com/acme/app.git" });
  const task = await call("POST", "/tasks", { projectId: project.body.id, title: "t", prompt: "p" });
  const integration = await call("POST", "/integrations", { kind: "github", name: "ci", projectId: project.body.id });
  const worker = await makeWorker(s, owner.orgId);
  ids = {
    projectId: project.body.id,
    repositoryId: repo.body.repository.id,
    taskId: task.body.id,
    workerId: worker.workerId,
    integrationId: integration.body.id,
  };
});
afterAll(() => s.stop());

async function snapshot() {
  const q = (sql: string) => s.core.store.read(all(sql));
  const tables = ["tasks", "projects", "repositories", "workers", "integrations", "users", "sessions", "codehost_states"].map((t) => q(`SELECT * FROM ${t} ORDER BY 1, 2`));
  return JSON.stringify(await Promise.all([...tables, q("SELECT * FROM task_events ORDER BY task_id, seq")]));
}

const rows: [string, string, (i: typeof ids) => string, Record<string, unknown>, string][] = [
  ["task create with 'priorty'", "POST", () => "/tasks", { projectId: "", title: "t", prompt: "p", priorty: "HIGH" }, "priorty"],
  ["task action with 'reasons'", "POST", (i) => `/tasks/${i.taskId}/actions`, { action: "cancel", reasons: "why" }, "reasons"],
  ["project create with 'knowlege'", "POST", () => "/projects", { name: "other", knowlege: "x" }, "knowlege"],
  ["project update with 'nmae'", "PATCH", (i) => `/projects/${i.projectId}`, { nmae: "renamed" }, "nmae"],
  ["repository update with 'branh'", "PATCH", (i) => `/projects/${i.projectId}/repositories/${i.repositoryId}`, { branh: "dev" }, "branh"],
  ["worker update with 'lables'", "PATCH", (i) => `/workers/${i.workerId}`, { lables: ["gpu"] }, "lables"],
  ["integration create with 'callbackURL'", "POST", () => "/integrations", { kind: "signed_json", name: "x", projectId: "", callbackURL: "https://example.com/cb" }, "callbackURL"],
  ["integration update with 'enabeld'", "PATCH", (i) => `/integrations/${i.integrationId}`, { enabeld: false }, "enabeld"],
  ["completion webhook with 'ulr'", "PUT", () => "/plugins/completion-webhook", { ulr: "https://example.com/hook", enabled: true }, "ulr"],
  ["repository split with 'nme'", "POST", (i) => `/projects/${i.projectId}/repositories/${i.repositoryId}/split`, { nme: "typo" }, "nme"],
  ["repository clone with 'wait'", "POST", (i) => `/projects/${i.projectId}/repositories/${i.repositoryId}/clone`, { workerIds: [], wait: true }, "wait"],
  ["readiness with 'workerID'", "POST", (i) => `/projects/${i.projectId}/readiness`, { workerID: "wrk_x" }, "workerID"],
  // Accepted without its project, each repository would have become a project of its own.
  ["discovered accept with 'projectid'", "POST", () => "/discovered/accept", { ids: ["dsc_x"], projectid: "" }, "projectid"],
  ["discovered dismiss with 'forever'", "POST", () => "/discovered/dismiss", { ids: ["dsc_x"], forever: true }, "forever"],
  ["project create with a repository's 'primay'", "POST", () => "/projects", { name: "listed", repositories: [{ url: "https://example.com/a.git" }, { url: "https://example.com/b.git", primay: true }] }, "repositories.1.primay"],
];

describe("unknown fields that would silently change the outcome", () => {
  test.each(rows)("%s: 400 naming the field, nothing changes", async (_name, method, path, body, field) => {
    if ("projectId" in body) body = { ...body, projectId: ids.projectId };
    const before = await snapshot();
    const r = await s.api(method, `/orgs/${owner.orgId}${path(ids)}`, { token: owner.accessToken, body });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
    expect(r.body.error.details.map((d: { field: string }) => d.field)).toEqual([field]);
    expect(await snapshot()).toBe(before);
  });

  test("the same bodies spelled right are accepted", async () => {
    const r = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: owner.accessToken, body: { projectId: ids.projectId, title: "t", prompt: "p", priority: "HIGH" } });
    expect(r.status).toBe(201);
    expect(r.body.priority).toBe("HIGH");
    const w = await s.api("PATCH", `/orgs/${owner.orgId}/workers/${ids.workerId}`, { token: owner.accessToken, body: { labels: ["gpu"] } });
    expect(w.status).toBe(200);
  });
});

// Routes that act on their path alone: a field is a request the route would not honour (approve
// with a role, redeliver to another URL), so it is refused before anything happens.
const actions: [string, (i: typeof ids, org: string) => string][] = [
  ["apply-plan", (i, org) => `/orgs/${org}/tasks/${i.taskId}/apply-plan`],
  ["worker approve", (i, org) => `/orgs/${org}/workers/${i.workerId}/approve`],
  ["integration rotate-secret", (i, org) => `/orgs/${org}/integrations/${i.integrationId}/rotate-secret`],
  ["integration redeliver", (i, org) => `/orgs/${org}/integrations/${i.integrationId}/deliveries/dlv_x/redeliver`],
  ["completion webhook rotate-secret", (_i, org) => `/orgs/${org}/plugins/completion-webhook/rotate-secret`],
  ["completion webhook redeliver", (_i, org) => `/orgs/${org}/plugins/completion-webhook/deliveries/dlv_x/redeliver`],
  ["codehost sync", (_i, org) => `/orgs/${org}/codehost/sync`],
  ["codehost installations", (_i, org) => `/orgs/${org}/codehost/installations`],
  ["codehost user", (_i, org) => `/orgs/${org}/codehost/user`],
  ["logout", () => "/auth/logout"],
  ["2fa setup", () => "/me/2fa/setup"],
  ["admin backup", () => "/admin/backup"],
];

describe("action routes that take no body refuse one with fields", () => {
  test.each(actions)("%s: 400 naming the fields, nothing done", async (_name, path) => {
    const before = await snapshot();
    const r = await s.api("POST", path(ids, owner.orgId), { token: owner.accessToken, body: { dryRun: true, role: "admin" } });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
    expect(r.body.error.message).toBe("unknown fields in the request body: dryRun, role");
    expect(r.body.error.details).toEqual([
      { field: "dryRun", message: "unknown field; this request takes no body fields" },
      { field: "role", message: "unknown field; this request takes no body fields" },
    ]);
    expect(await snapshot()).toBe(before);
    // Credentials first: without them the same body is a 401.
    expect((await s.api("POST", path(ids, owner.orgId), { body: { dryRun: true } })).status).toBe(401);
  });

  test("an empty or absent body still acts", async () => {
    const org = owner.orgId;
    const rotate = `/orgs/${org}/integrations/${ids.integrationId}/rotate-secret`;
    const first = await s.api("POST", rotate, { token: owner.accessToken });
    const second = await s.api("POST", rotate, { token: owner.accessToken, body: {} });
    expect([first.status, second.status]).toEqual([200, 200]);
    expect(second.body.secret).not.toBe(first.body.secret);
    expect((await s.api("POST", `/orgs/${org}/workers/${ids.workerId}/approve`, { token: owner.accessToken, body: {} })).status).toBe(200);
    expect((await s.api("POST", "/me/2fa/setup", { token: owner.accessToken, body: {} })).body.secret).toBeString();
    const other = await s.api("POST", "/auth/login", { body: { email: owner.email, password: owner.password } });
    expect((await s.api("POST", "/auth/logout", { token: other.body.accessToken, body: {} })).status).toBe(204);
    expect((await s.api("GET", "/me", { token: other.body.accessToken })).status).toBe(401);
  });

  test("the OpenAPI document says they take no fields", async () => {
    const doc = (await s.api("GET", "/openapi.json")).body;
    for (const [name, path] of actions) {
      const at = path({ projectId: "{projectId}", repositoryId: "", taskId: "{taskId}", workerId: "{workerId}", integrationId: "{id}" }, "{orgId}").replace("dlv_x", "{deliveryId}");
      const schema = doc.paths[`/api/v1${at}`]?.post?.requestBody?.content?.["application/json"]?.schema;
      expect({ name, additionalProperties: schema?.additionalProperties, properties: schema?.properties }).toEqual({ name, additionalProperties: false, properties: {} });
    }
  });
});

describe("a field that holds an object must be one", () => {
  test.each([["true", true], ["0", 0], ['"x"', "x"], ["[1]", [1]], ["null", null], ["a 300 KB string", "y".repeat(300_000)]] as const)(
    "integration config %s: 400 naming config, the config stays",
    async (_name, config) => {
      const path = `/orgs/${owner.orgId}/integrations/${ids.integrationId}`;
      const set = await s.api("PATCH", `/orgs/${owner.orgId}/integrations/${ids.integrationId}`, { token: owner.accessToken, body: { config: { label: "keep" } } });
      expect(set.body.config).toEqual({ label: "keep" });
      const before = await snapshot();
      const r = await s.api("PATCH", path, { token: owner.accessToken, body: { config } });
      expect(r.status).toBe(400);
      expect(r.body.error.details).toEqual([{ field: "config", message: "Expected object" }]);
      expect(await snapshot()).toBe(before);
    },
  );

  test("an unknown field inside config is named with its path", async () => {
    const r = await s.api("PATCH", `/orgs/${owner.orgId}/integrations/${ids.integrationId}`, { token: owner.accessToken, body: { config: { lable: "x" } } });
    expect(r.status).toBe(400);
    expect(r.body.error.details.map((d: { field: string }) => d.field)).toEqual(["config.lable"]);
  });
});

describe("an optional body that is not valid JSON is refused, not taken for no body", () => {
  test.each([
    ["device sign-in start", "/auth/device/start"],
    ["refresh", "/auth/refresh"],
    ["readiness", "/orgs/ORG/projects/PRJ/readiness"],
    ["repository split", "/orgs/ORG/projects/PRJ/repositories/REP/split"],
    ["GitHub app manifest", "/orgs/ORG/codehost/app/manifest"],
  ])("%s", async (_name, path) => {
    const counts = () => s.core.store.read(all("SELECT (SELECT count(*) FROM device_grants) AS grants, (SELECT count(*) FROM codehost_states) AS states"));
    const before = [await counts(), await snapshot()];
    const url = path.replace("ORG", owner.orgId).replace("PRJ", ids.projectId).replace("REP", ids.repositoryId);
    const r = await s.api("POST", url, { token: owner.accessToken, body: '{"name":' });
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({ code: "validation_failed", message: "the body is not valid JSON" });
    expect([await counts(), await snapshot()]).toEqual(before);
  });

  test("without a body, or with a valid one, device sign-in starts; the body stays in the OpenAPI document", async () => {
    expect((await s.api("POST", "/auth/device/start")).status).toBe(200);
    expect((await s.api("POST", "/auth/device/start", { body: { clientName: "cli" } })).status).toBe(200);
    const doc = (await s.api("GET", "/openapi.json")).body;
    expect(doc.paths["/api/v1/auth/device/start"].post.requestBody.content["application/json"].schema.properties.clientName).toBeDefined();
  });
});

describe("a body nested too deep", () => {
  const nested = (levels: number) => "[".repeat(levels) + "]".repeat(levels);

  test("64 levels are taken, 65 are not (the body itself is the first level)", () => {
    expect(nestsTooDeep(JSON.parse(`{"a":${nested(63)}}`))).toBe(false);
    expect(nestsTooDeep(JSON.parse(`{"a":${nested(64)}}`))).toBe(true);
    expect(nestsTooDeep(JSON.parse(`{"a":[1,{"b":${nested(61)}}],"c":{}}`))).toBe(false);
    expect(nestsTooDeep(JSON.parse(`{"a":[1,{"b":${nested(62)}}],"c":{}}`))).toBe(true);
  });

  test("a project's policy 100,000 levels deep: 400 saying so (it was a 500 from the database's layer), nothing changes", async () => {
    const before = await snapshot();
    const r = await s.api("PATCH", `/orgs/${owner.orgId}/projects/${ids.projectId}`, { token: owner.accessToken, body: `{"policy":{"x":${nested(100_000)}}}` });
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({ code: "validation_failed", message: "the body nests objects and arrays more than 64 levels deep" });
    expect(await snapshot()).toBe(before);
    // Credentials first: without them the same body is a 401.
    expect((await s.api("PATCH", `/orgs/${owner.orgId}/projects/${ids.projectId}`, { body: `{"policy":{"x":${nested(100_000)}}}` })).status).toBe(401);
  });
});

describe("every route's body, by the routes themselves", () => {
  // Read in a process of its own (test/helpers/route-bodies.ts): Elysia marks a shared schema closed
  // when it compiles a route for its first request, so in this one every schema used so far looks closed.
  let routes: { route: string; closed: boolean; optional: boolean; refusesUnknown: boolean; parsesOptional: boolean }[];
  beforeAll(async () => {
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, "../helpers/route-bodies.ts")], { stdout: "pipe", stderr: "inherit", env: { ...process.env } });
    routes = JSON.parse(await new Response(proc.stdout).text());
    expect(await proc.exited).toBe(0);
  });

  test("a route whose body is closed (additionalProperties: false) refuses unknown fields", () => {
    const closed = routes.filter((r) => r.closed);
    expect(closed.length).toBeGreaterThan(15);
    expect(closed.filter((r) => !r.refusesUnknown).map((r) => r.route)).toEqual([]);
  });

  test("a route whose body is optional parses it with parseOptionalJson", () => {
    const optional = routes.filter((r) => r.optional);
    expect(optional.length).toBeGreaterThan(4);
    expect(optional.filter((r) => !r.parsesOptional).map((r) => r.route)).toEqual([]);
  });
});
