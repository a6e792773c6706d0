// Authorization is declared on each route and enforced here, in one place:
//   { auth: "any" }       any signed-in user or personal API token
//   { auth: "session" }   a person's signed-in session only (tokens refused with 403)
//   { auth: "admin" }     an instance administrator's session
//   { permission: P }     org-scoped (needs :orgId); P is "member" (any role) or a permission name
// Credentials are checked before bodies (SPEC §1): each macro's resolve is a credentialCheck, which
// the app's error handler runs first when the body or query fails (credentials-first.ts).
import { Elysia } from "elysia";
import { jwt } from "@elysiajs/jwt";
import type { Core } from "./core";
import { ApiError, forbidden, notFound, unauthorized } from "./errors";
import { credentialCheck, type CheckContext } from "./credentials-first";
import { actorOf, principalFromApiToken, principalFromClaims, roleIn, type AccessClaims, type Principal } from "../modules/auth/principal";
import { can, type Permission, type Role } from "../modules/orgs/roles";
import { workerByCredential } from "../modules/workers/registry";

function bearer(headers: Record<string, string | undefined>): string | null {
  const h = headers.authorization;
  if (!h) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(h);
  if (!m) throw unauthorized("the Authorization header must be 'Bearer <token>'");
  return m[1];
}

const plugins = new WeakMap<Core, ReturnType<typeof build>>();

/** The auth plugin of one server instance (memoised, so every module shares one instance). */
export function authPlugin(core: Core) {
  let p = plugins.get(core);
  if (!p) plugins.set(core, (p = build(core)));
  return p;
}

/** What verifying an access token demands beyond the signature: our algorithm only (no "none", no
 * algorithm a forger could choose) and an expiry. */
const VERIFY_OPTIONS = { algorithms: ["HS256"], requiredClaims: ["exp", "sub", "sid"] };

/** The claims of a valid, unexpired access token of this server, or null. Sessions are checked by the caller. */
export async function verifyAccessToken(core: Core, value: string): Promise<AccessClaims | null> {
  const claims = (await authPlugin(core).decorator.accessJwt.verify(value, VERIFY_OPTIONS)) as (AccessClaims & { typ?: unknown }) | false;
  if (!claims || claims.typ !== "access" || typeof claims.sid !== "string" || typeof claims.sub !== "string") return null;
  return claims;
}

function build(core: Core) {
  const accessJwt = jwt({ name: "accessJwt", secret: core.jwtSecret, exp: `${core.config.accessTokenTtlSec}s`, alg: "HS256" });

  async function authenticate(headers: Record<string, string | undefined>): Promise<Principal> {
    const value = bearer(headers);
    if (!value) throw unauthorized();
    if (value.startsWith("aot_")) {
      const p = await core.store.read(principalFromApiToken(core, value));
      if (!p) throw unauthorized("the API token is invalid, expired or revoked");
      return p;
    }
    if (value.startsWith("aow_")) {
      // A worker's own credential is refused here (403); anything else is no credential at all (401).
      await core.store.read(workerByCredential(core, value));
      throw forbidden("a worker credential cannot be used here");
    }
    const claims = await verifyAccessToken(core, value);
    if (!claims) throw unauthorized("the access token is invalid or expired");
    const p = await core.store.read(principalFromClaims(core, claims));
    if (!p) throw unauthorized("the session was revoked");
    return p;
  }

  return new Elysia({ name: "ao-auth", seed: core.instanceId })
    .use(accessJwt)
    .macro({
      auth: (level: "any" | "session" | "admin") => ({
        resolve: credentialCheck(async ({ headers }: CheckContext) => {
          const principal = await authenticate(headers);
          if (level !== "any" && principal.kind !== "user") throw forbidden("personal API tokens cannot be used here");
          if (level === "admin" && !(principal.kind === "user" && principal.isAdmin)) throw forbidden("instance administrators only");
          return { principal, actor: actorOf(principal) };
        }),
      }),
      permission: (permission: Permission | "member") => ({
        resolve: credentialCheck(async ({ headers, params }: CheckContext) => {
          const principal = await authenticate(headers);
          const orgId = (params as Record<string, string | undefined>).orgId;
          if (!orgId) throw new ApiError(500, "internal", "route declares a permission but has no :orgId");
          if (principal.kind === "token" && principal.orgId !== orgId) throw forbidden("this token belongs to another organization");
          const role: Role | null = await core.store.read(roleIn(core, principal, orgId));
          if (!role) {
            if (principal.kind === "token") throw forbidden("the token's owner is no longer a member of this organization");
            throw notFound("organization");
          }
          if (!can(role, permission)) throw forbidden(`your role (${role}) lacks the permission ${permission}`);
          return { principal, actor: actorOf(principal), orgId, role };
        }),
      }),
    })
    .as("global");
}
