// Two-factor (SPEC §4): enrolment, login with TOTP codes (each time step once) and recovery codes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generate } from "otplib";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, type Session } from "../helpers/identity";
import { all, get } from "../../src/db/query";

let s: TestServer;
let admin: Session;
beforeAll(async () => {
  s = await startTestServer();
  admin = await createAdmin(s);
});
afterAll(() => s.stop());

const count = async (sql: string, userId: string) => (await s.core.store.read(get<{ n: number }>(sql, userId)))!.n;
const nowSec = () => Math.floor(Date.now() / 1000);
const codeAt = (secret: string, offsetSec = 0) => generate({ secret, epoch: nowSec() + offsetSec });
const loginWith = (u: Session, code?: string, password = u.password) => s.api("POST", "/auth/login", { body: { email: u.email, password, ...(code ? { code } : {}) } });

async function enrolled(): Promise<{ u: Session; secret: string; enabledWith: string; recoveryCodes: string[] }> {
  const u = await addMember(s, admin, "member");
  const { secret } = (await s.api("POST", "/me/2fa/setup", { token: u.accessToken })).body;
  const enabledWith = await codeAt(secret);
  const r = await s.api("POST", "/me/2fa/enable", { token: u.accessToken, body: { code: enabledWith } });
  expect(r.status).toBe(200);
  return { u, secret, enabledWith, recoveryCodes: r.body.recoveryCodes };
}

