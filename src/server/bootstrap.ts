// First run (SPEC §2). With AO_ADMIN_EMAIL and AO_ADMIN_PASSWORD set and no user yet, that
// user is created as instance administrator and owner of a new org (AO_ORG_NAME, default
// "default"). Otherwise, while no user exists, a one-time setup link is logged; its token
// is accepted once by POST /api/v1/setup, on any server of the database (its hash is stored).
import type { Core } from "./core";
import { conflict, unauthorized } from "./errors";
import { randomSecret } from "../lib/tokens";
import { countUsers, hashPassword, hashPasswordSync, insertUser, type IdentityStore, type UserRow } from "../modules/auth/users";
import { createOrg, type OrgRow } from "../modules/orgs/service";
import { addSetupToken, clearSetupTokens, isSetupToken, newestSetupTokenOf, removeSetupTokensOf, renewSetupToken, SETUP_TOKEN_LIFETIME_MS, setupDone } from "../modules/auth/setup-tokens";
import { iso } from "../lib/time";
import type { Q } from "../db/query";

export const DEFAULT_ORG_NAME = "default";
export const MIN_PASSWORD_LENGTH = 8;

const setupTokens = new WeakMap<Core, string>();
/** The timer that renews a server's setup link while setup is to do, and how often it looks. */
const RENEWAL_CHECK_MS = 60 * 60_000;
const renewals = new WeakMap<Core, ReturnType<typeof setInterval>>();

/** Runs at startup, before the server takes requests. */
export async function bootstrap(core: Core, env: Record<string, string | undefined> = process.env) {
  if ((await core.store.read(countUsers(core))) > 0) return;
  const email = env.AO_ADMIN_EMAIL?.trim();
  const password = env.AO_ADMIN_PASSWORD;
  if (email && password) {
    if (password.length < MIN_PASSWORD_LENGTH) throw new Error(`AO_ADMIN_PASSWORD must have at least ${MIN_PASSWORD_LENGTH} characters`);
    const { user, org } = (await core.store.write(createFirstAdmin(core, { email, passwordHash: hashPasswordSync(core, password), orgName: env.AO_ORG_NAME })))!;
    core.log.info("created the first administrator", { email: user.email, orgId: org.id, org: org.name });
    return;
  }
  // One of the two alone creates nobody: say so, or the operator looks for an account that is not there.
  if (email || password) core.log.warn(`${email ? "AO_ADMIN_EMAIL is set without AO_ADMIN_PASSWORD" : "AO_ADMIN_PASSWORD is set without AO_ADMIN_EMAIL"}: no administrator was created; set both, or finish setup with the link below`);
  const token = randomSecret(32);
  setupTokens.set(core, token);
  await core.store.write(addSetupToken(core.instanceId, token, core.sqlite !== null));
  // Links work for a day: a new one is logged at half that, while setup is still to do. Looked at
  // every hour rather than timed for the half day, so a machine that slept catches up.
  const renewing = setInterval(() => void renewSetupLink(core).catch((error) => core.log.warn("could not renew the setup link", { error: String(error) })), RENEWAL_CHECK_MS);
  renewing.unref();
  renewals.set(core, renewing);
  core.onClose.push(async () => {
    clearInterval(renewing);
    try {
      await core.store.write(removeSetupTokensOf(core.instanceId));
    } catch (error) {
      core.log.warn("could not remove this server's setup token", { error: String(error) });
    }
  });
  // The URL is read when the line is written: serve.ts fills in publicUrl after binding the port,
  // in the same turn as it awaits this function.
  setTimeout(() => logSetupLink(core, token), 0);
}

function logSetupLink(core: Core, token: string) {
  core.log.info(`no user yet: finish setup at ${core.config.publicUrl}/setup?token=${token}`);
}

/**
 * While no user exists, logs a new link beside the current one once this server's newest is half
 * its lifetime old (the older one works until its own lifetime ends); once a user exists, stops.
 * `now` for tests.
 */
export async function renewSetupLink(core: Core, now = Date.now()): Promise<void> {
  if (!setupTokens.has(core)) return;
  if (await core.store.read(setupDone())) {
    setupTokens.delete(core);
    clearInterval(renewals.get(core));
    return;
  }
  const newest = await core.store.read(newestSetupTokenOf(core.instanceId));
  if (newest !== null && newest > iso(now - SETUP_TOKEN_LIFETIME_MS / 2)) return;
  const token = randomSecret(32);
  await core.store.write(renewSetupToken(core.instanceId, token, now));
  setupTokens.set(core, token);
  logSetupLink(core, token);
}

/** The setup token this server logged, until setup is done through it (for tests and the web app's dev tools). */
export function setupTokenOf(core: Core): string | null {
  return setupTokens.get(core) ?? null;
}

/** Creates the first user (instance admin) and their org, or returns null when a user exists. Run it in a write. */
export function* createFirstAdmin(
  store: IdentityStore,
  input: { email: string; passwordHash: string; name?: string; orgName?: string },
): Q<{ user: UserRow; org: OrgRow } | null> {
  if ((yield* countUsers(store)) > 0) return null;
  const user = yield* insertUser(store, { email: input.email, passwordHash: input.passwordHash, name: input.name, isAdmin: true });
  const org = yield* createOrg(store, input.orgName?.trim() || DEFAULT_ORG_NAME, user.id);
  yield* clearSetupTokens();
  return { user, org };
}

/** POST /setup: the one-time token creates the first administrator and org. */
export async function completeSetup(
  core: Core,
  input: { token: string; email: string; password: string; name?: string; orgName?: string },
): Promise<{ user: UserRow; org: OrgRow }> {
  const check = await core.store.read(checkSetupToken(input.token));
  if (check === "complete") throw conflict("setup is already complete");
  if (check === "wrong") throw unauthorized("the setup token is wrong or expired: use the link the server logged last");
  const passwordHash = await hashPassword(core, input.password);
  const created = await core.store.write(createFirstAdmin(core, { ...input, passwordHash }));
  if (!created) throw conflict("setup is already complete");
  setupTokens.delete(core);
  clearInterval(renewals.get(core));
  return created;
}

/**
 * The token is read before whether a user exists: on PostgreSQL the two reads are separate
 * snapshots, and a setup finishing between them (its user and the tokens' removal commit together)
 * must read as "complete", never as a wrong token.
 */
export function* checkSetupToken(token: string): Q<"complete" | "wrong" | "valid"> {
  const known = yield* isSetupToken(token);
  if (yield* setupDone()) return "complete";
  return known ? "valid" : "wrong";
}
