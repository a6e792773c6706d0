// Bad input on the identity routes (issue: "Bad input"): malformed JSON, wrong types, unknown
// fields where they matter, oversized bodies. Each gets the SPEC's error format with the right
// status, changes nothing in the database, and leaves the server serving.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, type Session } from "../helpers/identity";
import { all } from "../../src/db/query";

let s: TestServer;
let owner: Session;
let member: Session;
beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
  member = await addMember(s, owner, "member");
});
afterAll(() => s.stop());

/** Everything the identity routes could change, as one comparable value. */
async function snapshot() {
  const q = (sql: string) => s.core.store.read(all(sql));
  return {
    users: await q("SELECT id, email, name, is_admin, password_hash FROM users ORDER BY id"),
    orgs: await q("SELECT id, name, require_worker_approval, updated_at FROM orgs ORDER BY id"),
    memberships: await q("SELECT org_id, user_id, role FROM memberships ORDER BY org_id, user_id"),
    sessions: await q("SELECT id, revoked_at FROM sessions ORDER BY id"),
    refresh: await q("SELECT token_hash, used_at FROM refresh_tokens ORDER BY token_hash"),
    tokens: await q("SELECT id FROM api_tokens ORDER BY id"),
    grants: await q("SELECT id, status FROM device_grants ORDER BY id"),
  };
}

type Who = "owner" | "member" | "none";
type Row = [name: string, method: string, path: string, who: Who, body: unknown, status: number, code: string, field?: string];

const ORG = "{org}";
const MEMBER = "{member}";

// Unknown fields are refused where dropping them would change the outcome silently; elsewhere
// (sign-in, refresh, device and two-factor bodies) extras are ignored like any client extension.
const unknownFields: Row[] = [
  ["token with 'roles' (would get the owner's full role)", "POST", "/me/tokens", "member", { name: "ci", orgId: ORG, roles: "viewer" }, 400, "validation_failed", "roles"],
  ["token with 'expiresIn' (would never expire)", "POST", "/me/tokens", "member", { name: "ci", orgId: ORG, expiresIn: 3600 }, 400, "validation_failed", "expiresIn"],
  ["org rename with a typo (would answer 200 and change nothing)", "PATCH", `/orgs/${ORG}`, "owner", { nmae: "renamed" }, 400, "validation_failed", "nmae"],
  ["org rename with a typo beside a real field", "PATCH", `/orgs/${ORG}`, "owner", { name: "renamed", requireApproval: true }, 400, "validation_failed", "requireApproval"],
  ["new org with an extra field", "POST", "/orgs", "member", { name: "x", owner: "someone" }, 400, "validation_failed", "owner"],
  ["member added with 'admin'", "POST", `/orgs/${ORG}/members`, "owner", { email: "a@b.test", role: "member", admin: true }, 400, "validation_failed", "admin"],
  ["role change with an extra field", "PATCH", `/orgs/${ORG}/members/${MEMBER}`, "owner", { role: "viewer", orgId: "org_x" }, 400, "validation_failed", "orgId"],
  ["admin creates a user with 'admin' instead of isAdmin", "POST", "/admin/users", "owner", { email: "n@b.test", password: "long enough pw", admin: true }, 400, "validation_failed", "admin"],
  ["setup with an extra field", "POST", "/setup", "none", { token: "t", email: "a@b.test", password: "long enough pw", role: "owner" }, 400, "validation_failed", "role"],
];

