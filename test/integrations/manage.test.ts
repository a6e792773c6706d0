// Integration management (SPEC §9): the secret shown once, settings.manage only, org scoping,
// validation of kinds, projects and callback targets (private addresses refused by default).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, makeToken, newOrg } from "../helpers/identity";
import { all, get, run } from "../../src/db/query";
import { makeIntegration, makeProject, makeWorld, type World } from "./fixtures";

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer({ allowPrivateCallbacks: false });
  w = await makeWorld(s);
});
afterAll(() => s.stop());

const base = () => `/orgs/${w.owner.orgId}/integrations`;

describe("create", () => {
  test.each(["github", "gitlab", "signed_json"] as const)("%s: 201 with the secret once; afterwards only its last 4", async (kind) => {
    // label and command are for github and gitlab only (a signed JSON integration refuses them).
    const config = kind === "signed_json" ? {} : { label: "ai" };
    const r = await s.api("POST", base(), { token: w.owner.accessToken, body: { kind, name: `My ${kind}`, projectId: w.projectId, config } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ kind, name: `My ${kind}`, projectId: w.projectId, enabled: true, callbackUrl: null, config });
    expect(r.body.id).toStartWith("int_");
    expect(r.body.secret).toMatch(/^aos_[0-9A-Za-z]{40}$/);
    expect(r.body.secretLast4).toBe(r.body.secret.slice(-4));
    expect(r.body.hookUrl).toBe(`${s.core.config.publicUrl}/api/v1/hooks/${r.body.id}`);

    const got = await s.api("GET", `${base()}/${r.body.id}`, { token: w.owner.accessToken });
    expect(got.status).toBe(200);
    expect(got.body.secret).toBeUndefined();
    expect(got.body.secretLast4).toBe(r.body.secretLast4);
    const list = await s.api("GET", base(), { token: w.owner.accessToken });
    expect(JSON.stringify(list.body)).not.toContain(r.body.secret);
    expect(list.body.items.map((i: any) => i.id)).toContain(r.body.id);

    // At rest the secret is sealed, not stored in clear.
    const row = await s.core.store.read(get<any>("SELECT * FROM integrations WHERE id = ?", r.body.id));
    expect(JSON.stringify(row)).not.toContain(r.body.secret);
    expect(s.core.sealer.open(row.secret_sealed)).toBe(r.body.secret);
  });

  const bad: [string, Record<string, unknown>, string][] = [
    ["unknown kind", { kind: "bitbucket", name: "x" }, "kind"],
    ["empty name", { kind: "github", name: "" }, "name"],
    ["no project", { kind: "github", name: "x", projectId: undefined }, "projectId"],
    ["another org's project", { kind: "github", name: "x", projectId: "OTHER" }, "projectId"],
    ["callback on github", { kind: "github", name: "x", callbackUrl: "https://hooks.example.test/cb" }, "callbackUrl"],
    ["callback not a URL", { kind: "signed_json", name: "x", callbackUrl: "not a url" }, "callbackUrl"],
    ["callback ftp", { kind: "signed_json", name: "x", callbackUrl: "ftp://hooks.example.test/cb" }, "callbackUrl"],
    ["callback with credentials", { kind: "signed_json", name: "x", callbackUrl: "https://u:p@hooks.example.test/cb" }, "callbackUrl"],
    ["empty label", { kind: "github", name: "x", config: { label: "" } }, "config.label"],
  ];
  test.each(bad)("%s -> 400 validation_failed naming the field", async (_, body, field) => {
    const full = { projectId: w.projectId, ...body };
    if (full.projectId === "OTHER") full.projectId = w.otherProjectId;
    const r = await s.api("POST", base(), { token: w.owner.accessToken, body: full });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
    expect(JSON.stringify(r.body.error.details)).toContain(field);
  });

  const privateTargets = [
    "http://127.0.0.1:8080/cb",
    "http://127.1.2.3/cb",
    "http://localhost:3000/cb",
    "http://api.localhost/cb",
    "http://10.1.2.3/cb",
    "http://172.16.0.1/cb",
    "http://192.168.1.1/cb",
    "http://169.254.169.254/latest/meta-data/",
    "http://0.0.0.0/cb",
    "http://[::1]/cb",
    "http://[fe80::1]/cb",
    "http://[fd00:ec2::254]/cb",
    "http://[::ffff:127.0.0.1]/cb",
    "http://2130706433/cb", // 127.0.0.1 as one number
    "http://0x7f.1/cb",
    "http://localhost./cb", // the fully qualified name
    "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/", // 169.254.169.254 through NAT64
  ];
  test.each(privateTargets)("callback %s is refused while private callbacks are not allowed", async (url) => {
    const r = await s.api("POST", base(), { token: w.owner.accessToken, body: { kind: "signed_json", name: "ci", projectId: w.projectId, callbackUrl: url } });
    expect(r.status).toBe(400);
    expect(r.body.error.details[0]).toMatchObject({ field: "callbackUrl" });
    expect(r.body.error.message).toContain("private");
  });

  test("a public-looking callback host is accepted (checked again on its resolved address at delivery)", async () => {
    const r = await s.api("POST", base(), {
      token: w.owner.accessToken,
      body: { kind: "signed_json", name: "ci", projectId: w.projectId, callbackUrl: "https://hooks.example.test/ao" },
    });
    expect(r.status).toBe(201);
    expect(r.body.callbackUrl).toBe("https://hooks.example.test/ao");
  });
});

