// Structured request logs and X-Request-Id (issue 12, operations 3): one JSON line per request
// naming the route pattern, status, duration and caller, the id echoed to the client, no secret.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, makeToken } from "../helpers/identity";
import { createLogger, logSettingsFromEnv } from "../../src/server/log";

const lines: string[] = [];
const entries = () => lines.map((l) => JSON.parse(l) as Record<string, any>);
const requestLine = (requestId: string) => entries().filter((e) => e.msg === "request" && e.requestId === requestId);

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ logger: createLogger({ sink: { write: (l) => void lines.push(l) } }) });
});
afterAll(() => s.stop());

describe("request lines", () => {
  test("sign in, make a token, use it: one line per request with route pattern and caller; no password or token in the log", async () => {
    const owner = await createAdmin(s);
    const signIn = await s.api("POST", "/auth/login", { body: { email: owner.email, password: owner.password } });
    expect(signIn.status).toBe(200);
    const token = await makeToken(s, owner);
    const tokenId = (await s.api("GET", "/me/tokens", { token: owner.accessToken })).body.items[0].id;
    const used = await s.api("GET", `/orgs/${owner.orgId}/tasks?limit=5`, { token });
    expect(used.status).toBe(200);

    const id = used.headers.get("x-request-id")!;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const [line] = requestLine(id);
    expect(line).toMatchObject({
      level: "info",
      method: "GET",
      route: "/api/v1/orgs/:orgId/tasks",
      status: 200,
      orgId: owner.orgId,
      principalType: "token",
      principalId: tokenId,
    });
    expect(typeof line.durationMs).toBe("number");
    expect(typeof line.time).toBe("string");
    expect(requestLine(id)).toHaveLength(1);

    const [loginLine] = requestLine(signIn.headers.get("x-request-id")!);
    expect(loginLine).toMatchObject({ route: "/api/v1/auth/login", status: 200, method: "POST" });
    const me = await s.api("GET", "/me", { token: owner.accessToken });
    expect(requestLine(me.headers.get("x-request-id")!)[0]).toMatchObject({ route: "/api/v1/me", principalType: "user", principalId: owner.userId });

    const log = lines.join("");
    for (const secret of [owner.password, token, signIn.body.accessToken, signIn.body.refreshToken, owner.accessToken, owner.refreshToken]) {
      expect(log).not.toContain(secret);
    }
  });

  test("errors get a line and the id too: 401, 400, 404 on an unknown path, with the raw path never logged", async () => {
    const owner = await createAdmin(s);
    const unauth = await s.api("GET", `/orgs/${owner.orgId}/tasks`);
    const bad = await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: 42 } });
    const missing = await s.api("GET", "/no/such/secret-path-abc");
    const noTask = await s.api("GET", `/orgs/${owner.orgId}/tasks/tsk_nosuchtask`, { token: owner.accessToken });
    expect([unauth.status, bad.status, missing.status, noTask.status]).toEqual([401, 400, 404, 404]);
    expect(requestLine(unauth.headers.get("x-request-id")!)[0]).toMatchObject({ route: "/api/v1/orgs/:orgId/tasks", status: 401 });
    expect(requestLine(bad.headers.get("x-request-id")!)[0]).toMatchObject({ route: "/api/v1/orgs/:orgId/projects", status: 400 });
    expect(requestLine(noTask.headers.get("x-request-id")!)[0]).toMatchObject({
      route: "/api/v1/orgs/:orgId/tasks/:taskId",
      status: 404,
      orgId: owner.orgId,
      principalType: "user",
      principalId: owner.userId,
    });
    expect(requestLine(missing.headers.get("x-request-id")!)[0]).toMatchObject({ route: "(unmatched)", status: 404 });
    expect(lines.join("")).not.toContain("secret-path-abc");
  });

  test("a 413 refused before routing still carries an id and a line", async () => {
    const owner = await createAdmin(s);
    const big = await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: "x".repeat(1024 * 1024 + 10) } });
    expect(big.status).toBe(413);
    expect(requestLine(big.headers.get("x-request-id")!)[0]).toMatchObject({ status: 413 });
  });
});

describe("X-Request-Id", () => {
  test("a sane incoming id (a proxy's) is kept and logged", async () => {
    const id = "edge-01.abc_DEF-" + "9".repeat(100);
    const r = await s.api("GET", "/health", { headers: { "x-request-id": id } });
    expect(r.headers.get("x-request-id")).toBe(id);
    expect(requestLine(id)).toHaveLength(1);
  });

  test.each([
    ["too long", "a".repeat(129)],
    ["spaces and quotes", 'abc "def"'],
    ["a newline smuggling a log line", "abc%0a{}"],
    ["empty", ""],
  ])("an unfit incoming id (%s) is replaced by a new one", async (_, incoming) => {
    const r = await s.api("GET", "/health", { headers: { "x-request-id": incoming } });
    expect(r.status).toBe(200);
    expect(r.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  test("every answer has its own id", async () => {
    const ids = await Promise.all([1, 2, 3].map(async () => (await s.api("GET", "/health")).headers.get("x-request-id")));
    expect(new Set(ids).size).toBe(3);
  });
});

describe("settings", () => {
  test("AO_LOG_LEVEL=warn keeps warnings and drops info lines", () => {
    const got: string[] = [];
    const log = createLogger({ level: "warn", sink: { write: (l) => void got.push(l) } });
    log.info("routine", { a: 1 });
    log.warn("careful", { b: 2 });
    expect(got.map((l) => JSON.parse(l))).toEqual([expect.objectContaining({ level: "warn", msg: "careful", b: 2 })]);
  });

  test("AO_LOG_FORMAT=pretty writes one readable line per message", () => {
    const got: string[] = [];
    createLogger({ format: "pretty", sink: { write: (l) => void got.push(l) } }).info("ao listening on http://x", { bound: "127.0.0.1:1" });
    expect(got).toHaveLength(1);
    expect(got[0]).toMatch(/^\d{4}-\d\d-\d\dT[\d:.]+Z INFO {2}ao listening on http:\/\/x bound="127.0.0.1:1"\n$/);
  });

  test("a field named like a credential is redacted", () => {
    const got: string[] = [];
    createLogger({ sink: { write: (l) => void got.push(l) } }).error("oops", { password: "hunter2", nested: { token: "aot_x" } });
    expect(got.join("")).not.toContain("hunter2");
    expect(got.join("")).not.toContain("aot_x");
  });

  test("bad AO_LOG_LEVEL or AO_LOG_FORMAT is refused, not ignored", () => {
    expect(() => logSettingsFromEnv({ AO_LOG_LEVEL: "loud" })).toThrow("AO_LOG_LEVEL must be one of");
    expect(() => logSettingsFromEnv({ AO_LOG_FORMAT: "xml" })).toThrow("AO_LOG_FORMAT must be json or pretty");
    expect(logSettingsFromEnv({ AO_LOG_LEVEL: "DEBUG", AO_LOG_FORMAT: "pretty" })).toEqual({ level: "debug", format: "pretty" });
    expect(logSettingsFromEnv({})).toEqual({ level: "info", format: "json" });
  });
});
