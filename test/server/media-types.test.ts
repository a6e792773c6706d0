// Media types are case-insensitive (RFC 9110 §8.3.1): a JSON body sent as APPLICATION/JSON or
// Application/Json; charset=UTF-8 is read as one sent as application/json, on every kind of route
// (closed bodies, optional bodies, inbound hooks); any other type is still 415, and changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import definitions from "@octokit/webhooks-examples";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { all } from "../../src/db/query";
import { deliver, githubSignature, makeIntegration, svcSignature } from "../integrations/fixtures";

let s: TestServer;
let owner: Session;
let projectId: string;
beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  projectId = (await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: "media" } })).body.id;
});
afterAll(() => s.stop());

const JSON_SPELLINGS = ["APPLICATION/JSON", "Application/Json; charset=UTF-8", "application/JSON;charset=utf-8", "Application/json ; charset=UTF-8"];

const snapshot = async () =>
  JSON.stringify(await Promise.all(["orgs", "tasks", "device_grants"].map((t) => s.core.store.read(all(`SELECT * FROM ${t} ORDER BY 1`)))));

describe("JSON in any case", () => {
  test.each(JSON_SPELLINGS)("%s: a PATCH is read and applied", async (type) => {
    const name = `renamed ${JSON_SPELLINGS.indexOf(type)}`;
    const r = await s.api("PATCH", `/orgs/${owner.orgId}`, { token: owner.accessToken, body: { name }, headers: { "content-type": type } });
    expect([r.status, r.body.name]).toEqual([200, name]);
    expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: owner.accessToken })).body.name).toBe(name);
  });

  test("a closed body in capitals still refuses an unknown field, naming it; nothing changes", async () => {
    const before = await snapshot();
    const r = await s.api("POST", `/orgs/${owner.orgId}/tasks`, {
      token: owner.accessToken,
      body: { projectId, title: "t", prompt: "p", priorty: "HIGH" },
      headers: { "content-type": "APPLICATION/JSON" },
    });
    expect(r.status).toBe(400);
    expect(r.body.error.details.map((d: { field: string }) => d.field)).toEqual(["priorty"]);
    expect(await snapshot()).toBe(before);
  });

  test("a body in capitals must be an object, as any JSON body", async () => {
    const before = await snapshot();
    const r = await s.api("PATCH", `/orgs/${owner.orgId}`, { token: owner.accessToken, body: '["x"]', headers: { "content-type": "Application/Json" } });
    expect([r.status, r.body.error.code, r.body.error.message]).toEqual([400, "validation_failed", "the body must be a JSON object"]);
    expect(await snapshot()).toBe(before);
  });

  test("an optional body in capitals is read (device sign-in's clientName)", async () => {
    const r = await s.api("POST", "/auth/device/start", { body: { clientName: "capital client" }, headers: { "content-type": "Application/JSON; charset=utf-8" } });
    expect(r.status).toBe(200);
    const grants = await s.core.store.read(all<{ client_name: string | null }>("SELECT client_name FROM device_grants WHERE kind = 'signin'"));
    expect(grants.map((g) => g.client_name)).toContain("capital client");
  });

  test("credentials are checked first: without one, a body in capitals is 401 and changes nothing", async () => {
    const before = await snapshot();
    const r = await s.api("PATCH", `/orgs/${owner.orgId}`, { body: { name: "nobody's" }, headers: { "content-type": "APPLICATION/JSON" } });
    expect([r.status, r.body.error.code]).toEqual([401, "unauthorized"]);
    expect(await snapshot()).toBe(before);
  });
});

describe("other types", () => {
  test.each(["application/jsonx", "application/json-patch+json", "text/json", "application/x-json", "APPLICATION/X-WWW-FORM-URLENCODED", "Text/Plain"])(
    "%s: 415 unsupported_media_type, nothing changes",
    async (type) => {
      const before = await snapshot();
      const r = await s.api("PATCH", `/orgs/${owner.orgId}`, { token: owner.accessToken, body: { name: "typed" }, headers: { "content-type": type } });
      expect([r.status, r.body.error.code]).toEqual([415, "unsupported_media_type"]);
      expect(await snapshot()).toBe(before);
    },
  );
});

describe("inbound hooks read their raw body", () => {
  test("signed JSON and GitHub deliveries sent as APPLICATION/JSON; charset=UTF-8 make their tasks: the signature over the raw body holds", async () => {
    const ci = await makeIntegration(s, owner, { kind: "signed_json", name: "ci", projectId });
    const body = JSON.stringify({ title: "From CI", prompt: "Build failed." });
    const svc = await deliver(s, ci.id, body, { "content-type": "APPLICATION/JSON; charset=UTF-8", "x-svc-signature": svcSignature(ci.secret, body), "x-svc-delivery": "caps-1" });
    expect([svc.status, svc.body.status]).toEqual([201, "created"]);

    // A real recorded delivery (labeled "bug").
    const gh = await makeIntegration(s, owner, { kind: "github", name: "gh", projectId, config: { label: "bug" } });
    const issues = (definitions as { name: string; examples: { action?: string }[] }[]).find((d) => d.name === "issues")!;
    const event = JSON.stringify(issues.examples.find((e) => e.action === "labeled"));
    const hub = await deliver(s, gh.id, event, { "content-type": "Application/Json", "x-github-event": "issues", "x-github-delivery": "caps-2", "x-hub-signature-256": githubSignature(gh.secret, event) });
    expect([hub.status, hub.body.status]).toEqual([201, "created"]);
  });

  test("a 1 MiB delivery with a bad signature is refused without its bytes walked as JSON: the fastest of three in under 250 ms (each took 0.7 s)", async () => {
    const body = JSON.stringify({ title: "x", prompt: "p".repeat(1024 * 1024 - 40) });
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const started = performance.now();
      const r = await deliver(s, "int_unknown", body, { "x-svc-signature": "t=1,v1=00" });
      times.push(performance.now() - started);
      expect(r.status).toBe(401);
    }
    expect(Math.min(...times)).toBeLessThan(250);
  });
});
