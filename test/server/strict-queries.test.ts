// Query parameters are read strictly on every route that declares its query (src/server/query.ts):
// an integer is plain decimal digits ("1e1", "0x10", "+10", " 10", "10.0" and "" were read as
// numbers, or as 0), and a parameter that is not a list is given once (a repeat silently took the
// last value). The audit below takes the routes from the server itself, so a new list route is
// covered the day it is mounted. A parameter a route does not declare: test/server/unknown-queries.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { all } from "../../src/db/query";
import { queryKinds, type QueryKind } from "../../src/server/query";

let s: TestServer;
let owner: Session;
let ids: Record<string, string>;

beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  const call = (method: string, path: string, body?: unknown) => s.api(method, `/orgs/${owner.orgId}${path}`, { token: owner.accessToken, body });
  const project = await call("POST", "/projects", { name: "queries", repositories: [{ url: "https://example.com/acme/app.git" }] });
  const task = await call("POST", "/tasks", { projectId: project.body.id, title: "t", prompt: "p" });
  const integration = await call("POST", "/integrations", { kind: "signed_json", name: "ci", projectId: project.body.id });
  ids = { orgId: owner.orgId, projectId: project.body.id, repositoryId: project.body.repositories[0].id, taskId: task.body.id, id: integration.body.id };
});
afterAll(() => s.stop());

type Schema = Record<string, any>;
interface QueryRoute {
  method: string;
  path: string;
  schema: Schema;
  kinds: Record<string, QueryKind>;
  public: boolean;
}

/** Every route that declares a query, from the running server. */
function queryRoutes(): QueryRoute[] {
  const routes = s.app.routes as { method: string; path: string; hooks: Record<string, any> }[];
  return routes.flatMap((r) => {
    const kinds = queryKinds(r.hooks?.query);
    // Public: declared so, or the reference page's own files (hidden from the document).
    const open = r.hooks.detail?.security?.length === 0 || r.hooks.detail?.hide === true;
    return kinds ? [{ method: r.method, path: r.path, schema: r.hooks.query, kinds, public: open }] : [];
  });
}

/** The route's path with this test's ids in place of its parameters. */
function pathOf(route: QueryRoute): string {
  return route.path.replace(/:(\w+)/g, (_, name: string) => {
    if (!(name in ids)) throw new Error(`${route.path}: no id for :${name} in this test`);
    return ids[name]!;
  });
}

/** A valid value of a parameter: a repeat of it must be refused for the repeat alone. */
function validValue(schema: Schema): string {
  const members = (schema.anyOf as Schema[] | undefined) ?? [schema];
  const integer = members.find((m) => m.type === "integer");
  if (integer) return String(integer.minimum ?? 1);
  if (members.some((m) => m.type === "boolean")) return "true";
  if (Array.isArray(schema.enum)) return String(schema.enum[0]);
  const consts = members.filter((m) => m.const !== undefined);
  if (consts.length) return String(consts[0]!.const);
  return "x";
}

const fieldsOf = (body: any): string[] => (body?.error?.details ?? []).map((d: { field: string }) => d.field);
const get = (route: QueryRoute, query: string, opts: { anonymous?: boolean } = {}) =>
  s.api(route.method, `${pathOf(route).replace(/^\/api\/v1/, "")}?${query}`, { token: opts.anonymous ? undefined : owner.accessToken });

const LOOSE_INTEGERS = ["1e1", "10.0", "+10", "%2B10", "0x10", "%2010", "10%20", "", "-0", "1.5", "１０"];

