// Who is calling: resolved from the Authorization header on every request. The SQL texts are
// constants, so the SQLite runner prepares each once: this runs on every request.
import type { AccessChange, Core } from "../../server/core";
import { get, run, type Q } from "../../db/query";
import { isWellFormedToken, sha256Hex } from "../../lib/tokens";
import { lesserRole, type Role } from "../orgs/roles";
import { iso } from "../../lib/time";
import { forgetEverywhere, RowCache } from "../../db/cache";

// `name` is what the caller is called as an actor (tasks/names.ts): read with the credential, so
// a task's create answer needs no second query for its creator's name.
export type Principal =
  | { kind: "user"; userId: string; sessionId: string; isAdmin: boolean; name: string }
  | { kind: "token"; userId: string; tokenId: string; orgId: string; role: Role | null; name: string };

export interface AccessClaims {
  sub: string;
  sid: string;
}

export type Actor = { type: "user" | "token"; id: string };

export const actorOf = (p: Principal): Actor =>
  p.kind === "user" ? { type: "user", id: p.userId } : { type: "token", id: p.tokenId };

interface TokenRow {
  id: string;
  user_id: string;
  org_id: string;
  role: Role;
  expires_at: string | null;
  last_used_at: string | null;
  member_role: Role | null;
  display_name: string;
}

const TOKEN = `SELECT t.id, t.user_id, t.org_id, t.role, t.expires_at, t.last_used_at, m.role AS member_role,
       (CASE WHEN u.name <> '' THEN u.name ELSE u.email END) || ' (token ' || t.name || ')' AS display_name
  FROM api_tokens t JOIN users u ON u.id = t.user_id
  LEFT JOIN memberships m ON m.org_id = t.org_id AND m.user_id = t.user_id
 WHERE t.token_hash = ?`;
const TOUCH_TOKEN = "UPDATE api_tokens SET last_used_at = ? WHERE id = ?";
const SESSION = `SELECT s.revoked_at, s.user_id, u.is_admin, CASE WHEN u.name <> '' THEN u.name ELSE u.email END AS display_name
  FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?`;
const MEMBERSHIP = "SELECT role FROM memberships WHERE org_id = ? AND user_id = ?";

const tokenCaches = new WeakMap<Core, RowCache<TokenRow>>();
function tokenCache(core: Core) {
  let c = tokenCaches.get(core);
  if (!c) {
    const cache = (c = new RowCache<TokenRow>(core));
    tokenCaches.set(core, cache);
    // A deleted token, a changed role or a removed membership: the next request reads afresh.
    core.events.on("access.changed", () => cache.clear());
  }
  return c;
}

/** After a write that changes what a token row joins to and that emits no access.changed (a member added). */
export function forgetTokens(core: Core) {
  tokenCaches.get(core)?.clear();
  forgetEverywhere(core);
}

/** The bus channel of accessChanged: every server's sockets of the user re-check at once. */
const ACCESS_CHANGED = "access.changed";

/**
 * Announces, after the commit, that the user's access was revoked, removed or changed: the token
 * cache forgets first, so the listeners (live sockets re-checking) read afresh. On PostgreSQL the
 * other servers hear it on the bus after their caches.forget (one publisher's messages arrive in
 * order), and emit the same event (relayAccessChanges).
 */
export function accessChanged(core: Core, userId: string, reason: AccessChange) {
  forgetTokens(core);
  core.events.emit("access.changed", { userId, reason });
  if (core.sqlite === null) core.bus.publish(ACCESS_CHANGED, { from: core.instanceId, userId, reason });
}

/** Emits the other servers' accessChanged here (PostgreSQL; nothing on SQLite), so a revocation stops on every server at once. */
export function relayAccessChanges(core: Core) {
  if (core.sqlite !== null) return;
  core.bus.on(ACCESS_CHANGED, ({ from, userId, reason }: { from: string; userId: string; reason: AccessChange }) => {
    // The bus delivers to the publishing server too, which emitted already.
    if (from !== core.instanceId) core.events.emit("access.changed", { userId, reason });
  });
}

/** Resolves a personal API token, or null when it is unknown, malformed or expired. */
export function* principalFromApiToken(core: Core, value: string): Q<Principal | null> {
  if (!isWellFormedToken(value, "aot_")) return null; // no database read for garbage
  const hash = sha256Hex(value);
  // A hit yields no query; a row read while a revocation committed is not kept (RowCache.readThrough).
  const row = yield* tokenCache(core).readThrough(hash, () => get<TokenRow>(TOKEN, hash));
  if (!row) return null;
  const now = iso();
  if (row.expires_at && row.expires_at <= now) return null;
  // lastUsedAt to the minute: one write a minute per token, not one per request.
  if (!row.last_used_at || Date.parse(now) - Date.parse(row.last_used_at) >= 60_000) {
    row.last_used_at = now; // first: requests that arrive while the write runs do not write too
    yield* run(TOUCH_TOKEN, now, row.id);
  }
  return {
    kind: "token",
    userId: row.user_id,
    tokenId: row.id,
    orgId: row.org_id,
    role: row.member_role ? lesserRole(row.role, row.member_role) : null,
    name: row.display_name,
  };
}

/** Resolves verified access-token claims; null when the session was revoked. */
export function* principalFromClaims(core: Core, claims: AccessClaims): Q<Principal | null> {
  const row = yield* get<{ revoked_at: string | null; is_admin: number; user_id: string; display_name: string }>(SESSION, claims.sid);
  if (!row || row.revoked_at || row.user_id !== claims.sub) return null;
  return { kind: "user", userId: claims.sub, sessionId: claims.sid, isAdmin: row.is_admin === 1, name: row.display_name };
}

/** The caller's role in an org, or null when the caller has no access to it. */
export function* roleIn(core: Core, principal: Principal, orgId: string): Q<Role | null> {
  if (principal.kind === "token") return principal.orgId === orgId ? principal.role : null;
  return (yield* get<{ role: Role }>(MEMBERSHIP, orgId, principal.userId))?.role ?? null;
}
