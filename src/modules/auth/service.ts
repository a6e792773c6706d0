// Sign-in: password login, sessions (one per sign-in: the family of its refresh and access
// tokens), refresh-token rotation with reuse detection, logout.
import { forgetTokens } from "./principal";
import type { Core } from "../../server/core";
import { sessions } from "../../db/schema";
import { ApiError, unauthorized } from "../../server/errors";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { randomSecret, sha256Hex } from "../../lib/tokens";
import { findUserByEmail, getUser, verifyPassword, type UserRow } from "./users";
import { accountOf, failureGuard } from "./limits";
import { checkSecondFactor, invalidCode } from "./two-factor";

/** Refresh tokens live 30 days; each use replaces it, so an active client never meets the limit. */
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 60 * 60 * 1000;

export type SessionClient = "web" | "cli" | "device";

export interface IssuedSession {
  userId: string;
  sessionId: string;
  refreshToken: string;
}

const statements = new WeakMap<Core, ReturnType<typeof prepare>>();

function prepare(core: Core) {
  const q = core.sqlite;
  return {
    insertRefresh: q.query<unknown, [string, string, number, string]>(
      "INSERT INTO refresh_tokens (token_hash, session_id, expires_at, created_at) VALUES (?, ?, ?, ?)",
    ),
    // The rotation itself: one statement, so of two parallel uses exactly one sees used_at NULL.
    useRefresh: q.query<{ session_id: string }, [string, string, number]>(
      `UPDATE refresh_tokens SET used_at = ?1
        WHERE token_hash = ?2 AND used_at IS NULL AND expires_at > ?3
          AND session_id IN (SELECT id FROM sessions WHERE revoked_at IS NULL)
        RETURNING session_id`,
    ),
    findRefresh: q.query<{ session_id: string; used_at: string | null; expires_at: number }, [string]>(
      "SELECT session_id, used_at, expires_at FROM refresh_tokens WHERE token_hash = ?",
    ),
    touchSession: q.query<{ user_id: string }, [string, string]>("UPDATE sessions SET last_used_at = ? WHERE id = ? RETURNING user_id"),
    revoke: q.query<{ user_id: string }, [string, string, string]>(
      "UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL RETURNING user_id",
    ),
  };
}

function stmts(core: Core) {
  let s = statements.get(core);
  if (!s) statements.set(core, (s = prepare(core)));
  return s;
}

function newRefreshToken(core: Core, sessionId: string, now: number): string {
  const token = randomSecret(43);
  stmts(core).insertRefresh.run(sha256Hex(token), sessionId, now + REFRESH_TOKEN_TTL_MS, iso(now));
  return token;
}

/** Starts a sign-in family for the user and issues its first refresh token. */
export function startSession(core: Core, userId: string, client: SessionClient): IssuedSession {
  const now = Date.now();
  const sessionId = newId("ses");
  const refreshToken = core.sqlite.transaction(() => {
    core.db.insert(sessions).values({ id: sessionId, userId, client, createdAt: iso(now), lastUsedAt: iso(now) }).run();
    return newRefreshToken(core, sessionId, now);
  })();
  return { userId, sessionId, refreshToken };
}

/** Revokes a sign-in family; its access tokens and live sockets stop at once. Not inside a transaction (it announces the change). */
export function revokeSession(core: Core, sessionId: string, reason: string) {
  const revoked = stmts(core).revoke.get(iso(), reason, sessionId);
  // Before the listeners: the live sockets re-check through the token cache.
  forgetTokens(core);
  if (revoked) core.events.emit("access.changed", { userId: revoked.user_id, reason: "session_revoked" });
}

/**
 * Uses a refresh token once and issues its successor. An already used token means it leaked
 * (or a client lost a race it should have single-flighted): the whole family is revoked.
 */
export function rotateRefreshToken(core: Core, token: string): IssuedSession {
  const s = stmts(core);
  const hash = sha256Hex(token);
  const now = Date.now();
  const issued = core.sqlite
    .transaction(() => {
      const used = s.useRefresh.get(iso(now), hash, now);
      if (!used) return null;
      const { user_id } = s.touchSession.get(iso(now), used.session_id)!;
      return { userId: user_id, sessionId: used.session_id, refreshToken: newRefreshToken(core, used.session_id, now) };
    })
    .immediate();
  if (issued) return issued;
  const row = s.findRefresh.get(hash);
  if (row?.used_at) {
    revokeSession(core, row.session_id, "refresh_token_reused");
    throw new ApiError(401, "refresh_token_reused", "this refresh token was already used; the whole sign-in was revoked");
  }
  if (!row) throw unauthorized("the refresh token is unknown");
  if (row.expires_at <= now) throw unauthorized("the refresh token expired");
  throw unauthorized("the session was revoked");
}

const invalidCredentials = () => new ApiError(401, "invalid_credentials", "wrong email or password");

/**
 * Password sign-in. Failures (unknown email, wrong password, wrong second-factor code) count
 * towards the rate limits; an unknown email costs the same password verification as a known one.
 */
export async function login(core: Core, input: { email: string; password: string; code?: string }, ip: string | null): Promise<UserRow> {
  const guard = failureGuard(core);
  const user = findUserByEmail(core, input.email);
  const subject = { account: accountOf(user, input.email), ip };
  guard.check(subject);
  const ok = await verifyPassword(core, input.password, user?.passwordHash);
  if (!user || !ok) {
    guard.fail(subject);
    throw invalidCredentials();
  }
  if (user.totpEnabled) {
    if (!input.code) throw new ApiError(401, "two_factor_required", "this account needs a two-factor code");
    if (!(await checkSecondFactor(core, user, input.code))) {
      guard.fail(subject);
      throw invalidCode(401);
    }
  }
  return getUser(core, user.id) ?? user;
}

export function sessionUser(core: Core, userId: string): UserRow {
  const user = getUser(core, userId);
  if (!user) throw unauthorized();
  return user;
}
