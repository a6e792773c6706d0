// The OpenAPI document describes every task, project and live route completely: a summary and a
// tag, every path parameter, the query of the lists, the JSON body of every write, the success
// answer's schema and the error answers. The task record's schema names the fields of SPEC §5.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin } from "../helpers/identity";

let s: TestServer;
let doc: any;
beforeAll(async () => {
  s = await startTestServer();
  doc = (await s.api("GET", "/openapi.json")).body;
});
afterAll(() => s.stop());

// [method, path, tag, body?, query params, success status, errors documented]
const ROUTES: [string, string, string, boolean, string[], string, string[]][] = [
  ["post", "/orgs/{orgId}/tasks", "tasks", true, [], "201", ["400", "401", "403", "404", "409"]],
  ["get", "/orgs/{orgId}/tasks", "tasks", false, ["limit", "cursor", "status", "projectId", "kind", "parentId"], "200", ["400", "401", "403", "404"]],
  ["get", "/orgs/{orgId}/tasks/{taskId}", "tasks", false, [], "200", ["401", "403", "404"]],
  ["get", "/orgs/{orgId}/tasks/{taskId}/events", "tasks", false, ["after", "cursor", "limit"], "200", ["400", "401", "403", "404"]],
  ["post", "/orgs/{orgId}/tasks/{taskId}/actions", "tasks", true, [], "200", ["400", "401", "403", "404", "409"]],
  ["get", "/orgs/{orgId}/tasks/{taskId}/artifacts/{name}", "tasks", false, [], "200", ["400", "401", "403", "404"]],
  ["post", "/orgs/{orgId}/tasks/{taskId}/apply-plan", "tasks", false, [], "201", ["400", "401", "403", "404", "409"]],
  ["get", "/orgs/{orgId}/projects", "projects", false, ["limit", "cursor", "archived"], "200", ["400", "401", "403", "404"]],
  ["post", "/orgs/{orgId}/projects", "projects", true, [], "201", ["400", "401", "403", "409"]],
  ["get", "/orgs/{orgId}/projects/{projectId}", "projects", false, [], "200", ["401", "403", "404"]],
  ["patch", "/orgs/{orgId}/projects/{projectId}", "projects", true, [], "200", ["400", "401", "403", "404", "409"]],
  ["delete", "/orgs/{orgId}/projects/{projectId}", "projects", false, [], "200", ["401", "403", "404"]],
  ["post", "/orgs/{orgId}/projects/{projectId}/repositories", "projects", true, [], "201", ["400", "401", "403", "404", "409"]],
  ["patch", "/orgs/{orgId}/projects/{projectId}/repositories/{repositoryId}", "projects", true, [], "200", ["400", "401", "403", "404", "409"]],
  ["delete", "/orgs/{orgId}/projects/{projectId}/repositories/{repositoryId}", "projects", false, [], "200", ["401", "403", "404", "409"]],
  ["post", "/orgs/{orgId}/projects/{projectId}/repositories/{repositoryId}/split", "projects", true, [], "201", ["400", "401", "403", "404", "409"]],
];

describe("every task and project route is documented", () => {
  for (const [method, path, tag, body, query, ok, errors] of ROUTES) {
    test(`${method.toUpperCase()} ${path}`, () => {
      const op = doc.paths[`/api/v1${path}`]?.[method];
      expect(op).toBeDefined();
      expect(op.summary?.length).toBeGreaterThan(5);
      expect(op.tags).toContain(tag);
      const params = (op.parameters ?? []) as { in: string; name: string }[];
      for (const name of [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1])) {
        expect(params.some((p) => p.in === "path" && p.name === name)).toBe(true);
      }
      expect(params.filter((p) => p.in === "query").map((p) => p.name).sort()).toEqual([...query].sort());
      if (body) {
        // An object, or (add a repository / move one in) a choice of objects.
        const schema = op.requestBody?.content?.["application/json"]?.schema;
        const variants = schema?.anyOf ?? [schema];
        expect(variants.map((v: { type?: string }) => v?.type)).toEqual(variants.map(() => "object"));
      }
      else if (method !== "post") expect(op.requestBody).toBeUndefined();
      const success = op.responses[ok];
      expect(success).toBeDefined();
      const schema = success.content?.["application/json"]?.schema ?? success.content?.["application/octet-stream"]?.schema;
      expect(schema).toBeDefined();
      for (const status of errors) {
        expect([status, op.responses[status]?.content?.["application/json"]?.schema?.required]).toEqual([status, ["error"]]);
      }
    });
  }

  test("the live socket is described, with its messages", () => {
    const op = doc.paths["/api/v1/ws"].get;
    expect(op.summary).toContain("WebSocket");
    for (const word of ["subscribe", "task.updated", "task.event", "auth", "forbidden"]) expect(op.description).toContain(word);
  });
});

