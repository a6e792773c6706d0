// Personal API tokens (SPEC §4): creation rules, listing, revocation, and how a token acts:
// its own org only, min(token role, owner's current role), refused on account and admin paths.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, makeToken, newOrg, type Session } from "../helpers/identity";
import { isWellFormedToken } from "../../src/lib/tokens";
import { get, run } from "../../src/db/query";

let s: TestServer;
let owner: Session;
let other: Session;
beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  other = await newOrg(s);
});
afterAll(() => s.stop());

const tokenRow = (id: string) => s.core.store.read(get<Record<string, unknown>>("SELECT * FROM api_tokens WHERE id = ?", id));


describe("create", () => {
  test("201 with the value once; only its SHA-256 is stored; role defaults to the creator's", async () => {
    const m = await addMember(s, owner, "member");
    const r = await s.api("POST", "/me/tokens", { token: m.accessToken, body: { name: "ci", orgId: owner.orgId } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ name: "ci", orgId: owner.orgId, role: "member", expiresAt: null });
    expect(r.body.id).toStartWith("tok_");
    expect(r.body.token).toMatch(/^aot_[0-9A-Za-z]{36}$/);
    expect(isWellFormedToken(r.body.token, "aot_")).toBe(true);
    const row = (await tokenRow(r.body.id))!;
    expect(row.token_hash).toBe(new Bun.CryptoHasher("sha256").update(r.body.token).digest("hex"));
    expect(JSON.stringify(row)).not.toContain(r.body.token);
    expect(row.last_four).toBe(r.body.token.slice(-4));
  });

  test.each([
    ["member asks for viewer", "member", "viewer", 201],
    ["member asks for member", "member", "member", 201],
    ["member asks for admin", "member", "admin", 403],
    ["admin asks for owner", "admin", "owner", 403],
    ["viewer asks for member", "viewer", "member", 403],
  ] as const)("%s -> %i", async (_n, mine, asked, status) => {
    const u = await addMember(s, owner, mine);
    const r = await s.api("POST", "/me/tokens", { token: u.accessToken, body: { name: "t", orgId: owner.orgId, role: asked } });
    expect(r.status).toBe(status);
    if (status === 403) expect(r.body.error.code).toBe("forbidden");
    else expect(r.body.role).toBe(asked);
  });

  test.each([
    ["no name", { orgId: "ORG" }, 400],
    ["empty name", { name: "", orgId: "ORG" }, 400],
    ["unknown role", { name: "t", orgId: "ORG", role: "root" }, 400],
    ["expiresAt not a date", { name: "t", orgId: "ORG", expiresAt: "tomorrow" }, 400],
    ["expiresAt in the past", { name: "t", orgId: "ORG", expiresAt: "2001-01-01T00:00:00Z" }, 400],
    ["an org the caller is not in", { name: "t", orgId: "OTHER" }, 404],
    ["an unknown org", { name: "t", orgId: "org_nope" }, 404],
  ])("%s -> %i", async (_n, body, status) => {
    const b = JSON.parse(JSON.stringify(body).replace("OTHER", other.orgId).replace("ORG", owner.orgId));
    const r = await s.api("POST", "/me/tokens", { token: owner.accessToken, body: b });
    expect(r.status).toBe(status);
  });

  test("a token cannot create tokens, touch two-factor or admin paths (403)", async () => {
    const tok = await makeToken(s, owner);
    const calls: [string, string, unknown?][] = [
      ["POST", "/me/tokens", { name: "x", orgId: owner.orgId }],
      ["GET", "/me/tokens"],
      ["DELETE", "/me/tokens/tok_x"],
      ["POST", "/me/2fa/setup"],
      ["POST", "/me/2fa/enable", { code: "123456" }],
      ["POST", "/me/2fa/disable", { code: "123456" }],
      ["GET", "/admin/users"],
      ["POST", "/admin/users", { email: "a@b.test", password: "long enough pw" }],
    ];
    for (const [method, path, body] of calls) {
      const r = await s.api(method, path, { token: tok, body });
      expect([method, path, r.status, r.body.error.code]).toEqual([method, path, 403, "forbidden"]);
    }
  });
});