describe("every route that declares a query", () => {
  test("the routes are found, and each parameter is of a kind the check knows: an integer, a list or one value", () => {
    const routes = queryRoutes();
    expect(routes.length).toBeGreaterThanOrEqual(19);
    for (const r of routes) {
      for (const [name, kind] of Object.entries(r.kinds)) {
        const schema = r.schema.properties[name] as Schema;
        const members = (schema.anyOf as Schema[] | undefined) ?? [schema];
        // A number that is not an integer (or another type) would need its own rule in query.ts.
        const known = kind !== "value" || members.every((m) => m.type === "string" || m.type === "boolean" || m.const !== undefined);
        expect([r.method, r.path, name, known]).toEqual([r.method, r.path, name, true]);
      }
      // No route defines a repeatable (list) parameter today; one that does keeps its repeats.
      expect(Object.values(r.kinds)).not.toContain("list");
    }
  });

  test("a repeated parameter is 400 naming it, on each route, whatever its value; nothing changes", async () => {
    const before = await snapshot();
    for (const r of queryRoutes()) {
      for (const name of Object.keys(r.kinds)) {
        const v = encodeURIComponent(validValue(r.schema.properties[name]));
        const res = await get(r, `${name}=${v}&${name}=${v}`);
        expect([r.path, name, res.status, res.body?.error?.code, fieldsOf(res.body)]).toEqual([r.path, name, 400, "validation_failed", [name]]);
        expect(res.body.error.details[0].message).toBe("must be given once: it is not a list");
      }
    }
    expect(await snapshot()).toBe(before);
  });

  test("an integer parameter in anything but decimal digits is 400 naming it; in digits it is read", async () => {
    let integers = 0;
    for (const r of queryRoutes()) {
      for (const [name, kind] of Object.entries(r.kinds)) {
        if (kind !== "integer") continue;
        integers++;
        for (const loose of LOOSE_INTEGERS) {
          const res = await get(r, `${name}=${loose === "１０" ? encodeURIComponent(loose) : loose}`);
          expect([r.path, name, loose, res.status, fieldsOf(res.body)]).toEqual([r.path, name, loose, 400, [name]]);
          expect(res.body.error.details[0].message).toEndWith(", in decimal digits only");
        }
        const digits = await get(r, `${name}=10`);
        expect([r.path, name, fieldsOf(digits.body)]).toEqual([r.path, name, []]);
        // Leading zeros are still decimal digits.
        expect([r.path, name, fieldsOf((await get(r, `${name}=010`)).body)]).toEqual([r.path, name, []]);
      }
    }
    expect(integers).toBeGreaterThanOrEqual(15);
  });

  test("credentials are checked first: without one, a bad query is 401 on every route that needs a credential", async () => {
    for (const r of queryRoutes().filter((r) => !r.public)) {
      const name = Object.keys(r.kinds)[0]!;
      const res = await get(r, `${name}=1e1&${name}=2`, { anonymous: true });
      expect([r.path, res.status]).toEqual([r.path, 401]);
    }
  });
});

test("the OpenAPI document types each integer query parameter as an integer alone, with its range (no string of default 0)", async () => {
  const doc = (await s.api("GET", "/openapi.json")).body;
  const integers = Object.entries(doc.paths as Record<string, Record<string, { parameters?: { name: string; in: string; schema: Schema }[] }>>).flatMap(([path, ops]) =>
    Object.values(ops).flatMap((op) => (op.parameters ?? []).filter((p) => p.in === "query" && JSON.stringify(p.schema).includes('"integer"')).map((p) => [path, p.name, p.schema] as const)),
  );
  expect(integers.length).toBeGreaterThanOrEqual(15);
  for (const [path, name, schema] of integers) {
    expect([path, name, schema.type, schema.anyOf, typeof schema.minimum]).toEqual([path, name, "integer", undefined, "number"]);
  }
  const limit = doc.paths["/api/v1/orgs/{orgId}/members"].get.parameters.find((p: { name: string }) => p.name === "limit").schema;
  expect(limit).toEqual({ type: "integer", minimum: 1, maximum: 200, default: 50 });
});

describe("on a list", () => {
  test("limit=1e1 is no longer 10: 400, and limit=10 lists 10 of 12", async () => {
    for (let i = 0; i < 11; i++) await s.api("POST", `/orgs/${owner.orgId}/tasks`, { token: owner.accessToken, body: { projectId: ids.projectId, title: `t${i}`, prompt: "p" } });
    const loose = await s.api("GET", `/orgs/${owner.orgId}/tasks?limit=1e1`, { token: owner.accessToken });
    expect(loose.status).toBe(400);
    expect(loose.body.error).toEqual({
      code: "validation_failed",
      message: "the request query is invalid: limit must be an integer from 1 to 200, in decimal digits only",
      details: [{ field: "limit", message: "must be an integer from 1 to 200, in decimal digits only" }],
    });
    const page = await s.api("GET", `/orgs/${owner.orgId}/tasks?limit=10`, { token: owner.accessToken });
    expect([page.status, page.body.items.length, typeof page.body.nextCursor]).toEqual([200, 10, "string"]);
  });

  test("several faulty parameters are named together, a parameter the route does not declare among them (once, repeated or not)", async () => {
    const r = await s.api("GET", `/orgs/${owner.orgId}/tasks?status=queued&status=running&limit=0x10&utm=a&utm=b`, { token: owner.accessToken });
    expect([r.status, fieldsOf(r.body)]).toEqual([400, ["status", "limit", "utm"]]);
  });

  test("a timeline's after in digits, repeated, or as an exponent", async () => {
    const path = `/orgs/${owner.orgId}/tasks/${ids.taskId}/events`;
    expect((await s.api("GET", `${path}?after=0`, { token: owner.accessToken })).status).toBe(200);
    for (const q of ["after=0&after=1", "after=1e0", "after="]) {
      const r = await s.api("GET", `${path}?${q}`, { token: owner.accessToken });
      expect([q, r.status, fieldsOf(r.body)]).toEqual([q, 400, ["after"]]);
    }
  });
});

async function snapshot() {
  const q = (sql: string) => s.core.store.read(all(sql));
  return JSON.stringify(await Promise.all(["tasks", "projects", "codehost_states", "task_events"].map((t) => q(`SELECT * FROM ${t} ORDER BY 1`))));
}
