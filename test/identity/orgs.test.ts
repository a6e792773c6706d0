// Organizations, members and instance administration (SPEC §3).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, makeToken, newOrg, type Session } from "../helpers/identity";
import { get } from "../../src/db/query";

let s: TestServer;
let owner: Session; // instance admin and owner of its org
let other: Session; // owner of another org
beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  other = await newOrg(s, "other org");
});
afterAll(() => s.stop());

const role = async (orgId: string, userId: string) =>
  (await s.core.store.read(get<{ role: string }>("SELECT role FROM memberships WHERE org_id = ? AND user_id = ?", orgId, userId)))?.role ?? null;

describe("me and orgs", () => {
  test("GET /me without credentials: 401 in the error format", async () => {
    const r = await s.api("GET", "/me");
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe("unauthorized");
    expect((await s.api("GET", "/me", { token: "garbage" })).status).toBe(401);
    expect((await s.api("GET", "/me", { headers: { authorization: "Basic abc" } })).status).toBe(401);
  });

  test("POST /orgs makes the caller owner; GET /orgs lists the caller's orgs with role, newest first, paginated", async () => {
    const u = await addMember(s, owner, "viewer");
    const made = await s.api("POST", "/orgs", { token: u.accessToken, body: { name: "  Mine  " } });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({ name: "Mine", role: "owner", requireWorkerApproval: false });
    expect(made.body.id).toStartWith("org_");
    const list = await s.api("GET", "/orgs", { token: u.accessToken });
    expect(list.status).toBe(200);
    expect(list.body.items.map((o: any) => [o.id, o.role])).toEqual([
      [made.body.id, "owner"],
      [owner.orgId, "viewer"],
    ]);
    const p1 = await s.api("GET", "/orgs?limit=1", { token: u.accessToken });
    expect(p1.body.items.length).toBe(1);
    const p2 = await s.api("GET", `/orgs?limit=1&cursor=${p1.body.nextCursor}`, { token: u.accessToken });
    expect(p2.body.items[0].id).toBe(owner.orgId);
    expect(p2.body.nextCursor).toBeNull();
  });

  test.each([
    ["/orgs", "POST", { name: "" }],
    ["/orgs", "POST", { name: "   " }],
    ["/orgs", "POST", { name: "x".repeat(101) }],
    ["/orgs", "POST", {}],
    ["/orgs?limit=0", "GET", undefined],
    ["/orgs?limit=201", "GET", undefined],
    ["/orgs?cursor=bogus", "GET", undefined],
  ])("%s %s %j: 400 validation_failed", async (path, method, body) => {
    const r = await s.api(method, path, { token: owner.accessToken, body });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
  });

  test("GET /orgs/:orgId: members see it with their role; other orgs are 404, unknown too", async () => {
    const v = await addMember(s, owner, "viewer");
    expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: v.accessToken })).body).toMatchObject({ id: owner.orgId, role: "viewer" });
    for (const orgId of [other.orgId, "org_doesnotexist"]) {
      const r = await s.api("GET", `/orgs/${orgId}`, { token: v.accessToken });
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("not_found");
    }
  });

  test("PATCH /orgs/:orgId needs settings.manage", async () => {
    const admin = await addMember(s, owner, "admin");
    const member = await addMember(s, owner, "member");
    const ok = await s.api("PATCH", `/orgs/${owner.orgId}`, { token: admin.accessToken, body: { name: "Renamed", requireWorkerApproval: true } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ name: "Renamed", requireWorkerApproval: true, role: "admin" });
    expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: owner.accessToken })).body.requireWorkerApproval).toBe(true);
    const denied = await s.api("PATCH", `/orgs/${owner.orgId}`, { token: member.accessToken, body: { name: "Nope" } });
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe("forbidden");
    expect((await s.api("PATCH", `/orgs/${owner.orgId}`, { token: owner.accessToken, body: { requireWorkerApproval: "yes" } })).status).toBe(400);
    expect((await s.api("PATCH", `/orgs/${other.orgId}`, { token: owner.accessToken, body: { name: "x" } })).status).toBe(404);
  });
});

