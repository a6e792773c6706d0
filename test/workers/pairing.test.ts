// Pairing by device code (SPEC §7): worker side start/poll, person side describe/approve/deny,
// who may decide, the approval gate, single use and rate-limited look-ups.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, makeToken, newOrg, type Session } from "../helpers/identity";
import { FAST, makeWorker, workerApi } from "./helpers";
import { all, get, run } from "../../src/db/query";

let s: TestServer;
let owner: Session;
beforeAll(async () => {
  s = await startTestServer({ workerTimeouts: FAST, publicUrl: "https://ao.example.test" });
  owner = await createAdmin(s);
});
afterAll(() => s.stop());

async function start(body: Record<string, unknown> = { name: "build-1", hostname: "build-1.lan", labels: ["linux", "gpu"] }) {
  const r = await s.api("POST", "/worker/pair", { body });
  expect(r.status).toBe(200);
  return r.body as { deviceCode: string; userCode: string; verificationUriComplete: string; intervalSec: number; expiresIn: number };
}

/** Polls as if the interval had passed (tests do not wait 5 s). */
async function poll(deviceCode: string) {
  await s.core.store.write(run("UPDATE device_grants SET last_polled_at = NULL"));
  return s.api("POST", "/worker/pair/poll", { body: { deviceCode } });
}

describe("worker side", () => {
  test("start answers the code, the link and the timings", async () => {
    const p = await start();
    expect(p.userCode).toMatch(/^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
    expect(p.verificationUriComplete).toBe(`https://ao.example.test/pair?code=${p.userCode}`);
    expect(p).toMatchObject({ intervalSec: 5, expiresIn: 600 });
  });

  test.each([
    ["no name", { hostname: "h" }],
    ["empty name", { name: "", hostname: "h" }],
    ["bad label", { name: "n", hostname: "h", labels: ["Not OK"] }],
    ["labels not an array", { name: "n", hostname: "h", labels: "gpu" }],
    ["too many labels", { name: "n", hostname: "h", labels: Array.from({ length: 21 }, (_, i) => `l${i}`) }],
  ])("start refuses %s", async (_name, body) => {
    const r = await s.api("POST", "/worker/pair", { body });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
  });

  test("poll: pending, slow_down when too fast, then the credential once, then expired", async () => {
    const p = await start();
    expect((await s.api("POST", "/worker/pair/poll", { body: { deviceCode: p.deviceCode } })).body.error.code).toBe("authorization_pending");
    const fast = await s.api("POST", "/worker/pair/poll", { body: { deviceCode: p.deviceCode } });
    expect(fast.body.error).toMatchObject({ code: "slow_down", details: { intervalSec: 10 } });
    const approved = await s.api("POST", "/pairing/approve", { token: owner.accessToken, body: { userCode: p.userCode.toLowerCase(), orgId: owner.orgId } });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ name: "build-1", hostname: "build-1.lan", labels: ["linux", "gpu"], status: "approved" });
    const got = await poll(p.deviceCode);
    expect(got.status).toBe(200);
    expect(got.body.credential).toMatch(/^aow_[0-9A-Za-z]{36}$/);
    expect(got.body.orgId).toBe(owner.orgId);
    expect((await poll(p.deviceCode)).body.error.code).toBe("expired_token");
    // Stored hashed, never in clear.
    const row = (await s.core.store.read(get<{ credential_hash: string }>("SELECT credential_hash FROM workers WHERE id = ?", got.body.workerId)))!;
    expect(row.credential_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(await s.core.store.read(all("SELECT * FROM workers")))).not.toContain(got.body.credential);
    const me = await workerApi(s, got.body.credential)("GET", "/worker/me");
    expect(me.body).toMatchObject({ id: got.body.workerId, name: "build-1", labels: ["linux", "gpu"], status: "offline" });
    // The code is spent: a person cannot decide it again.
    expect((await s.api("POST", "/pairing/approve", { token: owner.accessToken, body: { userCode: p.userCode, orgId: owner.orgId } })).status).toBe(404);
  });

  test("a code older than 10 minutes is gone: the person cannot see or approve it, the worker gets expired_token", async () => {
    const p = await start();
    const workers = async () => (await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM workers")))!.n;
    const before = await workers();
    // Ten minutes pass (the grant's expiry moved into the past).
    await s.core.store.write(run("UPDATE device_grants SET expires_at = ? WHERE user_code = ?", Date.now() - 1, p.userCode.replace("-", "")));
    expect((await s.api("GET", `/pairing/${p.userCode}`, { token: owner.accessToken })).status).toBe(404);
    expect((await s.api("POST", "/pairing/approve", { token: owner.accessToken, body: { userCode: p.userCode, orgId: owner.orgId } })).status).toBe(404);
    expect((await poll(p.deviceCode)).body.error.code).toBe("expired_token");
    expect(await workers()).toBe(before);
  });

  test("undecided pairings are capped per address: the 21st start is 429 with Retry-After; a decided one frees its place", async () => {
    const own = await startTestServer({ workerTimeouts: FAST });
    try {
      const admin = await createAdmin(own);
      const begin = () => own.api("POST", "/worker/pair", { body: { name: "n", hostname: "h" } });
      const started = [];
      for (let i = 0; i < 20; i++) {
        const r = await begin();
        expect(r.status).toBe(200);
        started.push(r.body);
      }
      const refused = await begin();
      expect(refused.status).toBe(429);
      expect(refused.body.error.code).toBe("rate_limited");
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
      expect((await own.api("POST", "/pairing/deny", { token: admin.accessToken, body: { userCode: started[0].userCode } })).status).toBe(200);
      expect((await begin()).status).toBe(200);
    } finally {
      await own.stop();
    }
  });

  test("deny: the worker gets access_denied", async () => {
    const p = await start();
    expect((await s.api("POST", "/pairing/deny", { token: owner.accessToken, body: { userCode: p.userCode } })).status).toBe(200);
    expect((await poll(p.deviceCode)).body.error.code).toBe("access_denied");
    expect((await poll("made-up")).body.error.code).toBe("expired_token");
  });
});