describe("schemas", () => {
  const SPEC_TASK_FIELDS = [
    "id", "orgId", "projectId", "title", "prompt", "priority", "kind", "review", "status", "attempt", "workerId", "parentId",
    "createdBy", "summary", "needs", "plan", "artifacts", "createdAt", "updatedAt", "startedAt", "finishedAt",
  ];

  test("the task record: the fields of SPEC §5 (and source, where an integration's task came from; worker, the named workerId; agent, usage, allowanceUsd and waitingReason of issue 10; failureReason, why a failed task failed; changes, what an ordinary task changed; pullRequest, its pull request at GitHub), all present in every answer", () => {
    const task = doc.paths["/api/v1/orgs/{orgId}/tasks/{taskId}"].get.responses["200"].content["application/json"].schema;
    // The create's answer is the same record (documented there as TypeBox writes it, nullable fields as anyOf).
    const created = doc.paths["/api/v1/orgs/{orgId}/tasks"].post.responses["201"].content["application/json"].schema;
    expect([Object.keys(created.properties).sort(), [...created.required].sort()]).toEqual([Object.keys(task.properties).sort(), [...task.required].sort()]);
    const extra = ["source", "worker", "agent", "usage", "allowanceUsd", "waitingReason", "failureReason", "changes", "pullRequest"];
    expect(Object.keys(task.properties).sort()).toEqual([...SPEC_TASK_FIELDS, ...extra].sort());
    expect([...task.required].sort()).toEqual([...SPEC_TASK_FIELDS, ...extra].sort());
    expect(task.properties.needs.properties.kind.enum).toEqual(["input", "approval", "budget"]);
    expect(Object.keys(task.properties.changes.properties).sort()).toEqual(["additions", "base", "branch", "commit", "deletions", "files", "pushed"]);
    expect(Object.keys(task.properties.pullRequest.properties).sort()).toEqual(["draft", "headBranch", "number", "repository", "reviewUrl", "state", "url"]);
    expect(task.properties.pullRequest.properties.state.enum).toEqual(["open", "closed", "merged"]);
    expect(task.properties.status.enum).toEqual(["queued", "running", "paused", "needs_input", "needs_approval", "completed", "failed", "cancelled"]);
    expect(task.properties.priority.enum).toEqual(["LOW", "MEDIUM", "HIGH", "URGENT"]);
    expect(task.properties.kind.enum).toEqual(["task", "review", "plan"]);
    expect(task.properties.createdBy.properties.type.enum).toEqual(["user", "token", "integration", "plan", "app"]);
    expect(Object.keys(task.properties.createdBy.properties).sort()).toEqual(["id", "name", "type"]);
    expect(Object.keys(task.properties.worker.properties).sort()).toEqual(["id", "name"]);
    expect(Object.keys(task.properties.artifacts.items.properties).sort()).toEqual(["attempt", "contentType", "createdAt", "name", "size"]);
    // A page holds the same records.
    const page = doc.paths["/api/v1/orgs/{orgId}/tasks"].get.responses["200"].content["application/json"].schema;
    expect(Object.keys(page.properties).sort()).toEqual(["items", "nextCursor"]);
    expect(Object.keys(page.properties.items.items.properties).sort()).toEqual(Object.keys(task.properties).sort());
  });

  test("the create and action bodies", () => {
    const create = doc.paths["/api/v1/orgs/{orgId}/tasks"].post.requestBody.content["application/json"].schema;
    expect([...create.required].sort()).toEqual(["projectId", "prompt", "title"]);
    expect(create.properties.title).toMatchObject({ minLength: 1, maxLength: 200 });
    expect(create.properties.prompt).toMatchObject({ minLength: 1, maxLength: 100_000 });
    const action = doc.paths["/api/v1/orgs/{orgId}/tasks/{taskId}/actions"].post.requestBody.content["application/json"].schema;
    expect(action.required).toEqual(["action"]);
    expect(action.properties.action.enum).toEqual(["pause", "resume", "cancel", "retry", "restart", "input", "approve", "deny"]);
    expect(action.properties.reason.description).toContain("2,000");
  });

  test("events: {seq, type, at, actor?, data}", () => {
    const page = doc.paths["/api/v1/orgs/{orgId}/tasks/{taskId}/events"].get.responses["200"].content["application/json"].schema;
    const event = page.properties.items.items;
    expect(Object.keys(event.properties).sort()).toEqual(["actor", "at", "data", "seq", "type"]);
    expect([...event.required].sort()).toEqual(["at", "data", "seq", "type"]);
    expect(Object.keys(event.properties.actor.properties).sort()).toEqual(["id", "name", "type"]);
  });

  test("adding a repository: {url, name?, branch?} or {fromProjectId, repositoryId}", () => {
    const body = doc.paths["/api/v1/orgs/{orgId}/projects/{projectId}/repositories"].post.requestBody.content["application/json"].schema;
    expect(body.oneOf.map((v: { required: string[] }) => v.required)).toEqual([["url"], ["fromProjectId", "repositoryId"]]);
    expect(Object.keys(body.properties).sort()).toEqual(["branch", "fromProjectId", "name", "repositoryId", "url"]);
  });

  test("an integer is an integer everywhere: no answer, body or parameter documents one as a string", () => {
    // Elysia's t.Integer is "a string of format integer, default 0, or an integer" (to coerce a query's
    // text); answers documented with it would make a client generated from the document take a string.
    const strings: string[] = [];
    const walk = (node: unknown, at: string) => {
      if (!node || typeof node !== "object") return;
      const n = node as Record<string, unknown>;
      if (n.type === "string" && n.format === "integer") strings.push(at);
      for (const [k, v] of Object.entries(n)) walk(v, `${at}/${k}`);
    };
    walk(doc.paths, "");
    expect(strings).toEqual([]);
    const attempt = doc.paths["/api/v1/orgs/{orgId}/tasks/{taskId}"].get.responses["200"].content["application/json"].schema.properties.attempt;
    expect(attempt).toMatchObject({ type: "integer" });
  });

  test("the project record: SPEC §8's fields", () => {
    const project = doc.paths["/api/v1/orgs/{orgId}/projects/{projectId}"].get.responses["200"].content["application/json"].schema;
    expect(Object.keys(project.properties).sort()).toEqual(["archived", "createdAt", "id", "knowledge", "name", "orgId", "policy", "repositories", "updatedAt"]);
    expect(Object.keys(project.properties.repositories.items.properties).sort()).toEqual(["branch", "id", "name", "primary", "url"]);
  });
});

test("every answer of the API carries every field of the record", async () => {
  // The schema above is what the server sends: a created task's keys are the schema's.
  const owner = await createAdmin(s);
  const project = await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: "p" } });
  const task = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: owner.accessToken, body: { projectId: project.body.id, title: "t", prompt: "p" } });
  const schema = doc.paths["/api/v1/orgs/{orgId}/tasks"].post.responses["201"].content["application/json"].schema;
  expect(Object.keys(task.body).sort()).toEqual(Object.keys(schema.properties).sort());
  const listed = await s.api("GET", `/orgs/${owner.orgId}/tasks`, { token: owner.accessToken });
  expect(Object.keys(listed.body.items[0]).sort()).toEqual(Object.keys(schema.properties).sort());
});
