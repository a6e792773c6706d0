// The caller's own account (the web app's account page): changing the display name, the list of
// live sign-ins, and signing out of every session at once.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, login, makeToken, type Session } from "../helpers/identity";

let s: TestServer;
let owner: Session;
beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
});
afterAll(() => s.stop());

describe("PATCH /me", () => {
  test("changes the name (trimmed); GET /me and the member list show it", async () => {
    const m = await addMember(s, owner, "member");
    const r = await s.api("PATCH", "/me", { token: m.accessToken, body: { name: "  Ada Lovelace " } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: m.userId, email: m.email, name: "Ada Lovelace" });
    expect((await s.api("GET", "/me", { token: m.accessToken })).body.name).toBe("Ada Lovelace");
    const members = (await s.api("GET", `/orgs/${owner.orgId}/members`, { token: owner.accessToken })).body.items;
    expect(members.find((x: { userId: string }) => x.userId === m.userId).name).toBe("Ada Lovelace");
  });

  test.each([
    ["empty name", { name: "" }],
    ["blank name", { name: "   " }],
    ["two lines", { name: "a\nb" }],
    ["too long", { name: "x".repeat(101) }],
    ["unknown field", { name: "ok", isAdmin: true }],
  ])("%s -> 400 naming the field, nothing changed", async (_n, body) => {
    const m = await addMember(s, owner, "member");
    const r = await s.api("PATCH", "/me", { token: m.accessToken, body });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
    expect(JSON.stringify(r.body.error.details)).toContain("isAdmin" in body ? "isAdmin" : "name");
    const me = (await s.api("GET", "/me", { token: m.accessToken })).body;
    expect([me.name, me.isAdmin]).toEqual(["", false]);
  });

  test("no credential -> 401; a personal API token -> 403", async () => {
    expect((await s.api("PATCH", "/me", { body: { name: "x" } })).status).toBe(401);
    const tok = await makeToken(s, owner);
    const r = await s.api("PATCH", "/me", { token: tok, body: { name: "x" } });
    expect([r.status, r.body.error.code]).toEqual([403, "forbidden"]);
  });
});

describe("sessions", () => {
  test("GET /me/sessions lists the live sign-ins, the caller's marked current", async () => {
    const m = await addMember(s, owner, "member");
    const second = await login(s, m.email);
    const r = await s.api("GET", "/me/sessions", { token: second.accessToken });
    expect(r.status).toBe(200);
    expect(r.body.items).toHaveLength(2);
    expect(r.body.items.map((x: { current: boolean }) => x.current)).toEqual([true, false]);
    expect(r.body.items.every((x: { client: string }) => x.client === "cli")).toBe(true);
    // Someone else's sessions never show.
    const mine = (await s.api("GET", "/me/sessions", { token: owner.accessToken })).body.items.map((x: { id: string }) => x.id);
    expect(mine.some((id: string) => r.body.items.some((x: { id: string }) => x.id === id))).toBe(false);
  });

  test("DELETE /me/sessions signs out every session: access and refresh tokens stop at once; tokens and other people are untouched", async () => {
    const m = await addMember(s, owner, "member");
    const second = await login(s, m.email);
    const tok = await makeToken(s, m);
    const r = await s.api("DELETE", "/me/sessions", { token: m.accessToken });
    expect(r.status).toBe(204);
    for (const t of [m.accessToken, second.accessToken]) expect((await s.api("GET", "/me", { token: t })).status).toBe(401);
    for (const t of [m.refreshToken, second.refreshToken]) expect((await s.api("POST", "/auth/refresh", { body: { refreshToken: t } })).status).toBe(401);
    // A personal API token is not a session; the owner's own sign-in goes on.
    expect((await s.api("GET", "/me", { token: tok })).status).toBe(200);
    expect((await s.api("GET", "/me", { token: owner.accessToken })).status).toBe(200);
    // A fresh sign-in works again.
    const again = await login(s, m.email);
    expect((await s.api("GET", "/me/sessions", { token: again.accessToken })).body.items).toHaveLength(1);
  });

  test("no credential -> 401; a personal API token -> 403 and signs out nothing", async () => {
    expect((await s.api("DELETE", "/me/sessions")).status).toBe(401);
    expect((await s.api("GET", "/me/sessions")).status).toBe(401);
    const m = await addMember(s, owner, "member");
    const tok = await makeToken(s, m);
    expect((await s.api("DELETE", "/me/sessions", { token: tok })).status).toBe(403);
    expect((await s.api("GET", "/me/sessions", { token: tok })).status).toBe(403);
    expect((await s.api("GET", "/me", { token: m.accessToken })).status).toBe(200);
  });
});
