// Access tokens (SPEC §4): 15-minute HS256 JWTs naming their session. Every forged, altered,
// expired or foreign token is 401 unauthorized, on HTTP and on the live-updates socket alike.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, login, type Session } from "../helpers/identity";

let s: TestServer;
let other: TestServer;
let admin: Session;
let user: Session;
beforeAll(async () => {
  [s, other] = await Promise.all([startTestServer(), startTestServer()]);
  admin = await createAdmin(s);
  user = await addMember(s, admin, "member");
});
afterAll(() => Promise.all([s.stop(), other.stop()]));

const b64 = (v: unknown) => Buffer.from(typeof v === "string" ? v : JSON.stringify(v)).toString("base64url");
const claimsOf = (jwt: string) => JSON.parse(Buffer.from(jwt.split(".")[1], "base64url").toString());

/** A JWT signed like the server's own (the @elysiajs/jwt secret is the UTF-8 bytes of core.jwtSecret). */
function sign(payload: Record<string, unknown>, opts: { secret?: string; alg?: string } = {}): string {
  const alg = opts.alg ?? "HS256";
  const head = b64({ alg, typ: "JWT" });
  const body = b64(payload);
  if (alg === "none") return `${head}.${body}.`;
  const hash = { HS256: "sha256", HS384: "sha384", HS512: "sha512" }[alg]!;
  const sig = createHmac(hash, opts.secret ?? s.core.jwtSecret).update(`${head}.${body}`).digest("base64url");
  return `${head}.${body}.${sig}`;
}

const me = (token: string) => s.api("GET", "/me", { token });
const now = () => Math.floor(Date.now() / 1000);

describe("access tokens", () => {
  test("the server's own token works, and one signed here with the same key and claims works too (the helper is faithful)", async () => {
    expect((await me(user.accessToken)).status).toBe(200);
    const c = claimsOf(user.accessToken);
    expect(c.exp - c.iat).toBe(900);
    expect((await me(sign({ sub: c.sub, sid: c.sid, typ: "access", iat: now(), exp: now() + 60 }))).status).toBe(200);
  });

  test.each([
    ["expired", () => ({ ...claimsOf(user.accessToken), iat: now() - 1000, exp: now() - 100 })],
    ["no expiry", () => ({ sub: user.userId, sid: claimsOf(user.accessToken).sid, typ: "access", iat: now() })],
    ["not an access token (typ missing)", () => ({ sub: user.userId, sid: claimsOf(user.accessToken).sid, iat: now(), exp: now() + 60 })],
    ["unknown session", () => ({ sub: user.userId, sid: "ses_doesnotexist", typ: "access", iat: now(), exp: now() + 60 })],
    ["session of another user", () => ({ sub: admin.userId, sid: claimsOf(user.accessToken).sid, typ: "access", iat: now(), exp: now() + 60 })],
    ["sid not a string", () => ({ sub: user.userId, sid: 7, typ: "access", iat: now(), exp: now() + 60 })],
  ])("correctly signed but %s: 401", async (_name, payload) => {
    const r = await me(sign(payload()));
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe("unauthorized");
  });

  test("altered: another subject under the old signature, a changed signature, alg none, another HMAC, another key: 401", async () => {
    const [head, body, sig] = user.accessToken.split(".");
    const c = claimsOf(user.accessToken);
    const forged = [
      `${head}.${b64({ ...c, sub: admin.userId })}.${sig}`,
      `${head}.${body}.${sig.slice(0, -2)}${sig.endsWith("AA") ? "BB" : "AA"}`,
      `${head}.${body}.`,
      `${head}.${body}`,
      sign(c, { alg: "none" }),
      sign(c, { alg: "HS512" }),
      sign(c, { secret: "some other key" }),
      sign(c, { secret: other.core.jwtSecret }),
    ];
    for (const token of forged) {
      const r = await me(token);
      expect([token, r.status, r.body.error?.code]).toEqual([token, 401, "unauthorized"]);
    }
  });

  test("a token of another server instance (another data directory, another key) is refused there", async () => {
    const otherAdmin = await createAdmin(other);
    expect((await other.api("GET", "/me", { token: otherAdmin.accessToken })).status).toBe(200);
    const r = await me(otherAdmin.accessToken);
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe("unauthorized");
    expect((await other.api("GET", "/me", { token: user.accessToken })).status).toBe(401);
  });

  test("a refresh token or junk as the bearer value, or a malformed header: 401", async () => {
    const t = await login(s, user.email);
    for (const headers of [
      { authorization: `Bearer ${t.refreshToken}` },
      { authorization: "Bearer not.a.jwt" },
      { authorization: "Bearer " },
      { authorization: `Bearer ${t.accessToken} extra` },
      { authorization: `Token ${t.accessToken}` },
      { authorization: t.accessToken },
    ]) {
      const r = await s.api("GET", "/me", { headers });
      expect([headers.authorization, r.status, r.body.error?.code]).toEqual([headers.authorization, 401, "unauthorized"]);
    }
    // The scheme is case-insensitive (RFC 7235).
    expect((await s.api("GET", "/me", { headers: { authorization: `bearer ${t.accessToken}` } })).status).toBe(200);
  });

  test("the live-updates socket refuses the same forgeries", async () => {
    const c = claimsOf(user.accessToken);
    const answer = (token: string) =>
      new Promise<unknown>((resolve) => {
        const ws = new WebSocket(s.url.replace("http", "ws") + "/api/v1/ws");
        ws.onopen = () => ws.send(JSON.stringify({ type: "auth", token }));
        ws.onmessage = (e) => {
          resolve(JSON.parse(String(e.data)));
          ws.close();
        };
        ws.onclose = () => resolve("closed");
      });
    expect(await answer(sign(c, { alg: "HS512" }))).toMatchObject({ type: "error", code: "unauthorized" });
    expect(await answer(sign({ ...c, exp: now() - 10 }))).toMatchObject({ type: "error", code: "unauthorized" });
    expect(await answer(user.accessToken)).not.toMatchObject({ type: "error" });
  });
});