describe("who may manage integrations", () => {
  test("a member (no settings.manage) gets 403 on every route", async () => {
    const i = await makeIntegration(s, w.owner, { kind: "github", name: "gh", projectId: w.projectId });
    const t = w.member.accessToken;
    const cases: [string, string, unknown?][] = [
      ["GET", base()],
      ["POST", base(), { kind: "github", name: "x", projectId: w.projectId }],
      ["GET", `${base()}/${i.id}`],
      ["PATCH", `${base()}/${i.id}`, { enabled: false }],
      ["POST", `${base()}/${i.id}/rotate-secret`],
      ["DELETE", `${base()}/${i.id}`],
      ["GET", `${base()}/${i.id}/deliveries`],
      ["GET", `/orgs/${w.owner.orgId}/plugins/completion-webhook`],
      ["PUT", `/orgs/${w.owner.orgId}/plugins/completion-webhook`, { url: "https://hooks.example.test/x" }],
    ];
    for (const [method, path, body] of cases) {
      const r = await s.api(method, path, { token: t, body });
      expect(`${method} ${path} ${r.status}`).toBe(`${method} ${path} 403`);
      expect(r.body.error.code).toBe("forbidden");
    }
  });

  test("without credentials: 401", async () => {
    const r = await s.api("GET", base());
    expect(r.status).toBe(401);
  });

  test("another org's owner sees 404, never the integration", async () => {
    const i = await makeIntegration(s, w.owner, { kind: "github", name: "gh", projectId: w.projectId });
    const t = w.other.accessToken;
    for (const [method, path, body] of [
      ["GET", `/orgs/${w.other.orgId}/integrations/${i.id}`],
      ["PATCH", `/orgs/${w.other.orgId}/integrations/${i.id}`, { enabled: false }],
      ["POST", `/orgs/${w.other.orgId}/integrations/${i.id}/rotate-secret`],
      ["DELETE", `/orgs/${w.other.orgId}/integrations/${i.id}`],
      ["GET", `/orgs/${w.other.orgId}/integrations/${i.id}/deliveries`],
    ] as [string, string, unknown?][]) {
      const r = await s.api(method, path, { token: t, body });
      expect(`${method} ${r.status}`).toBe(`${method} 404`);
    }
    const list = await s.api("GET", `/orgs/${w.other.orgId}/integrations`, { token: t });
    expect(list.body.items.map((x: any) => x.id)).not.toContain(i.id);
    // And through our org's path they are not a member: 404 for the org.
    const r = await s.api("GET", `${base()}/${i.id}`, { token: t });
    expect(r.status).toBe(404);
  });
});

