// SPEC §3: the four roles and the permission table, written out here as the SPEC gives it, checked
// against the code's table and then through real routes (the one `permission` macro enforces it).
// A person of another organization sees nothing of it: every org route is 404 and changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, newOrg, type Session } from "../helpers/identity";
import { all } from "../../src/db/query";
import { can, PERMISSIONS, ROLES, type Permission, type Role } from "../../src/modules/orgs/roles";

// | permission | owner | admin | member | viewer |   (SPEC §3)
const SPEC_TABLE: Record<Permission, [boolean, boolean, boolean, boolean]> = {
  "task.create": [true, true, true, false],
  "task.control": [true, true, true, false],
  "project.create": [true, true, true, false],
  "project.update": [true, true, true, false],
  "project.delete": [true, true, false, false],
  "worker.manage": [true, true, false, false],
  "worker.approve": [true, true, false, false],
  "settings.manage": [true, true, false, false],
};

test("the code's table is the SPEC's, and 'member' means any role", () => {
  expect([...PERMISSIONS].sort() as string[]).toEqual(Object.keys(SPEC_TABLE).sort());
  for (const [permission, row] of Object.entries(SPEC_TABLE)) {
    ROLES.forEach((role, i) => expect([permission, role, can(role, permission as Permission)]).toEqual([permission, role, row[i]]));
  }
  for (const role of ROLES) expect(can(role, "member")).toBe(true);
});

let s: TestServer;
let owner: Session;
let outsider: Session;
const people = {} as Record<Role, Session>;
let projectId: string;
beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  people.owner = owner;
  for (const role of ["admin", "member", "viewer"] as const) people[role] = await addMember(s, owner, role);
  outsider = await newOrg(s);
  projectId = (await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: "p" } })).body.id;
});
afterAll(() => s.stop());

// One route per permission. Worker routes on an unknown worker: a caller with the permission gets
// past the macro to 404, one without it stops at 403.
const ROUTES: [Permission | "member", string, string, () => unknown, number][] = [
  ["member", "GET", "/orgs/ORG", () => undefined, 200],
  ["task.create", "POST", "/orgs/ORG/tasks", () => ({ projectId, title: "t", prompt: "p" }), 201],
  ["project.create", "POST", "/orgs/ORG/projects", () => ({ name: `p-${Math.random()}` }), 201],
  ["project.update", "PATCH", "/orgs/ORG/projects/PRJ", () => ({ knowledge: "k" }), 200],
  ["worker.manage", "PATCH", "/orgs/ORG/workers/wkr_unknown", () => ({ name: "w" }), 404],
  ["worker.approve", "POST", "/orgs/ORG/workers/wkr_unknown/approve", () => undefined, 404],
  ["settings.manage", "PATCH", "/orgs/ORG", () => ({ requireWorkerApproval: false }), 200],
];

describe("through the routes", () => {
  test.each(ROUTES)("%s: %s %s", async (permission, method, path, body, allowed) => {
    for (const role of ROLES) {
      const r = await s.api(method, path.replace("ORG", owner.orgId).replace("PRJ", projectId), { token: people[role].accessToken, body: body() });
      const expected = can(role, permission) ? allowed : 403;
      expect([role, r.status]).toEqual([role, expected]);
      if (expected === 403) expect(r.body.error.code).toBe("forbidden");
    }
  });

  test("project.delete: member 403, admin archives", async () => {
    const p = (await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: "to-archive" } })).body.id;
    expect((await s.api("DELETE", `/orgs/${owner.orgId}/projects/${p}`, { token: people.member.accessToken })).status).toBe(403);
    expect((await s.api("DELETE", `/orgs/${owner.orgId}/projects/${p}`, { token: people.viewer.accessToken })).status).toBe(403);
    expect((await s.api("DELETE", `/orgs/${owner.orgId}/projects/${p}`, { token: people.admin.accessToken })).status).toBeLessThan(300);
  });
});

describe("a person from another organization sees nothing", () => {
  const routes: [string, string, () => unknown][] = [
    ["GET", "/orgs/ORG", () => undefined],
    ["PATCH", "/orgs/ORG", () => ({ name: "taken over" })],
    ["GET", "/orgs/ORG/members", () => undefined],
    ["POST", "/orgs/ORG/members", () => ({ email: outsider.email, role: "owner" })],
    ["PATCH", "/orgs/ORG/members/OWNER", () => ({ role: "viewer" })],
    ["DELETE", "/orgs/ORG/members/OWNER", () => undefined],
    ["GET", "/orgs/ORG/projects", () => undefined],
    ["GET", "/orgs/ORG/projects/PRJ", () => undefined],
    ["GET", "/orgs/ORG/tasks", () => undefined],
    ["POST", "/orgs/ORG/tasks", () => ({ projectId, title: "t", prompt: "p" })],
    ["GET", "/orgs/ORG/workers", () => undefined],
  ];
  test.each(routes)("%s %s: 404 not_found, nothing changes", async (method, path, body) => {
    const state = async () => [
      await s.core.store.read(all("SELECT org_id, user_id, role FROM memberships ORDER BY org_id, user_id")),
      await s.core.store.read(all("SELECT name FROM orgs ORDER BY id")),
      await s.core.store.read(all("SELECT count(*) AS n FROM tasks")),
    ];
    const before = await state();
    const r = await s.api(method, path.replace("ORG", owner.orgId).replace("PRJ", projectId).replace("OWNER", owner.userId), { token: outsider.accessToken, body: body() });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe("not_found");
    expect(JSON.stringify(r.body)).not.toContain(owner.orgId);
    expect(await state()).toEqual(before);
  });

  test("their lists do not show the org", async () => {
    const orgs = (await s.api("GET", "/orgs", { token: outsider.accessToken })).body.items.map((o: { id: string }) => o.id);
    expect(orgs).toEqual([outsider.orgId]);
  });
});