describe("list and delete", () => {
  test("lists the caller's tokens newest first without values; delete revokes at once", async () => {
    const u = await addMember(s, owner, "member");
    const a = await s.api("POST", "/me/tokens", { token: u.accessToken, body: { name: "a", orgId: owner.orgId, expiresAt: "2999-01-01T00:00:00Z" } });
    const b = await s.api("POST", "/me/tokens", { token: u.accessToken, body: { name: "b", orgId: owner.orgId } });
    expect(a.body.expiresAt).toBe("2999-01-01T00:00:00.000Z");
    expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: b.body.token })).status).toBe(200);
    const list = await s.api("GET", "/me/tokens", { token: u.accessToken });
    expect(list.status).toBe(200);
    expect(list.body.items.map((t: any) => t.name)).toEqual(["b", "a"]);
    expect(list.body.items[0]).toMatchObject({ id: b.body.id, lastFour: b.body.token.slice(-4), role: "member", orgId: owner.orgId });
    expect(list.body.items[0].lastUsedAt).not.toBeNull();
    expect(list.body.items[1].lastUsedAt).toBeNull();
    expect(JSON.stringify(list.body)).not.toContain(b.body.token);
    expect(list.body.items[0].token).toBeUndefined();
    // Someone else's token is not the caller's to see or delete.
    expect((await s.api("GET", "/me/tokens", { token: owner.accessToken })).body.items.some((t: any) => t.id === b.body.id)).toBe(false);
    expect((await s.api("DELETE", `/me/tokens/${b.body.id}`, { token: owner.accessToken })).status).toBe(404);
    expect((await s.api("DELETE", `/me/tokens/${b.body.id}`, { token: u.accessToken })).status).toBe(204);
    expect((await s.api("DELETE", `/me/tokens/${b.body.id}`, { token: u.accessToken })).status).toBe(404);
    const after = await s.api("GET", `/orgs/${owner.orgId}`, { token: b.body.token });
    expect(after.status).toBe(401);
  });
});