describe("person side", () => {
  test("describe: session only; tokens and worker credentials refused", async () => {
    const p = await start();
    const token = await makeToken(s, owner);
    const worker = await makeWorker(s, owner.orgId);
    const cases: [string, string | undefined, number][] = [
      ["session", owner.accessToken, 200],
      ["personal token", token, 403],
      ["worker credential", worker.credential, 403],
      ["nothing", undefined, 401],
    ];
    for (const [name, auth, status] of cases) {
      const r = await s.api("GET", `/pairing/${p.userCode}`, { token: auth });
      expect([name, r.status]).toEqual([name, status]);
    }
    const ok = await s.api("GET", `/pairing/${p.userCode.replace("-", "").toLowerCase()}`, { token: owner.accessToken });
    expect(ok.body).toMatchObject({ userCode: p.userCode, name: "build-1", hostname: "build-1.lan", status: "pending" });
    expect(ok.body.requestIp).toBeString();
    expect((await s.api("POST", "/pairing/approve", { token, body: { userCode: p.userCode, orgId: owner.orgId } })).status).toBe(403);
  });

  test("who may approve into which org: viewer 403, stranger 404, member yes", async () => {
    const viewer = await addMember(s, owner, "viewer");
    const member = await addMember(s, owner, "member");
    const stranger = await newOrg(s);
    const p = await start();
    const approve = (who: Session) => s.api("POST", "/pairing/approve", { token: who.accessToken, body: { userCode: p.userCode, orgId: owner.orgId } });
    expect((await approve(viewer)).status).toBe(403);
    expect((await approve(stranger)).status).toBe(404);
    expect((await approve(member)).status).toBe(200);
    const got = await poll(p.deviceCode);
    const w = await s.api("GET", `/orgs/${owner.orgId}/workers/${got.body.workerId}`, { token: owner.accessToken });
    expect(w.body.status).toBe("offline"); // approved at once: the org does not require approval
  });

  test("requireWorkerApproval: the paired worker is pending_approval until approved", async () => {
    const org = await newOrg(s);
    expect((await s.api("PATCH", `/orgs/${org.orgId}`, { token: org.accessToken, body: { requireWorkerApproval: true } })).status).toBe(200);
    const p = await start();
    await s.api("POST", "/pairing/approve", { token: org.accessToken, body: { userCode: p.userCode, orgId: org.orgId } });
    const got = await poll(p.deviceCode);
    const path = `/orgs/${org.orgId}/workers/${got.body.workerId}`;
    expect((await s.api("GET", path, { token: org.accessToken })).body.status).toBe("pending_approval");
    expect((await s.api("POST", `${path}/approve`, { token: org.accessToken })).body.status).toBe("offline");
  });

  test("unknown codes are failures: the 11th in a window is 429 with Retry-After", async () => {
    const who = await addMember(s, owner, "member");
    for (let i = 0; i < 10; i++) {
      const r = await s.api("GET", `/pairing/BBBB-BBB${"BCDFGHJKLM"[i]}`, { token: who.accessToken });
      expect(r.status).toBe(404);
    }
    const limited = await s.api("POST", "/pairing/deny", { token: who.accessToken, body: { userCode: "BBBB-CCCC" } });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThan(0);
  });
});
