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
});
