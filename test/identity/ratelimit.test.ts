// Rate limits (SPEC §4): failures only; 10 per account and 100 per address in 15 minutes,
// then 429 rate_limited with Retry-After. Successful requests never count.
import { afterEach, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin } from "../helpers/identity";
import { FailureWindow } from "../../src/lib/ratelimit";
import { setupTokenOf } from "../../src/server/bootstrap";

// Each scenario gets its own server: the counters are per server instance.
let s: TestServer;
afterEach(() => s?.stop());

const login = (email: string, password: string) => s.api("POST", "/auth/login", { body: { email, password } });

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

  test("two-factor and device-code failures count for the account too", async () => {
    s = await startTestServer();
    const admin = await createAdmin(s);
    const u = await addMember(s, admin, "member");
    await s.api("POST", "/me/2fa/setup", { token: u.accessToken });
    for (let i = 0; i < 5; i++) expect((await s.api("POST", "/me/2fa/enable", { token: u.accessToken, body: { code: "abcdef" } })).status).toBe(400);
    for (let i = 0; i < 5; i++) expect((await s.api("GET", "/auth/device/BBBB-BBBB", { token: u.accessToken })).status).toBe(404);
    expectLimited(await s.api("POST", "/auth/device/approve", { token: u.accessToken, body: { userCode: "CCCC-CCCC" } }));
    // A real code is still refused while limited, for this person only.
    const d = (await s.api("POST", "/auth/device/start")).body;
    expectLimited(await s.api("POST", "/auth/device/approve", { token: u.accessToken, body: { userCode: d.userCode } }));
    expect((await s.api("POST", "/auth/device/approve", { token: admin.accessToken, body: { userCode: d.userCode } })).status).toBe(200);
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
    expect(s.core.sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM users").get()!.n).toBe(0);
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