describe("another organization's people and tokens, on every route", () => {
  test("403 or 404, and nothing in the organization changes", async () => {
    const owner = await newOrg(s);
    const projectId = await makeProject(s, owner, "guarded");
    const member = await addMember(s, owner, "member");
    const outsider = await newOrg(s); // owns another org
    const dual = await newOrg(s); // owns another org and is a plain member here
    await s.api("POST", `/orgs/${owner.orgId}/members`, { token: owner.accessToken, body: { email: dual.email, role: "member" } });
    const outsiderToken = await makeToken(s, outsider);
    const dualToken = await makeToken(s, dual); // for the org they own

    const i = await makeIntegration(s, owner, { kind: "signed_json", name: "ci", projectId });
    const plugin = await s.api("PUT", `/orgs/${owner.orgId}/plugins/completion-webhook`, { token: owner.accessToken, body: { url: "https://hooks.example.test/done" } });
    expect(plugin.status).toBe(201);
    // The outsider has a completion webhook of their own, so their plugin routes get past "no plugin".
    await s.api("PUT", `/orgs/${outsider.orgId}/plugins/completion-webhook`, { token: outsider.accessToken, body: { url: "https://hooks.example.test/theirs" } });
    const now = new Date().toISOString();
    const addDelivery = (id: string, type: string, target: string) =>
      s.core.store.write(
        run(
          "INSERT INTO deliveries (id, org_id, target_type, target_id, task_id, event, payload, status, attempts, round_attempts, next_attempt_at, created_at, updated_at) VALUES (?, ?, ?, ?, 'tsk_x', 'completed', '{}', 'failed', 8, 8, 0, ?, ?)",
          id, owner.orgId, type, target, now, now,
        ),
      );
    await addDelivery("dlv_guarded_int", "integration", i.id);
    await addDelivery("dlv_guarded_plg", "plugin", plugin.body.id);

    const snapshot = async () =>
      JSON.stringify([
        await s.core.store.read(all("SELECT * FROM integrations WHERE org_id = ? ORDER BY id", owner.orgId)),
        await s.core.store.read(all("SELECT * FROM plugins WHERE org_id = ?", owner.orgId)),
        await s.core.store.read(all("SELECT * FROM deliveries WHERE org_id = ? ORDER BY id", owner.orgId)),
      ]);
    const before = await snapshot();

    const ours = `/orgs/${owner.orgId}`;
    const routes: [string, string, unknown?][] = [
      ["GET", `${ours}/integrations`],
      ["POST", `${ours}/integrations`, { kind: "github", name: "x", projectId }],
      ["GET", `${ours}/integrations/${i.id}`],
      ["PATCH", `${ours}/integrations/${i.id}`, { enabled: false, name: "taken" }],
      ["POST", `${ours}/integrations/${i.id}/rotate-secret`],
      ["DELETE", `${ours}/integrations/${i.id}`],
      ["GET", `${ours}/integrations/${i.id}/deliveries`],
      ["POST", `${ours}/integrations/${i.id}/deliveries/dlv_guarded_int/redeliver`],
      ["GET", `${ours}/plugins/completion-webhook`],
      ["PUT", `${ours}/plugins/completion-webhook`, { url: "https://evil.example.test/" }],
      ["POST", `${ours}/plugins/completion-webhook/rotate-secret`],
      ["DELETE", `${ours}/plugins/completion-webhook`],
      ["GET", `${ours}/plugins/completion-webhook/deliveries`],
      ["POST", `${ours}/plugins/completion-webhook/deliveries/dlv_guarded_plg/redeliver`],
    ];
    const callers: [string, string, number][] = [
      ["a member without settings.manage", member.accessToken, 403],
      ["an owner of another org who is a member here", dual.accessToken, 403],
      ["that person's token for their own org", dualToken, 403],
      ["an owner of another org", outsider.accessToken, 404],
      ["that owner's token", outsiderToken, 403],
    ];
    for (const [who, token, status] of callers) {
      for (const [method, path, body] of routes) {
        const r = await s.api(method, path, { token, body });
        expect(`${who}: ${method} ${path} -> ${r.status} ${r.body?.error?.code}`).toBe(`${who}: ${method} ${path} -> ${status} ${status === 403 ? "forbidden" : "not_found"}`);
      }
    }
    // Our ids through the outsider's own org: not found there.
    const theirs = `/orgs/${outsider.orgId}`;
    for (const [method, path, body] of [
      ["GET", `${theirs}/integrations/${i.id}`],
      ["PATCH", `${theirs}/integrations/${i.id}`, { enabled: false }],
      ["POST", `${theirs}/integrations/${i.id}/rotate-secret`],
      ["DELETE", `${theirs}/integrations/${i.id}`],
      ["GET", `${theirs}/integrations/${i.id}/deliveries`],
      ["POST", `${theirs}/integrations/${i.id}/deliveries/dlv_guarded_int/redeliver`],
      ["POST", `${theirs}/plugins/completion-webhook/deliveries/dlv_guarded_plg/redeliver`],
    ] as [string, string, unknown?][]) {
      for (const token of [outsider.accessToken, outsiderToken]) {
        const r = await s.api(method, path, { token, body });
        expect(`${method} ${path} -> ${r.status}`).toBe(`${method} ${path} -> 404`);
      }
    }
    const theirLog = await s.api("GET", `${theirs}/plugins/completion-webhook/deliveries`, { token: outsider.accessToken });
    expect(theirLog.body.items).toEqual([]);
    expect(await snapshot()).toBe(before);
  });
});

