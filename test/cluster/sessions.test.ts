// Refresh-token rotation and reuse detection with two servers on one database: a token is used
// once whichever server it reaches, a reuse on the other server revokes the whole sign-in, and a
// revoked sign-in stops on both servers at once. Failed sign-ins count on every server.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startCluster, type Cluster } from "../helpers/cluster";
import type { TestServer } from "../helpers/server";
import { createAdmin, login, signUp } from "../helpers/identity";
import { get } from "../../src/db/query";
import { failureGuard } from "../../src/modules/auth/limits";
import { until } from "../workers/helpers";

let cluster: Cluster;
let a: TestServer;
let b: TestServer;
let email: string;
beforeAll(async () => {
  cluster = await startCluster(2);
  [a, b] = cluster.servers as [TestServer, TestServer];
  await createAdmin(a);
  email = (await signUp(a)).session.email;
}, 60_000);
afterAll(() => cluster?.stop());

const refresh = (s: TestServer, refreshToken: string) => s.api("POST", "/auth/refresh", { body: { refreshToken } });
const sessionOf = (accessToken: string) => JSON.parse(Buffer.from(accessToken.split(".")[1]!, "base64url").toString()).sid as string;
const revokedReason = async (sessionId: string) =>
  (await b.core.store.read(get<{ revoked_reason: string | null }>("SELECT revoked_reason FROM sessions WHERE id = ?", sessionId)))?.revoked_reason ?? null;

test("refreshed on A, the spent token presented on B: reuse, the sign-in revoked on both servers", async () => {
  const first = await login(a, email);
  const second = await refresh(a, first.refreshToken);
  expect(second.status).toBe(200);
  // Both servers honour the new access token before the reuse.
  for (const s of [a, b]) expect((await s.api("GET", "/me", { token: second.body.accessToken })).status).toBe(200);

  const reuse = await refresh(b, first.refreshToken);
  expect(reuse.status).toBe(401);
  expect(reuse.body.error.code).toBe("refresh_token_reused");
  expect(await revokedReason(sessionOf(first.accessToken))).toBe("refresh_token_reused");
  for (const s of [a, b]) {
    for (const token of [first.accessToken, second.body.accessToken]) expect((await s.api("GET", "/me", { token })).status).toBe(401);
    // The newest refresh token of the family is dead too, wherever it is presented.
    expect((await refresh(s, second.body.refreshToken)).status).toBe(401);
  }
  // Another sign-in of the same person is untouched.
  const other = await login(b, email);
  for (const s of [a, b]) expect((await s.api("GET", "/me", { token: other.accessToken })).status).toBe(200);
});

test("one token refreshed on A and B at the same time: one success, the other is a reuse, as on one server", async () => {
  for (let round = 0; round < 5; round++) {
    const first = await login(a, email);
    const answers = await Promise.all([refresh(a, first.refreshToken), refresh(b, first.refreshToken)]);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 401]);
    expect(answers.find((r) => r.status === 401)!.body.error.code).toBe("refresh_token_reused");
    const live = await b.core.store.read(
      get<{ n: number }>("SELECT count(*) AS n FROM refresh_tokens WHERE session_id = ? AND used_at IS NULL", sessionOf(first.accessToken)),
    );
    // The winner's successor was issued, and the loser's reuse revoked the family it belongs to.
    expect(live!.n).toBe(1);
    expect(await revokedReason(sessionOf(first.accessToken))).toBe("refresh_token_reused");
    const winner = answers.find((r) => r.status === 200)!;
    for (const s of [a, b]) expect((await s.api("GET", "/me", { token: winner.body.accessToken })).status).toBe(401);
  }
});

test("signed out on A: the session's access token stops on B at once", async () => {
  const t = await login(a, email);
  expect((await b.api("GET", "/me", { token: t.accessToken })).status).toBe(200);
  expect((await a.api("POST", "/auth/logout", { token: t.accessToken })).status).toBe(204);
  expect((await b.api("GET", "/me", { token: t.accessToken })).status).toBe(401);
  expect((await refresh(b, t.refreshToken)).status).toBe(401);
});

test("wrong passwords spread over both servers lock the account on both, as on one server", async () => {
  const { session: u } = await signUp(a);
  const wrong = (s: TestServer) => s.api("POST", "/auth/login", { body: { email: u.email, password: "wrong password" } });
  for (let i = 0; i < 5; i++) {
    expect((await wrong(a)).status).toBe(401);
    expect((await wrong(b)).status).toBe(401);
  }
  // Each server hears of the other's failures on the bus, a moment after its answer.
  const limited = (s: TestServer) => {
    try {
      failureGuard(s.core).check({ account: u.userId, ip: "127.0.0.1" });
      return false;
    } catch {
      return true;
    }
  };
  await until(() => limited(a) && limited(b));
  for (const s of [a, b]) {
    const r = await s.api("POST", "/auth/login", { body: { email: u.email, password: u.password } });
    expect(r.status).toBe(429);
    expect(r.body.error.code).toBe("rate_limited");
  }
  // Another person is not held.
  expect((await login(b, email)).accessToken).toBeString();
});
