// People for tests, made through the real HTTP API: the first-run setup route creates the
// instance administrator, POST /admin/users the others, POST /orgs and members the rest.
//
//   const owner = await createAdmin(s);                // instance admin, owner of a fresh org
//   const dev   = await addMember(s, owner, "member"); // a new user in owner's org
//   const other = await newOrg(s);                     // another org and its owner (isolation tests)
//   const tok   = await makeToken(s, dev);             // aot_ token in dev's org with dev's role
import { expect } from "bun:test";
import type { TestServer } from "./server";
import { setupTokenOf } from "../../src/server/bootstrap";
import type { Role } from "../../src/modules/orgs/roles";

export interface Session {
  userId: string;
  email: string;
  password: string;
  accessToken: string;
  refreshToken: string;
  /** The org this session was made for, and the user's role there. */
  orgId: string;
  role: Role;
}

const PASSWORD = "correct horse battery staple";
let counter = 0;
const admins = new WeakMap<object, Promise<Session>>();
/** Per server: an owner session for each org made here, so signUp({ orgId }) can add people to it. */
const owners = new WeakMap<object, Map<string, Session>>();

const uniqueEmail = (label = "user") => `${label}-${Date.now().toString(36)}-${++counter}@example.test`;

async function ok(s: TestServer, method: string, path: string, body: unknown, token: string | undefined, status: number) {
  const r = await s.api(method, path, { body, token });
  if (r.status !== status) throw new Error(`${method} ${path} -> ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

function remember(s: TestServer, session: Session) {
  let m = owners.get(s);
  if (!m) owners.set(s, (m = new Map()));
  if (session.role === "owner" && !m.has(session.orgId)) m.set(session.orgId, session);
}

/** Signs in with email and password (no two-factor); returns the tokens. */
export async function login(s: TestServer, email: string, password = PASSWORD): Promise<{ userId: string; accessToken: string; refreshToken: string }> {
  const b = await ok(s, "POST", "/auth/login", { email, password }, undefined, 200);
  return { userId: b.user.id, accessToken: b.accessToken, refreshToken: b.refreshToken };
}

/**
 * The server's instance administrator (created on first call through POST /setup), owner of
 * the org made at setup. Later calls return the same session.
 */
export function createAdmin(s: TestServer): Promise<Session> {
  let p = admins.get(s);
  if (!p) {
    p = (async () => {
      const token = setupTokenOf(s.core);
      if (!token) throw new Error("createAdmin: the server has no setup token (a user already exists)");
      const email = uniqueEmail("admin");
      const b = await ok(s, "POST", "/setup", { token, email, password: PASSWORD, name: "Admin", orgName: "admin-org" }, undefined, 201);
      const t = await login(s, email);
      const session: Session = { ...t, email, password: PASSWORD, orgId: b.org.id, role: "owner" };
      remember(s, session);
      return session;
    })();
    admins.set(s, p);
    p.catch(() => admins.delete(s));
  }
  return p;
}

/** A new user (created by the instance administrator) and a signed-in session, in no org yet. */
async function newUser(s: TestServer, email = uniqueEmail()): Promise<{ userId: string; email: string; accessToken: string; refreshToken: string }> {
  const admin = await createAdmin(s);
  await ok(s, "POST", "/admin/users", { email, password: PASSWORD }, admin.accessToken, 201);
  return { ...(await login(s, email)), email };
}

/** Another org with a new owner (for cross-org isolation tests). */
export async function newOrg(s: TestServer, name = `org-${++counter}`): Promise<Session> {
  const u = await newUser(s);
  const org = await ok(s, "POST", "/orgs", { name }, u.accessToken, 201);
  const session: Session = { ...u, password: PASSWORD, orgId: org.id, role: "owner" };
  remember(s, session);
  return session;
}

/** A new user with `role` in `owner`'s org (owner must be an owner or admin there). */
export async function addMember(s: TestServer, owner: Session, role: Role, email?: string): Promise<Session> {
  const u = await newUser(s, email);
  await ok(s, "POST", `/orgs/${owner.orgId}/members`, { email: u.email, role }, owner.accessToken, 201);
  return { ...u, password: PASSWORD, orgId: owner.orgId, role };
}

/**
 * A new signed-in user. Without orgId: the owner of a new org (or, with a role below owner,
 * a member of a new org owned by someone else). With orgId (an org made by these helpers):
 * a member of it with `role` (default "member").
 */
export async function signUp(
  s: TestServer,
  opts: { email?: string; role?: Role; orgId?: string } = {},
): Promise<{ userId: string; accessToken: string; refreshToken: string; orgId: string; session: Session }> {
  let session: Session;
  if (opts.orgId) {
    const owner = owners.get(s)?.get(opts.orgId);
    if (!owner) throw new Error(`signUp: org ${opts.orgId} was not made by the identity helpers`);
    session = await addMember(s, owner, opts.role ?? "member", opts.email);
  } else if (!opts.role || opts.role === "owner") {
    const u = await newUser(s, opts.email);
    const org = await ok(s, "POST", "/orgs", { name: `org-${++counter}` }, u.accessToken, 201);
    session = { ...u, password: PASSWORD, orgId: org.id, role: "owner" };
    remember(s, session);
  } else {
    session = await addMember(s, await newOrg(s), opts.role, opts.email);
  }
  return { userId: session.userId, accessToken: session.accessToken, refreshToken: session.refreshToken, orgId: session.orgId, session };
}

/** A personal API token (aot_...) of `session`'s user in `orgId` (default: the session's org). */
export async function makeToken(s: TestServer, session: Pick<Session, "accessToken" | "orgId">, orgId = session.orgId, role?: Role): Promise<string> {
  const b = await ok(s, "POST", "/me/tokens", { name: `test-${++counter}`, orgId, ...(role ? { role } : {}) }, session.accessToken, 201);
  expect(b.token).toStartWith("aot_");
  return b.token;
}
