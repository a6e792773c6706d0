// Sign-in: password login, sessions (one per sign-in: the family of its refresh and access
// tokens), refresh-token rotation with reuse detection, logout.
import { accessChanged } from "./principal";
import type { Core } from "../../server/core";
import { sessions } from "../../db/schema";
import { ApiError, unauthorized } from "../../server/errors";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { randomSecret, sha256Hex } from "../../lib/tokens";
import { exec, get, run, type Q } from "../../db/query";
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

const INSERT_REFRESH = "INSERT INTO refresh_tokens (token_hash, session_id, expires_at, created_at) VALUES (?, ?, ?, ?)";
// The rotation itself: one statement, so of two parallel uses exactly one sees used_at NULL.
const USE_REFRESH = `UPDATE refresh_tokens SET used_at = ?
  WHERE token_hash = ? AND used_at IS NULL AND expires_at > ?
    AND session_id IN (SELECT id FROM sessions WHERE revoked_at IS NULL)
  RETURNING session_id`;
const FIND_REFRESH = "SELECT session_id, used_at, expires_at FROM refresh_tokens WHERE token_hash = ?";
const TOUCH_SESSION = "UPDATE sessions SET last_used_at = ? WHERE id = ? RETURNING user_id";
const REVOKE = "UPDATE sessions SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL RETURNING user_id";

function* newRefreshToken(sessionId: string, now: number): Q<string> {
  const token = randomSecret(43);
  yield* run(INSERT_REFRESH, sha256Hex(token), sessionId, now + REFRESH_TOKEN_TTL_MS, iso(now));
  return token;
}

/** Starts a sign-in family for the user and issues its first refresh token (run it in a write). */
export function* startSession(core: Core, userId: string, client: SessionClient): Q<IssuedSession> {
  const now = Date.now();
  const sessionId = newId("ses");
  yield* exec(core.db.insert(sessions).values({ id: sessionId, userId, client, createdAt: iso(now), lastUsedAt: iso(now) }));
  return { userId, sessionId, refreshToken: yield* newRefreshToken(sessionId, now) };
}

/** Revokes a sign-in family; answers its user when it was live, to announce with accessChanged after the commit. */
export function* revokeFamily(sessionId: string, reason: string): Q<string | null> {
  return (yield* get<{ user_id: string }>(REVOKE, iso(), reason, sessionId))?.user_id ?? null;
}

/** Revokes a sign-in family in its own write; its access tokens and live sockets stop at once. */
export async function revokeSession(core: Core, sessionId: string, reason: string) {
  const userId = await core.store.write(revokeFamily(sessionId, reason));
  if (userId) accessChanged(core, userId, "session_revoked");
}

/** The rotation: one write transaction; null when the token cannot be used (see refusal). */
function* rotate(hash: string, now: number): Q<IssuedSession | null> {
  const used = yield* get<{ session_id: string }>(USE_REFRESH, iso(now), hash, now);
  if (!used) return null;
  const { user_id } = (yield* get<{ user_id: string }>(TOUCH_SESSION, iso(now), used.session_id))!;
  return { userId: user_id, sessionId: used.session_id, refreshToken: yield* newRefreshToken(used.session_id, now) };
}

/**
 * Why a token could not be used, in a write transaction of its own: an already used one revokes
 * its family (reuse detection). Answers the error and the user whose access to announce.
 */
function* refusal(hash: string, now: number): Q<{ error: ApiError; revokedUser: string | null }> {
  const row = yield* get<{ session_id: string; used_at: string | null; expires_at: number }>(FIND_REFRESH, hash);
  if (row?.used_at) {
    const revokedUser = yield* revokeFamily(row.session_id, "refresh_token_reused");
    return { error: new ApiError(401, "refresh_token_reused", "this refresh token was already used; the whole sign-in was revoked"), revokedUser };
  }
  if (!row) return { error: unauthorized("the refresh token is unknown"), revokedUser: null };
  if (row.expires_at <= now) return { error: unauthorized("the refresh token expired"), revokedUser: null };
  return { error: unauthorized("the session was revoked"), revokedUser: null };
}

/**
 * Uses a refresh token once and issues its successor. An already used token means it leaked
 * (or a client lost a race it should have single-flighted): the whole family is revoked.
 */
export async function rotateRefreshToken(core: Core, token: string): Promise<IssuedSession> {
  const hash = sha256Hex(token);
  const now = Date.now();
  const issued = await core.store.write(rotate(hash, now));
  if (issued) return issued;
  const { error, revokedUser } = await core.store.write(refusal(hash, now));
  if (revokedUser) accessChanged(core, revokedUser, "session_revoked");
  throw error;
}

const invalidCredentials = () => new ApiError(401, "invalid_credentials", "wrong email or password");

/**
 * Password sign-in. Failures (unknown email, wrong password, wrong second-factor code) count
 * towards the rate limits; an unknown email costs the same password verification as a known one.
 */
export async function login(core: Core, input: { email: string; password: string; code?: string }, ip: string | null): Promise<UserRow> {
  const guard = failureGuard(core);
  const user = await core.store.read(findUserByEmail(core, input.email));
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
  return (await core.store.read(getUser(core, user.id))) ?? user;
}

export function* sessionUser(core: Core, userId: string): Q<UserRow> {
  const user = yield* getUser(core, userId);
  if (!user) throw unauthorized();
  return user;
}
