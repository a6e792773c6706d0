// RFC 8628 device grants, shared by device sign-in (kind "signin") and worker pairing
// (kind "pairing"). The device holds a secret device code (stored hashed) and polls; a person
// types the short user code into the web app and approves or denies it.
//
//   createGrant(core, kind, details)        -> { deviceCode, userCode, expiresIn, intervalSec, ... }
//   pollGrant(core, kind, deviceCode)       -> PollResult (pending | slow_down | denied | expired | approved)
//   pollError(result)                       -> the SPEC's 400 error for a non-approved result
//   findPendingGrant(core, kind, userCode)  -> the grant a person is about to decide, or null
//   decideGrant(core, kind, userCode, d)    -> the decided grant, or null when unknown/expired/decided
//
// Those that touch the database are programs (db/query.ts); createGrant and pollGrant run in a
// write transaction. Every function is scoped by kind: a pairing code is unknown to the sign-in
// endpoints and back.
import { and, count, eq, gt, lt, min } from "drizzle-orm";
import type { Core } from "../../server/core";
import { deviceGrants } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { randomSecret, sha256Hex } from "../../lib/tokens";
import { ApiError, rateLimited } from "../../server/errors";
import { exec, row, type Q } from "../../db/query";

export type GrantKind = "signin" | "pairing";
export type GrantRow = typeof deviceGrants.$inferSelect;

/** Device codes live 10 minutes (seed: Limits). */
export const GRANT_TTL_SEC = 600;
/** The polling interval a device starts with; each slow_down adds SLOW_DOWN_STEP_SEC. */
export const GRANT_INTERVAL_SEC = 5;
export const SLOW_DOWN_STEP_SEC = 5;
/** No vowels and no look-alike digits: nothing readable as a word, easy to type. */
export const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";
/** Expired grants are kept this long (a late poll still gets expired_token), then deleted. */
const KEEP_EXPIRED_MS = 24 * 60 * 60 * 1000;

export interface GrantDetails {
  clientName?: string | null;
  workerName?: string | null;
  hostname?: string | null;
  labels?: string[] | null;
  requestIp?: string | null;
}

export interface StartedGrant {
  id: string;
  /** The secret the device polls with; returned once, stored hashed. */
  deviceCode: string;
  /** Formatted XXXX-XXXX. */
  userCode: string;
  expiresIn: number;
  intervalSec: number;
  expiresAt: string;
}

/** `wdjb mjht`, `WDJB-MJHT` and `wdjbmjht` are one code; null when it cannot be a user code. */
export function normaliseUserCode(input: string): string | null {
  const code = input.toUpperCase().replace(/[\s-]/g, "");
  if (code.length !== 8) return null;
  for (const ch of code) if (!USER_CODE_ALPHABET.includes(ch)) return null;
  return code;
}

export const formatUserCode = (normalised: string) => `${normalised.slice(0, 4)}-${normalised.slice(4)}`;

function newUserCode(): string {
  let out = "";
  while (out.length < 8) {
    // 240 = 12 * 20: rejection sampling keeps every letter equally likely.
    for (const b of crypto.getRandomValues(new Uint8Array(16))) if (b < 240 && out.length < 8) out += USER_CODE_ALPHABET[b % 20];
  }
  return out;
}

/**
 * Caps on undecided grants, for starts that need no credential. They count open grants, not
 * requests: a grant that is decided, spent or expired frees its place, so a client that finishes
 * its sign-ins is never refused however often it starts one.
 */
export interface GrantLimits {
  /** Pending, unexpired grants of this kind from one client address. */
  perAddress: number;
  /** Pending, unexpired grants of this kind in all (keeps a flood from many addresses bounded). */
  total: number;
}

/**
 * Starts a grant of `kind` (run it in a write: the open grants are counted and the new one
 * inserted with nothing in between). The details are shown to the person who decides it. Over
 * `limits`: 429 rate_limited.
 */
