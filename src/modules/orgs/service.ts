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
import { forgetTokens } from "../auth/principal";
import { pageOf, type Page, type PageQuery } from "./paging";
import type { Role } from "./roles";

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

/** Creates an org with `ownerId` as its owner (synchronous: callers may wrap it in a transaction). */
export function createOrg(core: IdentityStore, name: string, ownerId: string): OrgRow {
  const now = iso();
  const org: OrgRow = { id: newId("org"), name: name.trim(), requireWorkerApproval: false, createdAt: now, updatedAt: now };
  core.sqlite.transaction(() => {
    core.db.insert(orgs).values(org).run();
    core.db.insert(memberships).values({ orgId: org.id, userId: ownerId, role: "owner", createdAt: now }).run();
  })();
  return org;
}

export function getOrg(core: IdentityStore, orgId: string): OrgRow | undefined {
  return core.db.select().from(orgs).where(eq(orgs.id, orgId)).get();
}

/** The oldest org with this name (org names are not unique; the CLI finds orgs by name). */
export function findOrgByName(core: IdentityStore, name: string): OrgRow | undefined {
  return core.db.select().from(orgs).where(eq(orgs.name, name.trim())).orderBy(orgs.id).limit(1).get();
}

/**
 * The orgs a user belongs to, with the user's role, newest first. `only` narrows the list to
 * one org with a capped role: what a personal API token sees.
 */
export function listOrgsOf(core: Core, userId: string, q: PageQuery, only?: { orgId: string; role: Role | null }): Page<OrgView & { role: Role }> {
  if (only) {
    const org = only.role && !q.cursor ? getOrg(core, only.orgId) : undefined;
    return { items: org ? [{ ...orgView(org), role: only.role! }] : [], nextCursor: null };
  }
  return pageOf(
    q,
    1,
    (after, n) =>
      core.db
        .select({ org: orgs, role: memberships.role })
        .from(memberships)
        .innerJoin(orgs, eq(orgs.id, memberships.orgId))
        .where(and(eq(memberships.userId, userId), after ? lt(orgs.id, after[0]) : undefined))
        .orderBy(desc(orgs.id))
        .limit(n)
        .all(),
    (r) => [r.org.id],
    (r) => ({ ...orgView(r.org), role: r.role }),
  );
}

export function updateOrg(core: Core, orgId: string, patch: { name?: string; requireWorkerApproval?: boolean }): OrgRow {
  const set: Partial<OrgRow> = { updatedAt: iso() };
  if (patch.name !== undefined) set.name = patch.name.trim();
  if (patch.requireWorkerApproval !== undefined) set.requireWorkerApproval = patch.requireWorkerApproval;
  const row = core.db.update(orgs).set(set).where(eq(orgs.id, orgId)).returning().get();
  if (!row) throw notFound("organization");
  return row;
}

const memberColumns = { userId: users.id, email: users.email, name: users.name, role: memberships.role, joinedAt: memberships.createdAt };

/** Members, most recently joined first. */
export function listMembers(core: Core, orgId: string, q: PageQuery): Page<MemberView> {
  return pageOf(
    q,
    2,
    (after, n) =>
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
        .limit(n)
        .all(),
    (m) => [m.joinedAt, m.userId],
    (m) => m,
  );
}

function member(core: IdentityStore, orgId: string, userId: string): MemberView | undefined {
  return core.db
    .select(memberColumns)
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.userId))
    .where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId)))
    .get();
}

function ownerCount(core: IdentityStore, orgId: string): number {
  return core.db
    .select({ n: sql<number>`count(*)` })
    .from(memberships)
    .where(and(eq(memberships.orgId, orgId), eq(memberships.role, "owner")))
    .get()!.n;
}

/** Adds an existing user (by email) to the org. Unknown email: 404; already a member: 409. */
export function addMember(core: Core, orgId: string, actorRole: Role, input: { email: string; role: Role }): MemberView {
  if (input.role === "owner" && actorRole !== "owner") throw forbidden("only an owner can make someone an owner");
  const user = findUserByEmail(core, input.email);
  if (!user) throw notFound("user");
  const added = core.sqlite
    .transaction(() => {
      if (member(core, orgId, user.id)) throw conflict("this user is already a member");
      core.db.insert(memberships).values({ orgId, userId: user.id, role: input.role, createdAt: iso() }).run();
      return member(core, orgId, user.id)!;
    })
    .immediate();
  // Token rows join the membership: none is cached as "not a member" any more.
  forgetTokens(core);
  return added;
}

export function changeMemberRole(core: Core, orgId: string, actorRole: Role, userId: string, role: Role): MemberView {
  const changed = core.sqlite
    .transaction(() => {
      const current = member(core, orgId, userId);
      if (!current) throw notFound("member");
      if ((current.role === "owner" || role === "owner") && actorRole !== "owner" && current.role !== role) {
        throw forbidden("only an owner can give or take the owner role");
      }
      if (current.role === "owner" && role !== "owner" && ownerCount(core, orgId) === 1) {
        throw conflict("the last owner cannot be demoted; make someone else owner first");
      }
      core.db.update(memberships).set({ role }).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))).run();
      return { ...current, role };
    })
    .immediate();
  // The member's API tokens act with min(token role, member role): their holders re-check.
  // Before the listeners: the live sockets re-check through the token cache.
  forgetTokens(core);
  core.events.emit("access.changed", { userId, reason: "role_changed" });
  return changed;
}

export function removeMember(core: Core, orgId: string, actorRole: Role, userId: string) {
  core.sqlite
    .transaction(() => {
      const current = member(core, orgId, userId);
      if (!current) throw notFound("member");
      if (current.role === "owner" && actorRole !== "owner") throw forbidden("only an owner can remove an owner");
      if (current.role === "owner" && ownerCount(core, orgId) === 1) throw conflict("the last owner cannot be removed");
      core.db.delete(memberships).where(and(eq(memberships.orgId, orgId), eq(memberships.userId, userId))).run();
      // Their tokens for this org go too: otherwise re-adding the person would bring them back to life.
      core.db.delete(apiTokens).where(and(eq(apiTokens.orgId, orgId), eq(apiTokens.userId, userId))).run();
    })
    .immediate();
  // Before the listeners: the live sockets re-check through the token cache.
  forgetTokens(core);
  core.events.emit("access.changed", { userId, reason: "membership_removed" });
}

/** Gives a user a role in an org, adding the membership when missing (admin CLI). */
export function setMembership(core: IdentityStore, orgId: string, userId: string, role: Role) {
  core.db
    .insert(memberships)
    .values({ orgId, userId, role, createdAt: iso() })
    .onConflictDoUpdate({ target: [memberships.orgId, memberships.userId], set: { role } })
    .run();
}
