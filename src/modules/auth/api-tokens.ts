// Personal API tokens (SPEC §4): `aot_` values shown once, stored as SHA-256. A token acts in
// one org with min(its role, its owner's current role), re-evaluated on every request
// (see principal.ts).
import { and, desc, eq, lt } from "drizzle-orm";
import type { Core } from "../../server/core";
import { apiTokens, memberships } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { newChecksummedToken, sha256Hex } from "../../lib/tokens";
import { forbidden, invalid, notFound } from "../../server/errors";
import { roleAtLeast, type Role } from "../orgs/roles";
import { pageOf, type Page, type PageQuery } from "../orgs/paging";
import { exec, row, rows, type Q } from "../../db/query";

type TokenRow = typeof apiTokens.$inferSelect;

export interface ApiTokenView {
  id: string;
  name: string;
  orgId: string;
  role: Role;
  lastFour: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  createdAt: string;
}

const view = (r: TokenRow): ApiTokenView => ({
  id: r.id,
  name: r.name,
  orgId: r.orgId,
  role: r.role,
  lastFour: r.lastFour,
  expiresAt: r.expiresAt,
  lastUsedAt: r.lastUsedAt,
  createdAt: r.createdAt,
});

/** Run it in a write: the owner's role is read and the token written with nothing in between. */
export function* createApiToken(
  core: Core,
  userId: string,
  input: { name: string; orgId: string; role?: Role; expiresAt?: string },
): Q<{ id: string; name: string; orgId: string; role: Role; token: string; expiresAt: string | null; createdAt: string }> {
  const membership = yield* row(
    core.db
      .select({ role: memberships.role })
      .from(memberships)
      .where(and(eq(memberships.orgId, input.orgId), eq(memberships.userId, userId))),
  );
  if (!membership) throw notFound("organization");
  const role = input.role ?? membership.role;
  if (!roleAtLeast(membership.role, role)) throw forbidden(`a token cannot have more than your role (${membership.role})`);
  let expiresAt: string | null = null;
  if (input.expiresAt !== undefined) {
    const ms = Date.parse(input.expiresAt);
    if (Number.isNaN(ms)) throw invalid("expiresAt is not a date", [{ field: "expiresAt", message: "expected an ISO 8601 date-time" }]);
    if (ms <= Date.now()) throw invalid("expiresAt is in the past", [{ field: "expiresAt", message: "must be in the future" }]);
    expiresAt = iso(ms);
  }
  const token = newChecksummedToken("aot_");
  const record: TokenRow = {
    id: newId("tok"),
    userId,
    orgId: input.orgId,
    name: input.name.trim(),
    role,
    tokenHash: sha256Hex(token),
    lastFour: token.slice(-4),
    expiresAt,
    lastUsedAt: null,
    createdAt: iso(),
  };
  yield* exec(core.db.insert(apiTokens).values(record));
  return { id: record.id, name: record.name, orgId: record.orgId, role, token, expiresAt, createdAt: record.createdAt };
}

/** The caller's tokens, newest first, never with their values. */
export function listApiTokens(core: Core, userId: string, q: PageQuery): Q<Page<ApiTokenView>> {
  return pageOf(
    q,
    1,
    (after, n) =>
      rows(
        core.db
          .select()
          .from(apiTokens)
          .where(and(eq(apiTokens.userId, userId), after ? lt(apiTokens.id, after[0]) : undefined))
          .orderBy(desc(apiTokens.id))
          .limit(n),
      ),
    (r) => [r.id],
    view,
  );
}

/** Deletes one of the user's tokens; after the commit, announce it: accessChanged(core, userId, "token_revoked"). */
export function* deleteApiToken(core: Core, userId: string, id: string): Q<void> {
  const gone = yield* rows(core.db.delete(apiTokens).where(and(eq(apiTokens.id, id), eq(apiTokens.userId, userId))).returning({ id: apiTokens.id }));
  if (gone.length === 0) throw notFound("token");
}