export function* createGrant(core: Core, kind: GrantKind, details: GrantDetails = {}, now = Date.now(), limits?: GrantLimits): Q<StartedGrant> {
  const deviceCode = randomSecret(43);
  const expiresAt = now + GRANT_TTL_SEC * 1000;
  yield* exec(core.db.delete(deviceGrants).where(lt(deviceGrants.expiresAt, now - KEEP_EXPIRED_MS)));
  if (limits) yield* checkOpenGrants(core, kind, details.requestIp ?? null, limits, now);
  const grant = yield* insertGrant(core, kind, details, deviceCode, expiresAt, now);
  return {
    id: grant.id,
    deviceCode,
    userCode: formatUserCode(grant.userCode),
    expiresIn: GRANT_TTL_SEC,
    intervalSec: GRANT_INTERVAL_SEC,
    expiresAt: iso(expiresAt),
  };
}

function* insertGrant(core: Core, kind: GrantKind, details: GrantDetails, deviceCode: string, expiresAt: number, now: number): Q<GrantRow> {
  // 20^8 codes: a collision with a live code is rare; try again when it happens.
  for (let attempt = 0; ; attempt++) {
    const userCode = newUserCode();
    if (yield* row(core.db.select({ id: deviceGrants.id }).from(deviceGrants).where(eq(deviceGrants.userCode, userCode)))) {
      if (attempt < 10) continue;
      throw new ApiError(503, "unavailable", "could not allocate a user code; try again");
    }
    const grant: GrantRow = {
      id: newId("dev"),
      kind,
      deviceCodeHash: sha256Hex(deviceCode),
      userCode,
      status: "pending",
      clientName: details.clientName ?? null,
      workerName: details.workerName ?? null,
      hostname: details.hostname ?? null,
      labels: details.labels ?? null,
      requestIp: details.requestIp ?? null,
      intervalSec: GRANT_INTERVAL_SEC,
      lastPolledAt: null,
      expiresAt,
      decidedBy: null,
      orgId: null,
      createdAt: iso(now),
    };
    yield* exec(core.db.insert(deviceGrants).values(grant));
    return grant;
  }
}

/** Throws 429 when the address, or everyone together, has used up the open grants allowed. */
function* checkOpenGrants(core: Core, kind: GrantKind, ip: string | null, limits: GrantLimits, now: number): Q<void> {
  const open = and(eq(deviceGrants.kind, kind), eq(deviceGrants.status, "pending"), gt(deviceGrants.expiresAt, now));
  const scopes: [ReturnType<typeof and>, number][] = [[open, limits.total]];
  if (ip) scopes.unshift([and(open, eq(deviceGrants.requestIp, ip)), limits.perAddress]);
  for (const [where, limit] of scopes) {
    const { n, oldest } = (yield* row(core.db.select({ n: count(), oldest: min(deviceGrants.expiresAt) }).from(deviceGrants).where(where)))!;
    // A place frees up at the latest when the oldest open grant expires.
    if (n >= limit) throw rateLimited(Math.max(1, Math.ceil(((oldest ?? now) - now) / 1000)));
  }
}

export type PollResult =
  | { status: "pending" }
  | { status: "slow_down"; intervalSec: number }
  | { status: "denied" }
  /** Unknown, expired or already spent: the device must start over. */
  | { status: "expired" }
  /** Returned once: the grant is now spent. Issue the device's credential from `grant`. */
  | { status: "approved"; grant: GrantRow };

/**
 * One poll of a device code. The first poll may come at once; a poll sooner than the interval
 * after the previous one is slow_down and grows the interval by 5 s (RFC 8628 §3.5).
 * Run it in a write: of two parallel polls of an approved grant, only one gets `approved`.
 */
