// Organizations and their members (SPEC §3). Rules on roles:
// - only an owner may give the owner role, or change or remove an owner (an admin gets 403);
// - the last owner can be neither demoted nor removed (409 conflict), so an org is never orphaned.
import { and, desc, eq, lt, or, sql } from "drizzle-orm";
import type { Core } from "../../server/core";
import { apiTokens, memberships, orgs, users } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { conflict, forbidden, notFound } from "../../server/errors";
import { findUserByEmail, type IdentityStore } from "../auth/users";
import { pageOf, type Page, type PageQuery } from "./paging";
import type { Role } from "./roles";
import { exec, row, rows, type Q } from "../../db/query";

export type OrgRow = typeof orgs.$inferSelect;

export interface OrgView {
  id: string;
  name: string;
  requireWorkerApproval: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface MemberView {
  userId: string;
  email: string;
  name: string;
  role: Role;
  joinedAt: string;
}

export const orgView = (o: OrgRow): OrgView => ({
  id: o.id,
  name: o.name,
  requireWorkerApproval: o.requireWorkerApproval,
  createdAt: o.createdAt,
  updatedAt: o.updatedAt,
});

/** Creates an org with `ownerId` as its owner (run it in a write: the org and its owner commit together). */
export function* createOrg(core: IdentityStore, name: string, ownerId: string): Q<OrgRow> {
  const now = iso();
  const org: OrgRow = { id: newId("org"), name: name.trim(), requireWorkerApproval: false, createdAt: now, updatedAt: now };
  yield* exec(core.db.insert(orgs).values(org));
  yield* exec(core.db.insert(memberships).values({ orgId: org.id, userId: ownerId, role: "owner", createdAt: now }));
  return org;
}

export function* getOrg(core: IdentityStore, orgId: string): Q<OrgRow | undefined> {
  return yield* row(core.db.select().from(orgs).where(eq(orgs.id, orgId)));
}

/** The oldest org with this name (org names are not unique; the CLI finds orgs by name). */
export function* findOrgByName(core: IdentityStore, name: string): Q<OrgRow | undefined> {
  return yield* row(core.db.select().from(orgs).where(eq(orgs.name, name.trim())).orderBy(orgs.id).limit(1));
}

/**
 * The orgs a user belongs to, with the user's role, newest first. `only` narrows the list to
 * one org with a capped role: what a personal API token sees.
 */
export function* listOrgsOf(core: Core, userId: string, q: PageQuery, only?: { orgId: string; role: Role | null }): Q<Page<OrgView & { role: Role }>> {
  if (only) {
    const org = only.role && !q.cursor ? yield* getOrg(core, only.orgId) : undefined;
    return { items: org ? [{ ...orgView(org), role: only.role! }] : [], nextCursor: null };
  }
  return yield* pageOf(
    q,
    1,
    (after, n) =>
      rows(
        core.db
          .select({ org: orgs, role: memberships.role })
          .from(memberships)
          .innerJoin(orgs, eq(orgs.id, memberships.orgId))
          .where(and(eq(memberships.userId, userId), after ? lt(orgs.id, after[0]) : undefined))
          .orderBy(desc(orgs.id))
          .limit(n),
      ),
    (r) => [r.org.id],
    (r) => ({ ...orgView(r.org), role: r.role }),
  );
}

export function* updateOrg(core: Core, orgId: string, patch: { name?: string; requireWorkerApproval?: boolean }): Q<OrgRow> {
  const set: Partial<OrgRow> = { updatedAt: iso() };
  if (patch.name !== undefined) set.name = patch.name.trim();
  if (patch.requireWorkerApproval !== undefined) set.requireWorkerApproval = patch.requireWorkerApproval;
  const updated = yield* row(core.db.update(orgs).set(set).where(eq(orgs.id, orgId)).returning());
  if (!updated) throw notFound("organization");
  return updated;
}

const memberColumns = { userId: users.id, email: users.email, name: users.name, role: memberships.role, joinedAt: memberships.createdAt };

/** Members, most recently joined first. */
export function listMembers(core: Core, orgId: string, q: PageQuery): Q<Page<MemberView>> {
  return pageOf(
    q,
    2,
    (after, n) =>
      rows(
        core.db
          .select(memberColumns)
          .from(memberships)
          .innerJoin(users, eq(users.id, memberships.userId))
          .where(
            and(
              eq(memberships.orgId, orgId),
              after
                ? or(lt(memberships.createdAt, after[0]), and(eq(memberships.createdAt, after[0]), lt(memberships.userId, after[1])))
                : undefined,
            ),
          )
          .orderBy(desc(memberships.createdAt), desc(memberships.userId))
          .limit(n),
      ),
    (m) => [m.joinedAt, m.userId],
    (m) => m,
  );
}

function* member(core: IdentityStore, orgId: string, userId: string): Q<MemberView | undefined> {
  return yield* row(
    core.db
      .select(memberColumns)
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.userId))
      .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))),
  );
}