describe("enrolment", () => {
  test("setup gives a secret (sealed at rest), enable needs a right code and returns 10 recovery codes", async () => {
    const u = await addMember(s, admin, "member");
    const setup = await s.api("POST", "/me/2fa/setup", { token: u.accessToken });
    expect(setup.status).toBe(200);
    const { secret, otpauthUrl } = setup.body;
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(otpauthUrl).toStartWith("otpauth://totp/ao:");
    expect(otpauthUrl).toContain(`secret=${secret}`);
    const stored = (await s.core.store.read(get<{ totp_secret_sealed: string; totp_enabled: number }>("SELECT totp_secret_sealed, totp_enabled FROM users WHERE id = ?", u.userId)))!;
    expect(stored.totp_secret_sealed).toStartWith("v1.");
    expect(stored.totp_secret_sealed).not.toContain(secret);
    expect(stored.totp_enabled).toBe(0);
    // Not enforced before enable:
    expect((await loginWith(u)).status).toBe(200);

    const wrong = await s.api("POST", "/me/2fa/enable", { token: u.accessToken, body: { code: "000000" === (await codeAt(secret)) ? "111111" : "000000" } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe("invalid_two_factor_code");
    expect((await s.api("POST", "/me/2fa/enable", { token: u.accessToken, body: {} })).status).toBe(400);

    const ok = await s.api("POST", "/me/2fa/enable", { token: u.accessToken, body: { code: await codeAt(secret) } });
    expect(ok.status).toBe(200);
    expect(ok.body.recoveryCodes.length).toBe(10);
    expect(new Set(ok.body.recoveryCodes).size).toBe(10);
    for (const c of ok.body.recoveryCodes) expect(c).toMatch(/^[0-9a-z]{5}-[0-9a-z]{5}$/);
    const hashes = await s.core.store.read(all<{ code_hash: string }>("SELECT code_hash FROM recovery_codes WHERE user_id = ?", u.userId));
    expect(hashes.length).toBe(10);
    expect(JSON.stringify(hashes)).not.toContain(ok.body.recoveryCodes[0]);
    expect((await s.api("GET", "/me", { token: u.accessToken })).body.twoFactorEnabled).toBe(true);

    expect((await s.api("POST", "/me/2fa/setup", { token: u.accessToken })).status).toBe(409);
    expect((await s.api("POST", "/me/2fa/enable", { token: u.accessToken, body: { code: await codeAt(secret, 30) } })).status).toBe(409);
  });

  test("enable before setup: 409; disable when not enabled: 409", async () => {
    const u = await addMember(s, admin, "member");
    expect((await s.api("POST", "/me/2fa/enable", { token: u.accessToken, body: { code: "123456" } })).status).toBe(409);
    expect((await s.api("POST", "/me/2fa/disable", { token: u.accessToken, body: { code: "123456" } })).status).toBe(409);
  });
});

describe("login with two-factor", () => {
  test("no code: two_factor_required; a code's time step works once; the next step works", async () => {
    const { u, secret, enabledWith } = await enrolled();
    const none = await loginWith(u);
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe("two_factor_required");
    // The code used to enable is spent (its time step; computing "now" again could land in the next).
    const replay = await loginWith(u, enabledWith);
    expect(replay.status).toBe(401);
    expect(replay.body.error.code).toBe("invalid_two_factor_code");
    const next = await codeAt(secret, 30);
    expect((await loginWith(u, next)).status).toBe(200);
    expect((await loginWith(u, next)).body.error.code).toBe("invalid_two_factor_code");
    // A wrong password with a code is still invalid_credentials.
    expect((await loginWith(u, await codeAt(secret, 30), "wrong password")).body.error.code).toBe("invalid_credentials");
  });

  test("codes from the wrong window are refused: more than one step away, or older than the last accepted", async () => {
    const { u, secret } = await enrolled();
    for (const offset of [-300, -90, 90, 300]) {
      const r = await loginWith(u, await codeAt(secret, offset));
      expect([offset, r.status, r.body.error.code]).toEqual([offset, 401, "invalid_two_factor_code"]);
    }
    // The previous step is within the drift tolerance, but older than the step used to enable.
    expect((await loginWith(u, await codeAt(secret, -30))).body.error.code).toBe("invalid_two_factor_code");
    expect((await loginWith(u, await codeAt(secret, 30))).status).toBe(200);
    expect(await count("SELECT count(*) AS n FROM sessions WHERE user_id = ?", u.userId)).toBe(2);
  });

  test("parallel logins with one fresh code: exactly one succeeds", async () => {
    const { u, secret } = await enrolled();
    const code = await codeAt(secret, 30);
    const answers = await Promise.all([1, 2, 3, 4].map(() => loginWith(u, code)));
    expect(answers.filter((a) => a.status === 200).length).toBe(1);
  });

  test("recovery codes: each works once, case- and dash-insensitively; wrong ones are refused", async () => {
    const { u, recoveryCodes } = await enrolled();
    expect((await loginWith(u, recoveryCodes[0])).status).toBe(200);
    expect((await loginWith(u, recoveryCodes[0])).body.error.code).toBe("invalid_two_factor_code");
    expect((await loginWith(u, recoveryCodes[1].toUpperCase().replace("-", ""))).status).toBe(200);
    expect((await loginWith(u, "zzzzz-zzzzz")).body.error.code).toBe("invalid_two_factor_code");
    expect(await count("SELECT count(*) AS n FROM recovery_codes WHERE user_id = ? AND used_at IS NOT NULL", u.userId)).toBe(2);
  });

  test("disable needs a right code (or recovery code); afterwards login needs none", async () => {
    const { u, recoveryCodes } = await enrolled();
    const wrong = await s.api("POST", "/me/2fa/disable", { token: u.accessToken, body: { code: "abcde-fghij" } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe("invalid_two_factor_code");
    expect((await s.api("POST", "/me/2fa/disable", { token: u.accessToken, body: { code: recoveryCodes[5] } })).status).toBe(204);
    expect((await loginWith(u)).status).toBe(200);
    expect(await count("SELECT count(*) AS n FROM recovery_codes WHERE user_id = ?", u.userId)).toBe(0);
    // Old recovery codes mean nothing after re-enrolment.
    const { secret } = (await s.api("POST", "/me/2fa/setup", { token: u.accessToken })).body;
    expect((await s.api("POST", "/me/2fa/enable", { token: u.accessToken, body: { code: await codeAt(secret) } })).status).toBe(200);
    expect((await loginWith(u, recoveryCodes[6])).body.error.code).toBe("invalid_two_factor_code");
  });
});