describe("members", () => {
  test("add by email (case-insensitive); list shows them; unknown email 404; twice 409", async () => {
    const u = await addMember(s, other, "viewer"); // exists as a user, member of `other` only
    const r = await s.api("POST", `/orgs/${owner.orgId}/members`, { token: owner.accessToken, body: { email: u.email.toUpperCase(), role: "member" } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ userId: u.userId, email: u.email, role: "member" });
    const list = await s.api("GET", `/orgs/${owner.orgId}/members?limit=200`, { token: u.accessToken });
    expect(list.body.items[0]).toMatchObject({ userId: u.userId, role: "member" });
    expect(list.body.items.some((m: any) => m.userId === owner.userId && m.role === "owner")).toBe(true);
    const unknown = await s.api("POST", `/orgs/${owner.orgId}/members`, { token: owner.accessToken, body: { email: "ghost@example.test", role: "member" } });
    expect(unknown.status).toBe(404);
    const twice = await s.api("POST", `/orgs/${owner.orgId}/members`, { token: owner.accessToken, body: { email: u.email, role: "viewer" } });
    expect(twice.status).toBe(409);
    expect(twice.body.error.code).toBe("conflict");
    const badRole = await s.api("POST", `/orgs/${owner.orgId}/members`, { token: owner.accessToken, body: { email: u.email, role: "god" } });
    expect(badRole.status).toBe(400);
  });

  test("members list paginates by join time", async () => {
    const org = await newOrg(s);
    const a = await addMember(s, org, "member");
    const b = await addMember(s, org, "viewer");
    const p1 = await s.api("GET", `/orgs/${org.orgId}/members?limit=2`, { token: org.accessToken });
    expect(p1.body.items.map((m: any) => m.userId)).toEqual([b.userId, a.userId]);
    const p2 = await s.api("GET", `/orgs/${org.orgId}/members?limit=2&cursor=${p1.body.nextCursor}`, { token: org.accessToken });
    expect(p2.body.items.map((m: any) => m.userId)).toEqual([org.userId]);
    expect(p2.body.nextCursor).toBeNull();
  });

  test("member and viewer cannot manage members (403)", async () => {
    for (const r of ["member", "viewer"] as const) {
      const u = await addMember(s, owner, r);
      const res = await s.api("POST", `/orgs/${owner.orgId}/members`, { token: u.accessToken, body: { email: other.email, role: "viewer" } });
      expect(res.status).toBe(403);
      expect((await s.api("PATCH", `/orgs/${owner.orgId}/members/${u.userId}`, { token: u.accessToken, body: { role: "admin" } })).status).toBe(403);
      expect((await s.api("DELETE", `/orgs/${owner.orgId}/members/${owner.userId}`, { token: u.accessToken })).status).toBe(403);
    }
  });

  test("role rules: only owners give, change or take the owner role", async () => {
    const org = await newOrg(s);
    const admin = await addMember(s, org, "admin");
    const m = await addMember(s, org, "member");
    const scenarios: [string, Session, string, string, unknown, number][] = [
      ["admin promotes member to admin", admin, "PATCH", m.userId, { role: "admin" }, 200],
      ["admin demotes admin to viewer", admin, "PATCH", m.userId, { role: "viewer" }, 200],
      ["admin makes someone owner", admin, "PATCH", m.userId, { role: "owner" }, 403],
      ["admin demotes the owner", admin, "PATCH", org.userId, { role: "member" }, 403],
      ["admin removes the owner", admin, "DELETE", org.userId, undefined, 403],
      ["owner makes member owner", org, "PATCH", m.userId, { role: "owner" }, 200],
      ["admin demotes the new owner", admin, "PATCH", m.userId, { role: "admin" }, 403],
      ["owner demotes the other owner", org, "PATCH", m.userId, { role: "member" }, 200],
      ["unknown user", org, "PATCH", "usr_nobody", { role: "member" }, 404],
      ["member of another org", org, "PATCH", other.userId, { role: "member" }, 404],
      ["bad role", org, "PATCH", m.userId, { role: "boss" }, 400],
    ];
    for (const [name, actor, method, userId, body, status] of scenarios) {
      const r = await s.api(method, `/orgs/${org.orgId}/members/${userId}`, { token: actor.accessToken, body });
      expect([name, r.status]).toEqual([name, status]);
    }
    expect(await role(org.orgId, m.userId)).toBe("member");
    const added = await s.api("POST", `/orgs/${org.orgId}/members`, { token: admin.accessToken, body: { email: owner.email, role: "owner" } });
    expect(added.status).toBe(403);
  });

  test("the last owner can be neither demoted nor removed (409); with two owners one may go", async () => {
    const org = await newOrg(s);
    const demote = await s.api("PATCH", `/orgs/${org.orgId}/members/${org.userId}`, { token: org.accessToken, body: { role: "admin" } });
    expect(demote.status).toBe(409);
    expect(demote.body.error.code).toBe("conflict");
    const remove = await s.api("DELETE", `/orgs/${org.orgId}/members/${org.userId}`, { token: org.accessToken });
    expect(remove.status).toBe(409);
    expect(await role(org.orgId, org.userId)).toBe("owner");
    const second = await addMember(s, org, "owner");
    expect((await s.api("DELETE", `/orgs/${org.orgId}/members/${org.userId}`, { token: second.accessToken })).status).toBe(204);
    expect(await role(org.orgId, org.userId)).toBeNull();
    expect((await s.api("GET", `/orgs/${org.orgId}`, { token: org.accessToken })).status).toBe(404);
    expect((await s.api("DELETE", `/orgs/${org.orgId}/members/${second.userId}`, { token: second.accessToken })).status).toBe(409);
  });

  test("parallel demotions of two owners leave one owner", async () => {
    const org = await newOrg(s);
    const second = await addMember(s, org, "owner");
    const [a, b] = await Promise.all([
      s.api("PATCH", `/orgs/${org.orgId}/members/${org.userId}`, { token: second.accessToken, body: { role: "member" } }),
      s.api("PATCH", `/orgs/${org.orgId}/members/${second.userId}`, { token: org.accessToken, body: { role: "member" } }),
    ]);
    // One wins; the other finds either that it is no longer an owner (403) or the last owner (409).
    const statuses = [a.status, b.status].sort();
    expect(statuses[0]).toBe(200);
    expect([403, 409]).toContain(statuses[1]);
    const owners = (await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM memberships WHERE org_id = ? AND role = 'owner'", org.orgId)))!.n;
    expect(owners).toBe(1);
  });
});

describe("instance administration", () => {
  test("admin creates and lists users; duplicate email 409; bad body 400", async () => {
    const r = await s.api("POST", "/admin/users", { token: owner.accessToken, body: { email: "New.Person@Example.test", password: "long enough pw", name: "New" } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ email: "new.person@example.test", name: "New", isAdmin: false });
    expect(r.body.id).toStartWith("usr_");
    expect(JSON.stringify(r.body)).not.toContain("password");
    const dup = await s.api("POST", "/admin/users", { token: owner.accessToken, body: { email: "new.person@example.test", password: "long enough pw" } });
    expect(dup.status).toBe(409);
    for (const body of [{ email: "not-an-email", password: "long enough pw" }, { email: "a@b.test", password: "short" }, { email: "a@b.test" }]) {
      expect((await s.api("POST", "/admin/users", { token: owner.accessToken, body })).status).toBe(400);
    }
    const list = await s.api("GET", "/admin/users?limit=1", { token: owner.accessToken });
    expect(list.body.items[0].id).toBe(r.body.id);
    expect(typeof list.body.nextCursor).toBe("string");
  });

  test("non-administrators and tokens are refused (403); no credentials 401", async () => {
    const token = await makeToken(s, owner);
    for (const t of [other.accessToken, token]) {
      expect((await s.api("GET", "/admin/users", { token: t })).status).toBe(403);
      expect((await s.api("POST", "/admin/users", { token: t, body: { email: "x@y.test", password: "long enough pw" } })).status).toBe(403);
    }
    expect((await s.api("GET", "/admin/users")).status).toBe(401);
  });
});
