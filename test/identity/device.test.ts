// Device sign-in (SPEC §4, RFC 8628): start, poll (pending, slow_down, denied, expired, once),
// and the person's side: look up, approve, deny.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, makeToken, type Session } from "../helpers/identity";
import { createGrant, decideGrant, findPendingGrant, normaliseUserCode, pollGrant } from "../../src/modules/auth/device-grants";
import { SIGNIN_START_LIMITS } from "../../src/modules/auth/device-routes";
import { get, run } from "../../src/db/query";

let s: TestServer;
let admin: Session;
let person: Session;
beforeAll(async () => {
  s = await startTestServer();
  admin = await createAdmin(s);
  person = await addMember(s, admin, "member");
});
afterAll(() => s.stop());

const start = async (clientName?: string) => {
  const r = await s.api("POST", "/auth/device/start", { body: clientName ? { clientName } : {} });
  expect(r.status).toBe(200);
  return r.body as { deviceCode: string; userCode: string; verificationUri: string; verificationUriComplete: string; expiresIn: number; intervalSec: number };
};
const poll = (deviceCode: string) => s.api("POST", "/auth/device/poll", { body: { deviceCode } });
/** Makes the previous poll long enough ago (the interval is 5 s; tests do not wait). */
const age = (deviceCode: string, ms = 60_000) =>
  s.core.store.write(run("UPDATE device_grants SET last_polled_at = last_polled_at - ? WHERE device_code_hash = ?", ms, new Bun.CryptoHasher("sha256").update(deviceCode).digest("hex")));

describe("start", () => {
  test("answers the codes, the link and the timing", async () => {
    const b = await start("my laptop");
    expect(b.userCode).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(b.deviceCode.length).toBeGreaterThanOrEqual(40);
    expect(b.verificationUri).toBe(`${s.core.config.publicUrl}/device`);
    expect(b.verificationUriComplete).toBe(`${s.core.config.publicUrl}/device?code=${b.userCode}`);
    expect(b.expiresIn).toBe(600);
    expect(b.intervalSec).toBe(5);
    const row = (await s.core.store.read(get<Record<string, unknown>>("SELECT * FROM device_grants WHERE user_code = ?", b.userCode.replace("-", ""))))!;
    expect(row).toMatchObject({ kind: "signin", status: "pending", client_name: "my laptop" });
    expect(JSON.stringify(row)).not.toContain(b.deviceCode);
  });

  test("body optional; bad clientName 400", async () => {
    expect((await s.api("POST", "/auth/device/start")).status).toBe(200);
    expect((await s.api("POST", "/auth/device/start", { body: { clientName: 7 } })).status).toBe(400);
    expect((await s.api("POST", "/auth/device/start", { body: { clientName: "x".repeat(101) } })).status).toBe(400);
  });
});

