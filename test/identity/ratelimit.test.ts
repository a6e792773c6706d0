// Rate limits (SPEC §4): failures only; 10 per account (from all addresses together) and 100 per
// address in 15 minutes, then 429 rate_limited with Retry-After. Successful requests never count.
// Requests "from another address" bind the client socket to another loopback address (127.0.0.0/8).
import { afterEach, describe, expect, test } from "bun:test";
import { request } from "node:http";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin } from "../helpers/identity";
import { FailureWindow } from "../../src/lib/ratelimit";
import { setupTokenOf } from "../../src/server/bootstrap";
import { get } from "../../src/db/query";

// Each scenario gets its own server: the counters are per server instance.
let s: TestServer;
afterEach(() => s?.stop());

const login = (email: string, password: string) => s.api("POST", "/auth/login", { body: { email, password } });

/** POST /auth/login from the given loopback address (the server sees it as the client's address). */
function loginFrom(address: string, email: string, password: string): Promise<{ status: number; headers: Headers; body: any }> {
  const url = new URL(`${s.url}/api/v1/auth/login`);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: url.hostname, port: url.port, path: url.pathname, method: "POST", localAddress: address, headers: { "content-type": "application/json" } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk) => (text += chunk));
        res.on("end", () => {
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") headers.set(k, v);
          resolve({ status: res.statusCode!, headers, body: JSON.parse(text) });
        });
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ email, password }));
  });
}

function expectLimited(r: { status: number; headers: Headers; body: any }) {
  expect(r.status).toBe(429);
  expect(r.body.error.code).toBe("rate_limited");
  const after = Number(r.headers.get("retry-after"));
  expect(after).toBeGreaterThan(0);
  expect(after).toBeLessThanOrEqual(15 * 60);
}

describe("per account", () => {
  test("10 wrong passwords lock the account (even the right password), not other accounts", async () => {
    s = await startTestServer();
    const admin = await createAdmin(s);
    const u = await addMember(s, admin, "member");
    for (let i = 0; i < 10; i++) expect((await login(u.email, "wrong password")).status).toBe(401);
    expectLimited(await login(u.email, u.password));
    expectLimited(await login(u.email.toUpperCase(), "wrong password"));
    expect((await login(admin.email, admin.password)).status).toBe(200);
  });

  test("an unknown email is limited the same way", async () => {
    s = await startTestServer();
    await createAdmin(s);
    for (let i = 0; i < 10; i++) expect((await login("ghost@example.test", "whatever pw")).body.error.code).toBe("invalid_credentials");
    expectLimited(await login("ghost@example.test", "whatever pw"));
  });

  test("successes never count: many sign-ins and 9 failures still leave one try", async () => {
    s = await startTestServer();
    const admin = await createAdmin(s);
    const u = await addMember(s, admin, "member");
    for (let i = 0; i < 9; i++) {
      expect((await login(u.email, "wrong password")).status).toBe(401);
      expect((await login(u.email, u.password)).status).toBe(200);
    }
    for (let i = 0; i < 20; i++) expect((await login(u.email, u.password)).status).toBe(200);
    expect((await login(u.email, "wrong password")).status).toBe(401); // the 10th failure
    expectLimited(await login(u.email, u.password));
  });

  test("10 failures spread over ten addresses lock the account at every address; other accounts there still sign in", async () => {
    s = await startTestServer();
    const admin = await createAdmin(s);
    const u = await addMember(s, admin, "member");
    for (let a = 10; a < 20; a++) expect((await loginFrom(`127.0.0.${a}`, u.email, "guess")).body.error.code).toBe("invalid_credentials");
    // The 11th guess, from a new address, is not even tried; nor is the owner's right password at theirs.
    expectLimited(await loginFrom("127.0.0.30", u.email, "guess"));
    expectLimited(await loginFrom("127.0.0.1", u.email, u.password));
    expect((await loginFrom("127.0.0.30", admin.email, admin.password)).status).toBe(200);
    expect((await loginFrom("127.0.0.10", admin.email, admin.password)).status).toBe(200);
  });

  test("two-factor failures count for the sign-in; device-code failures are a bucket of their own", async () => {
    s = await startTestServer();
    const admin = await createAdmin(s);
    const u = await addMember(s, admin, "member");
    await s.api("POST", "/me/2fa/setup", { token: u.accessToken });
    for (let i = 0; i < 5; i++) expect((await s.api("POST", "/me/2fa/enable", { token: u.accessToken, body: { code: "abcdef" } })).status).toBe(400);
    for (let i = 0; i < 5; i++) expect((await login(u.email, "wrong password")).status).toBe(401);
    expectLimited(await login(u.email, u.password));
    // Ten failed sign-ins do not stop the person's device approvals.
    const first = (await s.api("POST", "/auth/device/start")).body;
    expect((await s.api("POST", "/auth/device/approve", { token: u.accessToken, body: { userCode: first.userCode } })).status).toBe(200);
    // Ten unknown user codes stop the approvals, for this person only, and not their sign-in.
    for (let i = 0; i < 5; i++) expect((await s.api("GET", "/auth/device/BBBB-BBBB", { token: u.accessToken })).status).toBe(404);
    for (let i = 0; i < 5; i++) expect((await s.api("POST", "/pairing/deny", { token: u.accessToken, body: { userCode: "CCCC-CCCC" } })).status).toBe(404);
    const d = (await s.api("POST", "/auth/device/start")).body;
    expectLimited(await s.api("POST", "/auth/device/approve", { token: u.accessToken, body: { userCode: d.userCode } }));
    expect((await s.api("POST", "/auth/device/approve", { token: admin.accessToken, body: { userCode: d.userCode } })).status).toBe(200);
  });

  test("wrong user codes never lock the person's sign-in", async () => {
    s = await startTestServer();
    const admin = await createAdmin(s);
    const u = await addMember(s, admin, "member");
    for (let i = 0; i < 10; i++) expect((await s.api("GET", "/auth/device/BBBB-BBBB", { token: u.accessToken })).status).toBe(404);
    expectLimited(await s.api("GET", "/auth/device/BBBB-BBBB", { token: u.accessToken }));
    expect((await login(u.email, u.password)).status).toBe(200);
    expect((await login(u.email, "wrong password")).body.error.code).toBe("invalid_credentials");
  });
});

