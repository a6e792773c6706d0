// SPEC §3: the four roles and what each may do. "member" on a route means any role.
export const ROLES = ["owner", "admin", "member", "viewer"] as const;
export type Role = (typeof ROLES)[number];

export const PERMISSIONS = [
  "task.create",
  "task.control",
  "project.create",
  "project.update",
  "project.delete",
  "worker.manage",
  "worker.approve",
  "settings.manage",
] as const;
export type Permission = (typeof PERMISSIONS)[number];

const GRANTS: Record<Role, ReadonlySet<Permission>> = {
  owner: new Set(PERMISSIONS),
  admin: new Set(PERMISSIONS),
  member: new Set(["task.create", "task.control", "project.create", "project.update"]),
  viewer: new Set(),
};

export function can(role: Role, permission: Permission | "member"): boolean {
  return permission === "member" || GRANTS[role].has(permission);
}

const RANK: Record<Role, number> = { viewer: 0, member: 1, admin: 2, owner: 3 };

/** The lesser of two roles: a personal API token never exceeds its owner's current role. */
export function lesserRole(a: Role, b: Role): Role {
  return RANK[a] <= RANK[b] ? a : b;
}

export function roleAtLeast(role: Role, floor: Role): boolean {
  return RANK[role] >= RANK[floor];
}
