// A person's own sign-ins (the account page): the list of live sessions and "sign out
// everywhere", which revokes every session at once (access tokens and sockets stop, as for logout).
import { and, desc, eq, isNull, lt } from "drizzle-orm";
import type { Core } from "../../server/core";
import { sessions, users } from "../../db/schema";
import { iso } from "../../lib/time";
import { pageOf, type PageQuery } from "../orgs/paging";
import { getUser, type UserRow } from "./users";
import { unauthorized } from "../../server/errors";
import { exec, rows, type Q } from "../../db/query";

export interface SessionView {
  id: string;
  client: string;
  current: boolean;
  createdAt: string;
  lastUsedAt: string;
}

/** The caller's sessions that were not revoked, newest first; `current` marks the one asking. */
export function listSessions(core: Core, userId: string, currentId: string, q: PageQuery) {
  return pageOf(
    q,
    1,
    (cursor, limit) =>
      rows(
        core.db
          .select()
          .from(sessions)
          .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt), cursor ? lt(sessions.id, cursor[0]) : undefined))
          .orderBy(desc(sessions.id))
          .limit(limit),
      ),
    (row) => [row.id],
    (row): SessionView => ({ id: row.id, client: row.client, current: row.id === currentId, createdAt: row.createdAt, lastUsedAt: row.lastUsedAt }),
  );
}

/**
 * Revokes every session of the user, the caller's own included; answers how many. After the
 * commit, when any: accessChanged(core, userId, "session_revoked"), one announcement that closes
 * every live socket of the person (they all belong to these sessions).
 */
export function* revokeAllSessions(core: Core, userId: string): Q<number> {
  const revoked = yield* rows(
    core.db
      .update(sessions)
      .set({ revokedAt: iso(), revokedReason: "signed_out_everywhere" })
      .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt)))
      .returning({ id: sessions.id }),
  );
  return revoked.length;
}

/** Changes the person's display name. */
export function* renameUser(core: Core, userId: string, name: string): Q<UserRow> {
  yield* exec(core.db.update(users).set({ name: name.trim(), updatedAt: iso() }).where(eq(users.id, userId)));
  const user = yield* getUser(core, userId);
  if (!user) throw unauthorized();
  return user;
}