describe("poll and decide", () => {
  test("pending, slow_down (interval grows by 5 s), approve, tokens once, then expired_token", async () => {
    const b = await start("cli");
    const first = await poll(b.deviceCode);
    expect(first.status).toBe(400);
    expect(first.body.error.code).toBe("authorization_pending");
    const fast = await poll(b.deviceCode);
    expect(fast.status).toBe(400);
    expect(fast.body.error.code).toBe("slow_down");
    expect(fast.body.error.details).toEqual({ intervalSec: 10 });
    expect((await poll(b.deviceCode)).body.error.details).toEqual({ intervalSec: 15 });
    // After waiting the (grown) interval: pending again.
    await age(b.deviceCode, 15_000);
    expect((await poll(b.deviceCode)).body.error.code).toBe("authorization_pending");

    const look = await s.api("GET", `/auth/device/${b.userCode.toLowerCase().replace("-", "")}`, { token: person.accessToken });
    expect(look.status).toBe(200);
    expect(look.body).toMatchObject({ userCode: b.userCode, status: "pending", clientName: "cli" });
    const approve = await s.api("POST", "/auth/device/approve", { token: person.accessToken, body: { userCode: b.userCode.toLowerCase() } });
    expect(approve.status).toBe(200);
    expect(approve.body.status).toBe("approved");

    await age(b.deviceCode);
    const ok = await poll(b.deviceCode);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ expiresIn: 900, user: { id: person.userId } });
    expect(typeof ok.body.refreshToken).toBe("string");
    const me = await s.api("GET", "/me", { token: ok.body.accessToken });
    expect(me.body.id).toBe(person.userId);
    const session = (await s.core.store.read(get<{ client: string }>("SELECT client FROM sessions WHERE id = ?", me.body.via.sessionId)))!;
    expect(session.client).toBe("device");
    expect((await s.api("POST", "/auth/refresh", { body: { refreshToken: ok.body.refreshToken } })).status).toBe(200);

    await age(b.deviceCode);
    const spent = await poll(b.deviceCode);
    expect(spent.status).toBe(400);
    expect(spent.body.error.code).toBe("expired_token");
    // Decided codes can no longer be looked up or decided.
    expect((await s.api("GET", `/auth/device/${b.userCode}`, { token: person.accessToken })).status).toBe(404);
    expect((await s.api("POST", "/auth/device/deny", { token: person.accessToken, body: { userCode: b.userCode } })).status).toBe(404);
  });

  test("the first poll after approval may come at once", async () => {
    const b = await start();
    await s.api("POST", "/auth/device/approve", { token: person.accessToken, body: { userCode: b.userCode } });
    expect((await poll(b.deviceCode)).status).toBe(200);
  });

  test("parallel polls of an approved code: one token pair", async () => {
    const b = await start();
    await s.api("POST", "/auth/device/approve", { token: person.accessToken, body: { userCode: b.userCode } });
    const answers = await Promise.all([1, 2, 3, 4, 5].map(() => poll(b.deviceCode)));
    expect(answers.filter((a) => a.status === 200).length).toBe(1);
  });

  test("deny: access_denied; the code cannot be approved afterwards", async () => {
    const b = await start();
    const deny = await s.api("POST", "/auth/device/deny", { token: person.accessToken, body: { userCode: b.userCode } });
    expect(deny.status).toBe(200);
    expect(deny.body.status).toBe("denied");
    const r = await poll(b.deviceCode);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("access_denied");
    expect((await s.api("POST", "/auth/device/approve", { token: person.accessToken, body: { userCode: b.userCode } })).status).toBe(404);
  });

  test("expired: expired_token on poll, 404 to the person", async () => {
    const b = await start();
    await s.core.store.write(run("UPDATE device_grants SET expires_at = ? WHERE user_code = ?", Date.now() - 1, b.userCode.replace("-", "")));
    expect((await poll(b.deviceCode)).body.error.code).toBe("expired_token");
    expect((await s.api("POST", "/auth/device/approve", { token: person.accessToken, body: { userCode: b.userCode } })).status).toBe(404);
  });

  test.each([
    ["unknown device code", { deviceCode: "nope" }, 400, "expired_token"],
    ["missing device code", {}, 400, "validation_failed"],
  ])("poll with %s -> %i %s", async (_n, body, status, code) => {
    const r = await s.api("POST", "/auth/device/poll", { body });
    expect(r.status).toBe(status);
    expect(r.body.error.code).toBe(code);
  });

  test("the person's side needs a signed-in session: none 401, API token 403; unknown codes 404", async () => {
    const b = await start();
    expect((await s.api("GET", `/auth/device/${b.userCode}`)).status).toBe(401);
    const tok = await makeToken(s, person);
    expect((await s.api("POST", "/auth/device/approve", { token: tok, body: { userCode: b.userCode } })).status).toBe(403);
    for (const code of ["BBBB-BBBB", "AAAA-AAAA", "short"]) {
      const r = await s.api("POST", "/auth/device/approve", { token: person.accessToken, body: { userCode: code } });
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("not_found");
    }
    expect((await s.api("POST", "/auth/device/approve", { token: person.accessToken, body: {} })).status).toBe(400);
  });
});

