import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";

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
});