describe("change, rotate, delete", () => {
  test("PATCH changes name, enabled, config and project; kind cannot be changed", async () => {
    const i = await makeIntegration(s, w.owner, { kind: "gitlab", name: "gl", projectId: w.projectId });
    const p2 = (await s.api("POST", `/orgs/${w.owner.orgId}/projects`, { token: w.owner.accessToken, body: { name: "second" } })).body.id;
    const refused = await s.api("PATCH", `${base()}/${i.id}`, { token: w.owner.accessToken, body: { name: "renamed", kind: "github" } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.details).toEqual([expect.objectContaining({ field: "kind" })]);
    expect((await s.api("GET", `${base()}/${i.id}`, { token: w.owner.accessToken })).body).toMatchObject({ kind: "gitlab", name: "gl" });
    const r = await s.api("PATCH", `${base()}/${i.id}`, {
      token: w.owner.accessToken,
      body: { name: "GitLab main", enabled: false, config: { label: "agent", command: "/agent" }, projectId: p2 },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ kind: "gitlab", name: "GitLab main", enabled: false, config: { label: "agent", command: "/agent" }, projectId: p2 });
    expect(r.body.secret).toBeUndefined();
  });

  test("PATCH callbackUrl: refused on private targets, null clears it", async () => {
    const i = await makeIntegration(s, w.owner, { kind: "signed_json", name: "ci", projectId: w.projectId, callbackUrl: "https://hooks.example.test/a" });
    const refused = await s.api("PATCH", `${base()}/${i.id}`, { token: w.owner.accessToken, body: { callbackUrl: "http://10.0.0.5/cb" } });
    expect(refused.status).toBe(400);
    const cleared = await s.api("PATCH", `${base()}/${i.id}`, { token: w.owner.accessToken, body: { callbackUrl: null } });
    expect(cleared.status).toBe(200);
    expect(cleared.body.callbackUrl).toBeNull();
  });

  test("rotate-secret returns a new secret once; the record keeps only its last 4", async () => {
    const i = await makeIntegration(s, w.owner, { kind: "signed_json", name: "ci", projectId: w.projectId });
    const r = await s.api("POST", `${base()}/${i.id}/rotate-secret`, { token: w.owner.accessToken });
    expect(r.status).toBe(200);
    expect(r.body.secret).toMatch(/^aos_/);
    expect(r.body.secret).not.toBe(i.secret);
    expect(r.body.secretLast4).toBe(r.body.secret.slice(-4));
    const got = await s.api("GET", `${base()}/${i.id}`, { token: w.owner.accessToken });
    expect(got.body.secret).toBeUndefined();
    expect(got.body.secretLast4).toBe(r.body.secret.slice(-4));
  });

  test("DELETE answers 204; the integration is gone", async () => {
    const i = await makeIntegration(s, w.owner, { kind: "github", name: "gh", projectId: w.projectId });
    const r = await s.api("DELETE", `${base()}/${i.id}`, { token: w.owner.accessToken });
    expect(r.status).toBe(204);
    expect((await s.api("GET", `${base()}/${i.id}`, { token: w.owner.accessToken })).status).toBe(404);
    expect((await s.api("DELETE", `${base()}/${i.id}`, { token: w.owner.accessToken })).status).toBe(404);
  });

  test("list pages with a cursor, newest first", async () => {
    const org = w.other;
    const made = [];
    for (let i = 0; i < 5; i++) made.push((await makeIntegration(s, org, { kind: "github", name: `gh${i}`, projectId: w.otherProjectId })).id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const q: string = cursor ? `?limit=2&cursor=${cursor}` : "?limit=2";
      const r = await s.api("GET", `/orgs/${org.orgId}/integrations${q}`, { token: org.accessToken });
      expect(r.status).toBe(200);
      expect(r.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...r.body.items.map((x: any) => x.id));
      cursor = r.body.nextCursor;
    } while (cursor);
    expect(seen).toEqual([...made].reverse());
    const bad = await s.api("GET", `/orgs/${org.orgId}/integrations?cursor=garbage`, { token: org.accessToken });
    expect(bad.status).toBe(400);
  });
});

describe("completion webhook plugin settings", () => {
  test("PUT creates (201, secret once), PUT again changes (200, no secret), rotate, GET, DELETE", async () => {
    const path = `/orgs/${w.owner.orgId}/plugins/completion-webhook`;
    expect((await s.api("GET", path, { token: w.owner.accessToken })).status).toBe(404);
    const created = await s.api("PUT", path, { token: w.owner.accessToken, body: { url: "https://hooks.example.test/done" } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ url: "https://hooks.example.test/done", projectId: null, enabled: true });
    expect(created.body.secret).toMatch(/^aos_/);
    const changed = await s.api("PUT", path, { token: w.owner.accessToken, body: { url: "https://hooks.example.test/v2", projectId: w.projectId, enabled: false } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ id: created.body.id, url: "https://hooks.example.test/v2", projectId: w.projectId, enabled: false });
    expect(changed.body.secret).toBeUndefined();
    const refused = await s.api("PUT", path, { token: w.owner.accessToken, body: { url: "http://169.254.169.254/" } });
    expect(refused.status).toBe(400);
    const rotated = await s.api("POST", `${path}/rotate-secret`, { token: w.owner.accessToken });
    expect(rotated.status).toBe(200);
    expect(rotated.body.secret).not.toBe(created.body.secret);
    const got = await s.api("GET", path, { token: w.owner.accessToken });
    expect(got.body.secret).toBeUndefined();
    expect(got.body.secretLast4).toBe(rotated.body.secret.slice(-4));
    expect((await s.api("DELETE", path, { token: w.owner.accessToken })).status).toBe(204);
    expect((await s.api("GET", path, { token: w.owner.accessToken })).status).toBe(404);
  });
});

test("the OpenAPI document describes the integration routes", async () => {
  const r = await s.api("GET", "/openapi.json");
  for (const p of [
    "/api/v1/hooks/{id}",
    "/api/v1/orgs/{orgId}/integrations",
    "/api/v1/orgs/{orgId}/integrations/{id}/rotate-secret",
    "/api/v1/orgs/{orgId}/integrations/{id}/deliveries",
    "/api/v1/orgs/{orgId}/integrations/{id}/deliveries/{deliveryId}/redeliver",
    "/api/v1/orgs/{orgId}/plugins/completion-webhook",
  ]) {
    expect(r.body.paths[p]).toBeDefined();
  }
});

describe("the OpenAPI document", () => {
  test("every integration and completion-webhook management route documents its error answers in the error format", async () => {
    const doc = (await s.api("GET", "/openapi.json")).body;
    const ops = Object.entries<Record<string, any>>(doc.paths)
      .filter(([path]) => /^\/api\/v1\/orgs\/\{orgId\}\/(integrations|plugins)/.test(path))
      .flatMap(([path, methods]) => Object.entries(methods).map(([m, op]) => ({ path, m, op })));
    expect(ops.length).toBe(16);
    for (const { path, m, op } of ops) {
      const errors = Object.keys(op.responses ?? {}).filter((c) => !c.startsWith("2"));
      expect([m, path, errors.includes("401"), errors.includes("403")]).toEqual([m, path, true, true]);
      if (path.includes("{id}") || (path.includes("plugins") && m !== "put")) expect([m, path, errors.includes("404")]).toEqual([m, path, true]);
      for (const c of errors) expect([m, path, c, op.responses[c].content["application/json"].schema.properties.error.required]).toEqual([m, path, c, ["code", "message"]]);
    }
  });
});