describe("open sign-ins are capped (start needs no credential)", () => {
  test("20 undecided per address, then 429 with Retry-After; a decided one frees its place; the total cap holds too", async () => {
    const capped = await startTestServer();
    try {
      const a = await createAdmin(capped);
      const grants = async () => (await capped.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM device_grants")))!.n;
      const started = [];
      for (let i = 0; i < SIGNIN_START_LIMITS.perAddress; i++) {
        const r = await capped.api("POST", "/auth/device/start");
        expect(r.status).toBe(200);
        started.push(r.body);
      }
      const refused = await capped.api("POST", "/auth/device/start");
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe("rate_limited");
      const retry = Number(refused.headers.get("retry-after"));
      expect(retry).toBeGreaterThan(590);
      expect(retry).toBeLessThanOrEqual(600);
      expect(await grants()).toBe(SIGNIN_START_LIMITS.perAddress);
      // Denying, approving or letting one expire frees a place; sign-ins that finish never pile up.
      await capped.api("POST", "/auth/device/deny", { token: a.accessToken, body: { userCode: started[0].userCode } });
      const approved = await capped.api("POST", "/auth/device/start");
      expect(approved.status).toBe(200);
      await capped.api("POST", "/auth/device/approve", { token: a.accessToken, body: { userCode: approved.body.userCode } });
      await capped.core.store.write(run("UPDATE device_grants SET expires_at = ? WHERE user_code = ?", Date.now() - 1, started[1].userCode.replace("-", "")));
      // Open now: 20 - denied - expired = 18.
      expect((await capped.api("POST", "/auth/device/start")).status).toBe(200);
      expect((await capped.api("POST", "/auth/device/start")).status).toBe(200);
      expect((await capped.api("POST", "/auth/device/start")).status).toBe(429);
      // Worker pairing is another kind and is not counted here.
      await expect(capped.core.store.write(createGrant(capped.core, "pairing", { requestIp: "127.0.0.1" }))).resolves.toBeDefined();
      // The total cap, whatever the address.
      const total = { perAddress: 1000, total: 3 };
      const t0 = Date.now();
      const fresh = await startTestServer();
      try {
        for (const ip of ["10.0.0.1", "10.0.0.2", "10.0.0.3"]) await fresh.core.store.write(createGrant(fresh.core, "signin", { requestIp: ip }, t0, total));
        await expect(fresh.core.store.write(createGrant(fresh.core, "signin", { requestIp: "10.0.0.4" }, t0, total))).rejects.toThrow(/too many/);
        await expect(fresh.core.store.write(createGrant(fresh.core, "signin", { requestIp: "10.0.0.4" }, t0 + 600_001, total))).resolves.toBeDefined();
      } finally {
        await fresh.stop();
      }
    } finally {
      await capped.stop();
    }
  });
});

describe("device-grants functions (shared with worker pairing)", () => {
  test("normaliseUserCode", () => {
    expect(normaliseUserCode("wdjb-mjht")).toBe("WDJBMJHT");
    expect(normaliseUserCode(" WDJB MJHT ")).toBe("WDJBMJHT");
    expect(normaliseUserCode("WDJB-MJH")).toBeNull();
    expect(normaliseUserCode("WDJA-MJHT")).toBeNull(); // A is not in the alphabet
  });

  test("kinds are separate; approve records orgId and details; poll returns the grant once", async () => {
    const store = s.core.store;
    const g = await store.write(createGrant(s.core, "pairing", { workerName: "box", hostname: "box.local", labels: ["gpu"] }));
    expect(await store.read(findPendingGrant(s.core, "signin", g.userCode))).toBeNull();
    expect(await store.write(decideGrant(s.core, "signin", g.userCode, { approve: true, decidedBy: person.userId }))).toBeNull();
    expect((await store.read(findPendingGrant(s.core, "pairing", g.userCode)))?.workerName).toBe("box");
    const decided = await store.write(
      decideGrant(s.core, "pairing", g.userCode, { approve: true, decidedBy: person.userId, orgId: admin.orgId, details: { workerName: "renamed" } }),
    );
    expect(decided).toMatchObject({ status: "approved", orgId: admin.orgId, workerName: "renamed", labels: ["gpu"] });
    expect(await store.write(decideGrant(s.core, "pairing", g.userCode, { approve: false, decidedBy: person.userId }))).toBeNull();
    expect(await store.write(pollGrant(s.core, "signin", g.deviceCode))).toEqual({ status: "expired" });
    const got = await store.write(pollGrant(s.core, "pairing", g.deviceCode));
    expect(got.status).toBe("approved");
    if (got.status === "approved") expect(got.grant).toMatchObject({ orgId: admin.orgId, decidedBy: person.userId, hostname: "box.local" });
    expect(await store.write(pollGrant(s.core, "pairing", g.deviceCode, Date.now() + 60_000))).toEqual({ status: "expired" });
  });

  test("slow_down timing with explicit clocks", async () => {
    const poll = (now: number) => s.core.store.write(pollGrant(s.core, "pairing", g.deviceCode, now));
    const g = await s.core.store.write(createGrant(s.core, "pairing"));
    const t0 = Date.now();
    expect(await poll(t0)).toEqual({ status: "pending" });
    expect(await poll(t0 + 4_999)).toEqual({ status: "slow_down", intervalSec: 10 });
    expect(await poll(t0 + 4_999 + 10_000)).toEqual({ status: "pending" });
    expect(await poll(t0 + 600_000)).toEqual({ status: "expired" });
  });
});
