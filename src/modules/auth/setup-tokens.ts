// The one-time setup tokens, kept in the database so that every server of a service on one
// PostgreSQL database says setup is pending and accepts the link any of them logged (a person's
// load balancer may send the setup page's requests to any server). Only SHA-256 hashes are stored;
// the token itself is only in the link its server logged.
//
// A token works for SETUP_TOKEN_LIFETIME_MS. A running server logs a new link at half that age
// (src/server/bootstrap.ts), so its links keep working; the token of a server that is gone without
// removing it (killed on PostgreSQL, where the table is shared) stops working by itself.
import { all, get, run, type Q } from "../../db/query";
import { iso } from "../../lib/time";
import { constantTimeEqual, sha256Hex } from "../../lib/tokens";

/** How long a setup token is accepted after its server logged it. */
export const SETUP_TOKEN_LIFETIME_MS = 24 * 60 * 60_000;

/** The oldest `created_at` still accepted. */
export const oldestAccepted = (now: number) => iso(now - SETUP_TOKEN_LIFETIME_MS);

/**
 * Records a server's new token. `alone`: this server is the only one on its database (SQLite), so
 * the tokens of its earlier runs are dropped, and a restart's new link replaces the old one.
 */
export function* addSetupToken(serverId: string, token: string, alone: boolean, now = Date.now()): Q<void> {
  if (alone) yield* clearSetupTokens();
  else yield* run("DELETE FROM setup_tokens WHERE created_at < ?", oldestAccepted(now));
  yield* run("INSERT INTO setup_tokens (token_hash, server_id, created_at) VALUES (?, ?, ?)", sha256Hex(token), serverId, iso(now));
}

/** A running server's next token beside its current one; its tokens past their lifetime go. */
export function* renewSetupToken(serverId: string, token: string, now = Date.now()): Q<void> {
  yield* run("DELETE FROM setup_tokens WHERE server_id = ? AND created_at < ?", serverId, oldestAccepted(now));
  yield* addSetupToken(serverId, token, false, now);
}

/** A stopping server's token stops working with it (as when the token lived in its memory alone). */
export function* removeSetupTokensOf(serverId: string): Q<void> {
  yield* run("DELETE FROM setup_tokens WHERE server_id = ?", serverId);
}

/** The first user exists: no setup is pending anywhere. Part of the transaction that creates that user. */
export function* clearSetupTokens(): Q<void> {
  yield* run("DELETE FROM setup_tokens");
}

/** Whether first-run setup is open: no user yet, and a server has logged a setup link. */
export function* setupPending(): Q<boolean> {
  const r = yield* get<{ pending: number }>(
    "SELECT CASE WHEN EXISTS (SELECT 1 FROM setup_tokens) AND NOT EXISTS (SELECT 1 FROM users) THEN 1 ELSE 0 END AS pending",
  );
  return Number(r?.pending) === 1;
}

/** Whether the first user exists. */
export function* setupDone(): Q<boolean> {
  const r = yield* get<{ done: number }>("SELECT CASE WHEN EXISTS (SELECT 1 FROM users) THEN 1 ELSE 0 END AS done");
  return Number(r?.done) === 1;
}

/** When a server's newest token was made (ISO), or null when it has none. */
export function* newestSetupTokenOf(serverId: string): Q<string | null> {
  const r = yield* get<{ at: string | null }>("SELECT max(created_at) AS at FROM setup_tokens WHERE server_id = ?", serverId);
  return r?.at ?? null;
}

/**
 * Whether the token is one of the pending ones: its hash compared in constant time with each
 * stored hash still in its lifetime (two a server at most), all of them, whichever matches.
 */
export function* isSetupToken(token: string, now = Date.now()): Q<boolean> {
  const presented = sha256Hex(token);
  const stored = yield* all<{ token_hash: string }>("SELECT token_hash FROM setup_tokens WHERE created_at >= ?", oldestAccepted(now));
  let found = false;
  for (const s of stored) found = constantTimeEqual(presented, s.token_hash) || found;
  return found;
}