const wrongShapes: Row[] = [
  ["login with JSON null", "POST", "/auth/login", "none", "null", 400, "validation_failed"],
  ["login with an array", "POST", "/auth/login", "none", "[]", 400, "validation_failed"],
  ["login with a truncated body", "POST", "/auth/login", "none", '{"email":"a@b.test",', 400, "validation_failed"],
  ["refresh with a number", "POST", "/auth/refresh", "none", { refreshToken: 5 }, 400, "validation_failed", "refreshToken"],
  ["new org with a number name", "POST", "/orgs", "member", { name: 5 }, 400, "validation_failed", "name"],
  ["org patch with a string boolean", "PATCH", `/orgs/${ORG}`, "owner", { requireWorkerApproval: "true" }, 400, "validation_failed", "requireWorkerApproval"],
  ["member with an unknown role", "POST", `/orgs/${ORG}/members`, "owner", { email: "a@b.test", role: "root" }, 400, "validation_failed", "role"],
  ["token with a date that is not one", "POST", "/me/tokens", "member", { name: "ci", orgId: ORG, expiresAt: "soon" }, 400, "validation_failed", "expiresAt"],
  ["2fa enable with an array code", "POST", "/me/2fa/enable", "member", { code: ["123456"] }, 400, "validation_failed", "code"],
  ["device poll with an object", "POST", "/auth/device/poll", "none", { deviceCode: { $ne: null } }, 400, "validation_failed", "deviceCode"],
  ["list with a negative limit", "GET", "/orgs?limit=-1", "member", undefined, 400, "validation_failed", "limit"],
  ["list with a limit that is no number", "GET", "/orgs?limit=ten", "member", undefined, 400, "validation_failed", "limit"],
  ["list with a forged cursor", "GET", "/admin/users?cursor=eyJ4IjoxfQ", "owner", undefined, 400, "validation_failed", "cursor"],
];

const big = { name: "x".repeat(1024 * 1024 + 1) };
const oversized: Row[] = [
  ["login over 1 MiB", "POST", "/auth/login", "none", { email: "a@b.test", password: "x".repeat(1024 * 1024) }, 413, "payload_too_large"],
  ["org patch over 1 MiB", "PATCH", `/orgs/${ORG}`, "owner", big, 413, "payload_too_large"],
  ["token over 1 MiB", "POST", "/me/tokens", "member", big, 413, "payload_too_large"],
];

async function send(row: Row) {
  const [, method, path, who, body] = row;
  const token = who === "owner" ? owner.accessToken : who === "member" ? member.accessToken : undefined;
  const fill = (v: string) => v.replaceAll(ORG, owner.orgId).replaceAll(MEMBER, member.userId);
  const payload = body === undefined ? undefined : typeof body === "string" ? body : fill(JSON.stringify(body));
  return s.api(method, fill(path), { token, body: payload });
}

describe.each([
  ["unknown fields where they matter", unknownFields],
  ["malformed JSON and wrong types", wrongShapes],
  ["oversized bodies", oversized],
] as const)("%s", (_group, rows) => {
  test.each(rows as Row[])("%s", async (...args) => {
    // Only the row's own values (a trailing callback, were one passed, is not a field name).
    const row = args.slice(0, 8).map((v) => (typeof v === "function" ? undefined : v)) as unknown as Row;
    const before = await snapshot();
    const r = await send(row);
    const [, , , , , status, code, field] = row;
    expect(r.status).toBe(status);
    expect(r.body.error.code).toBe(code);
    expect(typeof r.body.error.message).toBe("string");
    if (field) expect(r.body.error.details.map((d: { field: string }) => d.field)).toContain(field);
    expect(await snapshot()).toEqual(before);
  });
});

test("the same bodies with only known fields are accepted (the strict schemas name every field)", async () => {
  const tok = await s.api("POST", "/me/tokens", { token: member.accessToken, body: { name: "ci", orgId: owner.orgId, role: "viewer", expiresAt: "2999-01-01T00:00:00Z" } });
  expect(tok.status).toBe(201);
  const patch = await s.api("PATCH", `/orgs/${owner.orgId}`, { token: owner.accessToken, body: { name: "renamed", requireWorkerApproval: false } });
  expect(patch.status).toBe(200);
  const user = await s.api("POST", "/admin/users", { token: owner.accessToken, body: { email: "known@b.test", password: "long enough pw", name: "K", isAdmin: false } });
  expect(user.status).toBe(201);
  // Where extras do not matter they are ignored: a sign-in with a client's own field works.
  const login = await s.api("POST", "/auth/login", { body: { email: member.email, password: member.password, rememberMe: true } });
  expect(login.status).toBe(200);
});

test("after all of it the server still answers", async () => {
  expect((await s.api("GET", "/health")).status).toBe(200);
  expect((await s.api("GET", "/me", { token: member.accessToken })).status).toBe(200);
});