describe("a token at work", () => {
  test("acts in its own org; another org's path is 403", async () => {
    const tok = await makeToken(s, owner);
    expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: tok })).body.role).toBe("owner");
    const r = await s.api("GET", `/orgs/${other.orgId}`, { token: tok });
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe("forbidden");
    expect((await s.api("GET", `/orgs/${other.orgId}/members`, { token: tok })).status).toBe(403);
    // GET /orgs shows a token its own org only; once its owner left, the token is revoked.
    const m = await addMember(s, other, "viewer");
    await s.api("POST", `/orgs/${owner.orgId}/members`, { token: owner.accessToken, body: { email: m.email, role: "member" } });
    const mtok = await makeToken(s, m, owner.orgId);
    expect((await s.api("GET", "/orgs", { token: m.accessToken })).body.items.length).toBe(2);
    expect((await s.api("GET", "/orgs", { token: mtok })).body).toEqual({ items: [expect.objectContaining({ id: owner.orgId, role: "member" })], nextCursor: null });
    await s.api("DELETE", `/orgs/${owner.orgId}/members/${m.userId}`, { token: owner.accessToken });
    expect((await s.api("GET", "/orgs", { token: mtok })).status).toBe(401);
  });

  test("capped at the owner's current role: demotion narrows it at once, promotion never lifts it above its own role", async () => {
    const org = await newOrg(s);
    const admin = await addMember(s, org, "admin");
    const tok = await makeToken(s, admin);
    const patch = () => s.api("PATCH", `/orgs/${org.orgId}`, { token: tok, body: { name: "by token" } });
    expect((await patch()).status).toBe(200);
    await s.api("PATCH", `/orgs/${org.orgId}/members/${admin.userId}`, { token: org.accessToken, body: { role: "viewer" } });
    expect((await s.api("GET", `/orgs/${org.orgId}`, { token: tok })).body.role).toBe("viewer");
    const denied = await patch();
    expect(denied.status).toBe(403);
    expect(denied.body.error.code).toBe("forbidden");
    await s.api("PATCH", `/orgs/${org.orgId}/members/${admin.userId}`, { token: org.accessToken, body: { role: "owner" } });
    expect((await s.api("GET", `/orgs/${org.orgId}`, { token: tok })).body.role).toBe("admin");
    expect((await s.api("GET", "/me", { token: tok })).body.via).toMatchObject({ type: "token", orgId: org.orgId, role: "admin" });
  });

  test("owner removed from the org: the token is revoked (401)", async () => {
    const org = await newOrg(s);
    const m = await addMember(s, org, "member");
    const tok = await makeToken(s, m);
    expect((await s.api("GET", `/orgs/${org.orgId}`, { token: tok })).status).toBe(200);
    expect((await s.api("DELETE", `/orgs/${org.orgId}/members/${m.userId}`, { token: org.accessToken })).status).toBe(204);
    const r = await s.api("GET", `/orgs/${org.orgId}`, { token: tok });
    expect(r.status).toBe(401);
    expect(r.body.error.code).toBe("unauthorized");
  });

  test("expired: 401, though the server has the token in its cache", async () => {
    const expiresAt = Date.now() + 1000;
    const r = await s.api("POST", "/me/tokens", { token: owner.accessToken, body: { name: "brief", orgId: owner.orgId, expiresAt: new Date(expiresAt).toISOString() } });
    expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: r.body.token })).status).toBe(200);
    await Bun.sleep(expiresAt - Date.now() + 50);
    const after = await s.api("GET", `/orgs/${owner.orgId}`, { token: r.body.token });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe("unauthorized");
  });

  // Another process writing ao.db is seen through PRAGMA data_version; on PostgreSQL the servers
  // tell each other over the bus (db/cache.ts), and nothing else writes the database.
  test.skipIf(onPostgres)("expired by another process on the same file: 401", async () => {
    const r = await s.api("POST", "/me/tokens", { token: owner.accessToken, body: { name: "short", orgId: owner.orgId, expiresAt: new Date(Date.now() + 60_000).toISOString() } });
    expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: r.body.token })).status).toBe(200);
    // Through a second connection, as another process on the same file would: the server's token
    // cache sees the commit (PRAGMA data_version) and reads the row afresh.
    const other = new Database(join(s.dataDir, "ao.db"));
    other.query("UPDATE api_tokens SET expires_at = ? WHERE id = ?").run(new Date(Date.now() - 1000).toISOString(), r.body.id);
    other.close();
    const after = await s.api("GET", `/orgs/${owner.orgId}`, { token: r.body.token });
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe("unauthorized");
  });

  test("malformed or bad checksum: 401 without a database read", async () => {
    const good = await makeToken(s, owner);
    const flipped = good.slice(0, 10) + (good[10] === "A" ? "B" : "A") + good.slice(11);
    // Plant rows whose hashes match the bad values: a server that looked them up would accept them.
    const id = (await s.api("GET", "/me/tokens", { token: owner.accessToken })).body.items[0].id;
    const row = (await tokenRow(id))!;
    const bads = [flipped, "aot_short", "aot_" + "a".repeat(36), good + "x", "aot_" + good.slice(4).toLowerCase()];
    for (const [i, bad] of bads.entries()) {
      await s.core.store.write(
        run(
          "INSERT INTO api_tokens (id, user_id, org_id, name, role, token_hash, last_four, created_at) VALUES (?, ?, ?, 'planted', 'owner', ?, 'xxxx', ?)",
          `tok_planted${i}`,
          row.user_id as string,
          row.org_id as string,
          new Bun.CryptoHasher("sha256").update(bad).digest("hex"),
          new Date().toISOString(),
        ),
      );
    }
    for (const bad of bads) {
      const r = await s.api("GET", `/orgs/${owner.orgId}`, { token: bad });
      expect([bad, r.status, r.body.error?.code]).toEqual([bad, 401, "unauthorized"]);
    }
    expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: good })).status).toBe(200);
  });
});

describe("a removed member's tokens", () => {
  test("stop at removal and stay dead when the person is re-added; their tokens for other orgs live on", async () => {
    const boss = owner;
    const member = await addMember(s, boss, "member");
    const elsewhere = await newOrg(s, "elsewhere");
    await s.api("POST", `/orgs/${elsewhere.orgId}/members`, { token: elsewhere.accessToken, body: { email: member.email, role: "member" } });
    const token = await makeToken(s, member);
    const otherToken = await makeToken(s, member, elsewhere.orgId);
    expect((await s.api("GET", `/orgs/${boss.orgId}/tasks`, { token })).status).toBe(200);

    expect((await s.api("DELETE", `/orgs/${boss.orgId}/members/${member.userId}`, { token: boss.accessToken })).status).toBe(204);
    expect((await s.api("GET", `/orgs/${boss.orgId}/tasks`, { token })).status).toBe(401);
    expect((await s.api("POST", `/orgs/${boss.orgId}/members`, { token: boss.accessToken, body: { email: member.email, role: "member" } })).status).toBe(201);
    expect((await s.api("GET", `/orgs/${boss.orgId}/tasks`, { token })).status).toBe(401);

    expect((await s.api("GET", `/orgs/${elsewhere.orgId}/tasks`, { token: otherToken })).status).toBe(200);
    const listed = await s.api("GET", "/me/tokens", { token: member.accessToken });
    expect(listed.body.items.map((t: { orgId: string }) => t.orgId)).toEqual([elsewhere.orgId]);
  });
});