function* ownerCount(core: IdentityStore, orgId: string): Q<number> {
  return (yield* row(
    core.db
      .select({ n: sql<number>`count(*)` })
      .from(memberships)
      .where(and(eq(memberships.orgId, orgId), eq(memberships.role, "owner"))),
  ))!.n;
}

/** Adds an existing user (by email) to the org (run it in a write). Unknown email: 404; already a member: 409. */
export function* addMember(core: Core, orgId: string, actorRole: Role, input: { email: string; role: Role }): Q<MemberView> {
  if (input.role === "owner" && actorRole !== "owner") throw forbidden("only an owner can make someone an owner");
  const user = yield* findUserByEmail(core, input.email);
  if (!user) throw notFound("user");
  if (yield* member(core, orgId, user.id)) throw conflict("this user is already a member");
  yield* exec(core.db.insert(memberships).values({ orgId, userId: user.id, role: input.role, createdAt: iso() }));
  return (yield* member(core, orgId, user.id))!;
}

/**
 * Changes a member's role (run it in a write). After the commit, announce it with
 * accessChanged(core, userId, "role_changed"): the member's API tokens act with min(token role,
 * member role), and their holders re-check.
 */
export function* changeMemberRole(core: Core, orgId: string, actorRole: Role, userId: string, role: Role): Q<MemberView> {
  const current = yield* member(core, orgId, userId);
  if (!current) throw notFound("member");
  if ((current.role === "owner" || role === "owner") && actorRole !== "owner" && current.role !== role) {
    throw forbidden("only an owner can give or take the owner role");
  }
  if (current.role === "owner" && role !== "owner" && (yield* ownerCount(core, orgId)) === 1) {
    throw conflict("the last owner cannot be demoted; make someone else owner first");
  }
  yield* exec(core.db.update(memberships).set({ role }).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))));
  return { ...current, role };
}

/** Removes a member (run it in a write); after the commit, announce it with accessChanged(core, userId, "membership_removed"). */
export function* removeMember(core: Core, orgId: string, actorRole: Role, userId: string): Q<void> {
  const current = yield* member(core, orgId, userId);
  if (!current) throw notFound("member");
  if (current.role === "owner" && actorRole !== "owner") throw forbidden("only an owner can remove an owner");
  if (current.role === "owner" && (yield* ownerCount(core, orgId)) === 1) throw conflict("the last owner cannot be removed");
  yield* exec(core.db.delete(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))));
  // Their tokens for this org go too: otherwise re-adding the person would bring them back to life.
  yield* exec(core.db.delete(apiTokens).where(and(eq(apiTokens.orgId, orgId), eq(apiTokens.userId, userId))));
}

/** Gives a user a role in an org, adding the membership when missing (admin CLI). */
export function* setMembership(core: IdentityStore, orgId: string, userId: string, role: Role): Q<void> {
  yield* exec(
    core.db
      .insert(memberships)
      .values({ orgId, userId, role, createdAt: iso() })
      .onConflictDoUpdate({ target: [memberships.orgId, memberships.userId], set: { role } }),
  );
}