export function* pollGrant(core: Core, kind: GrantKind, deviceCode: string, now = Date.now()): Q<PollResult> {
  const grant = yield* row(
    core.db
      .select()
      .from(deviceGrants)
      .where(and(eq(deviceGrants.deviceCodeHash, sha256Hex(deviceCode)), eq(deviceGrants.kind, kind))),
  );
  if (!grant || grant.status === "consumed" || grant.expiresAt <= now) return { status: "expired" };
  if (grant.lastPolledAt !== null && now - grant.lastPolledAt < grant.intervalSec * 1000) {
    const intervalSec = grant.intervalSec + SLOW_DOWN_STEP_SEC;
    yield* exec(core.db.update(deviceGrants).set({ intervalSec, lastPolledAt: now }).where(eq(deviceGrants.id, grant.id)));
    return { status: "slow_down", intervalSec };
  }
  const status = grant.status === "approved" ? "consumed" : grant.status;
  yield* exec(core.db.update(deviceGrants).set({ lastPolledAt: now, status }).where(eq(deviceGrants.id, grant.id)));
  if (grant.status === "approved") return { status: "approved", grant: { ...grant, status: "consumed", lastPolledAt: now } };
  return grant.status === "denied" ? { status: "denied" } : { status: "pending" };
}

const POLL_ERRORS = {
  pending: ["authorization_pending", "the person has not decided yet; poll again after intervalSec"],
  slow_down: ["slow_down", "polling too fast; the interval grew by 5 seconds"],
  denied: ["access_denied", "the request was denied"],
  expired: ["expired_token", "the device code expired or was already used; start again"],
} as const;

/** The SPEC's 400 answer for a poll that yields no credential (details carry intervalSec on slow_down). */
export function pollError(result: Exclude<PollResult, { status: "approved" }>): ApiError {
  const [code, message] = POLL_ERRORS[result.status];
  return new ApiError(400, code, message, result.status === "slow_down" ? { intervalSec: result.intervalSec } : undefined);
}

/** The pending, unexpired grant with this user code, or null (also for malformed codes). */
export function* findPendingGrant(core: Core, kind: GrantKind, userCode: string, now = Date.now()): Q<GrantRow | null> {
  const code = normaliseUserCode(userCode);
  if (!code) return null;
  const grant = yield* row(
    core.db
      .select()
      .from(deviceGrants)
      .where(and(eq(deviceGrants.userCode, code), eq(deviceGrants.kind, kind), eq(deviceGrants.status, "pending"))),
  );
  return grant && grant.expiresAt > now ? grant : null;
}

export type GrantDecision =
  | { approve: true; decidedBy: string; orgId?: string | null; details?: Pick<GrantDetails, "workerName" | "labels"> }
  | { approve: false; decidedBy: string };

/**
 * Approves or denies a pending grant in one statement (a second decision finds nothing).
 * Returns the decided grant, or null when the code is unknown, expired or already decided.
 */
export function* decideGrant(core: Core, kind: GrantKind, userCode: string, decision: GrantDecision, now = Date.now()): Q<GrantRow | null> {
  const code = normaliseUserCode(userCode);
  if (!code) return null;
  const set: Partial<GrantRow> = { status: decision.approve ? "approved" : "denied", decidedBy: decision.decidedBy };
  if (decision.approve) {
    if (decision.orgId !== undefined) set.orgId = decision.orgId;
    if (decision.details?.workerName !== undefined) set.workerName = decision.details.workerName;
    if (decision.details?.labels !== undefined) set.labels = decision.details.labels;
  }
  return (
    (yield* row(
      core.db
        .update(deviceGrants)
        .set(set)
        .where(and(eq(deviceGrants.userCode, code), eq(deviceGrants.kind, kind), eq(deviceGrants.status, "pending"), gt(deviceGrants.expiresAt, now)))
        .returning(),
    )) ?? null
  );
}

/** What the deciding person sees. */
export function grantView(g: GrantRow) {
  return {
    userCode: formatUserCode(g.userCode),
    kind: g.kind,
    status: g.status,
    clientName: g.clientName,
    workerName: g.workerName,
    hostname: g.hostname,
    labels: g.labels,
    requestIp: g.requestIp,
    createdAt: g.createdAt,
    expiresAt: iso(g.expiresAt),
  };
}
