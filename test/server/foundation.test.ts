import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin } from "../helpers/identity";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

describe("foundation", () => {
  test("health answers without auth", async () => {
    const r = await s.api("GET", "/health");
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("ok");
    expect(typeof r.body.version).toBe("string");
  });

  test("unknown route gets the error format", async () => {
    const r = await s.api("GET", "/nope");
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error: { code: "not_found", message: "no such route" } });
  });

  test("openapi document is served", async () => {
    const r = await s.api("GET", "/openapi.json");
    expect(r.status).toBe(200);
    expect(r.body.openapi).toMatch(/^3\./);
    expect(r.body.paths["/api/v1/health"]).toBeDefined();
  });

  test("request bodies are documented in the openapi document", async () => {
    const r = await s.api("GET", "/openapi.json");
    const login = r.body.paths["/api/v1/auth/login"].post;
    expect(login.requestBody.content["application/json"].schema.required).toContain("email");
  });

  test("request bodies are documented as JSON alone, the one type the routes take (415 for a form)", async () => {
    const doc = (await s.api("GET", "/openapi.json")).body;
    const types = Object.entries<Record<string, any>>(doc.paths).flatMap(([path, methods]) =>
      Object.entries(methods).flatMap(([m, op]) => (op.requestBody ? [`${m} ${path}: ${Object.keys(op.requestBody.content).join(", ")}`] : [])),
    );
    expect(types.length).toBeGreaterThan(40);
    expect(types.filter((t) => !t.endsWith(": application/json"))).toEqual([]);
    const form = await s.api("POST", "/auth/login", { headers: { "content-type": "application/x-www-form-urlencoded" }, raw: "email=a%40b.c&password=x" });
    expect([form.status, form.body.error.code]).toEqual([415, "unsupported_media_type"]);
  });

  test("every operation has a summary and tags; identity routes document their answers, errors and closed bodies", async () => {
    const doc = (await s.api("GET", "/openapi.json")).body;
    const ops = Object.entries<Record<string, any>>(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([m, op]) => ({ path, m, op })));
    expect(ops.length).toBeGreaterThan(50);
    for (const { path, m, op } of ops) {
      expect([m, path, typeof op.summary, op.tags?.length > 0]).toEqual([m, path, "string", true]);
    }
    const identity = ops.filter(({ path }) => /^\/api\/v1\/(health|auth|me|setup|admin|orgs(\/\{orgId\}(\/members.*)?)?$)/.test(path));
    expect(identity.length).toBe(32);
    for (const { path, m, op } of identity) {
      const statuses = Object.keys(op.responses ?? {});
      const ok = statuses.filter((c) => c.startsWith("2"));
      expect([m, path, ok.length > 0]).toEqual([m, path, true]);
      // The backup is the one identity-area answer that is not JSON: a tar archive.
      const media = path === "/api/v1/admin/backup" ? "application/x-tar" : "application/json";
      for (const c of ok) if (c !== "204") expect([m, path, c, !!op.responses[c].content?.[media]?.schema]).toEqual([m, path, c, true]);
      for (const c of statuses.filter((c) => !c.startsWith("2"))) {
        expect([m, path, c, op.responses[c].content["application/json"].schema.properties.error.required]).toEqual([m, path, c, ["code", "message"]]);
      }
      const open = path === "/api/v1/health" || path === "/api/v1/setup" || /^\/api\/v1\/auth\/(login|refresh|device\/(start|poll))$/.test(path);
      expect([m, path, op.security]).toEqual([m, path, open ? [] : undefined]);
    }
    const body = (path: string, m: string) => doc.paths[path][m].requestBody.content["application/json"].schema;
    expect(body("/api/v1/me/tokens", "post").additionalProperties).toBe(false);
    expect(body("/api/v1/orgs/{orgId}", "patch").additionalProperties).toBe(false);
    // (Other bodies cannot be told apart here: Elysia's normalizer marks every body schema closed in
    // place once a request has been validated against it, though it then drops unknown fields.)
  });

  test("the reference page at /api/v1/docs loads its script and the document from this server", async () => {
    const page = await fetch(s.url + "/api/v1/docs");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toStartWith("text/html");
    const html = await page.text();
    const scripts = [...html.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts).toEqual(["/api/v1/docs/setup.js", expect.stringMatching(/^\/api\/v1\/docs\/scalar\.js\?v=/)]);
    expect(html).not.toMatch(/https?:\/\/[^"' ]*\.js/);
    const config = JSON.parse(/data-configuration='([^']+)'/.exec(html)![1]);
    expect(config.url).toBe("/api/v1/openapi.json");
    const script = await fetch(s.url + scripts[1]);
    expect(script.status).toBe(200);
    expect(script.headers.get("content-type")).toStartWith("text/javascript");
    expect(script.headers.get("cache-control")).toContain("immutable");
    const served = await script.arrayBuffer();
    const vendored = await Bun.file(new URL("../../vendor/scalar/scalar.standalone.js", import.meta.url)).arrayBuffer();
    expect(served.byteLength).toBe(vendored.byteLength);
    expect(new Bun.CryptoHasher("sha256").update(served).digest("hex")).toBe("bf091006bdc3af6067af77c2f534812e3e633e94a94e87138069f570f33b762c");
  });

  test.each([
    ["malformed JSON", { body: "{bad" }, 400, "validation_failed"],
    ["a body over 1 MiB", { body: JSON.stringify({ email: "x".repeat(1_100_000), password: "p" }) }, 413, "payload_too_large"],
    ["wrong types", { body: { email: 5, password: [] } }, 400, "validation_failed"],
  ] as const)("%s gets the error format and changes nothing", async (_name, opts, status, code) => {
    const r = await s.api("POST", "/auth/login", opts as { body: unknown });
    expect(r.status).toBe(status);
    expect(r.body.error.code).toBe(code);
    expect(typeof r.body.error.message).toBe("string");
  });

  test("a chunked JSON body without a length is refused with 411", async () => {
    const body = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode('{"email":"a@b.c","password":"x"}'));
        c.close();
      },
    });
    const res = await fetch(s.url + "/api/v1/auth/login", { method: "POST", headers: { "content-type": "application/json" }, body });
    expect(res.status).toBe(411);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("length_required");
  });

  test.each([
    ["limit=201", "limit"],
    ["limit=0", "limit"],
    ["limit=abc", "limit"],
  ])("a bad query value (%s) names its parameter", async (query, field) => {
    const owner = await createAdmin(s);
    const r = await s.api("GET", `/orgs?${query}`, { token: owner.accessToken });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
    expect(r.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
  });

  test.each(["[1,2]", "5", '"text"', "null", "true"])("a JSON body that is not an object (%s) is refused and changes nothing", async (raw) => {
    const owner = await createAdmin(s);
    const before = await s.api("GET", `/orgs/${owner.orgId}`, { token: owner.accessToken });
    const r = await s.api("PATCH", `/orgs/${owner.orgId}`, { token: owner.accessToken, body: raw });
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({ code: "validation_failed", message: "the body must be a JSON object", details: [{ field: "(root)", message: "Expected object" }] });
    const after = await s.api("GET", `/orgs/${owner.orgId}`, { token: owner.accessToken });
    expect(after.body).toEqual(before.body);
  });
});