describe("per address", () => {
  test("100 failures from one address lock the address for every account", async () => {
    s = await startTestServer();
    const admin = await createAdmin(s);
    for (let i = 0; i < 100; i++) expect((await login(`ghost${i}@example.test`, "whatever pw")).status).toBe(401);
    expectLimited(await login(admin.email, admin.password));
    expectLimited(await s.api("POST", "/auth/device/approve", { token: admin.accessToken, body: { userCode: "BBBB-BBBB" } }));
  });
});

describe("setup token", () => {
  test("wrong setup tokens count for the address; the 101st try is refused even with the right token", async () => {
    s = await startTestServer();
    const token = setupTokenOf(s.core)!;
    const body = (t: string) => ({ token: t, email: "first@example.test", password: "long enough pw" });
    for (let i = 0; i < 100; i++) expect((await s.api("POST", "/setup", { body: body(`wrong-${i}`) })).status).toBe(401);
    expectLimited(await s.api("POST", "/setup", { body: body(token) }));
    expect((await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM users")))!.n).toBe(0);
  });
});

describe("FailureWindow", () => {
  test("limit, Retry-After from the oldest counted failure, and the window sliding", () => {
    const w = new FailureWindow({ limit: 3, windowMs: 60_000 });
    const t0 = 1_000_000;
    w.record("k", t0);
    w.record("k", t0 + 10_000);
    expect(w.retryAfterSec("k", t0 + 10_000)).toBe(0);
    w.record("k", t0 + 20_000);
    expect(w.retryAfterSec("k", t0 + 20_000)).toBe(40);
    expect(w.retryAfterSec("other", t0 + 20_000)).toBe(0);
    expect(w.retryAfterSec("k", t0 + 60_001)).toBe(0); // the first failure left the window
    w.record("k", t0 + 60_001);
    expect(w.retryAfterSec("k", t0 + 60_001)).toBe(10);
    expect(w.retryAfterSec("k", t0 + 200_000)).toBe(0);
  });
});
