// Worker pairing (SPEC §7) on the shared RFC 8628 grants of kind "pairing": the worker starts and
// polls; a signed-in person who may create work in an org approves it into that org. The first
// approved poll creates the worker and returns its aow_ credential, once.
//
// Who may approve: any member allowed task.create in the chosen org (owner, admin, member; not a
// viewer). Orgs that want a second look turn on requireWorkerApproval: the worker then waits in
// pending_approval until someone with worker.approve approves it.
import type { Core } from "../../server/core";
import { ApiError, forbidden } from "../../server/errors";
import { createGrant, decideGrant, findPendingGrant, grantView, pollError, pollGrant, type GrantLimits, type GrantRow } from "../auth/device-grants";
import { can, type Role } from "../orgs/roles";
import type { PairRequest, PairResult, PairStarted } from "../../protocol/requests";
import { createWorker } from "./registry";
import { get, type Q } from "../../db/query";

export const PAIRING_PERMISSION = "task.create" as const;

/**
 * Starting a pairing needs no credential, so undecided pairings are capped (20 per address, 1,000
 * in all; 429 past that). Decided or expired ones free their place: it bounds what strangers can
 * make the server store, not how many workers a person pairs.
 */
export const PAIRING_START_LIMITS: GrantLimits = { perAddress: 20, total: 1000 };

const ROLE = "SELECT role FROM memberships WHERE org_id = ? AND user_id = ?";
const REQUIRE_APPROVAL = "SELECT require_worker_approval FROM orgs WHERE id = ?";

/** Starts a pairing; run it in a write (the cap is checked and the grant inserted together). */
export function* startPairing(core: Core, req: PairRequest, requestIp: string | null): Q<PairStarted> {
  const g = yield* createGrant(core, "pairing", { workerName: req.name.trim(), hostname: req.hostname.trim(), labels: req.labels ?? [], requestIp }, Date.now(), PAIRING_START_LIMITS);
  const verificationUri = `${core.config.publicUrl}/pair`;
  return {
    deviceCode: g.deviceCode,
    userCode: g.userCode,
    verificationUri,
    verificationUriComplete: `${verificationUri}?code=${g.userCode}`,
    intervalSec: g.intervalSec,
    expiresIn: g.expiresIn,
  };
}

/**
 * One poll, run in a write: the approved grant and the new worker commit together, so a credential
 * is never lost half-way. Errors are returned, not thrown (the caller throws them after the
 * commit): a pending poll must still commit its lastPolledAt.
 */
export function* pollPairing(core: Core, deviceCode: string): Q<PairResult | ApiError> {
  const result = yield* pollGrant(core, "pairing", deviceCode);
  if (result.status !== "approved") return pollError(result);
  const g = result.grant;
  const org = yield* get<{ require_worker_approval: number }>(REQUIRE_APPROVAL, g.orgId!);
  if (!org) return pollError({ status: "expired" });
  const { worker, credential } = yield* createWorker(core, {
    orgId: g.orgId!,
    name: g.workerName ?? g.hostname ?? "worker",
    hostname: g.hostname ?? "",
    labels: g.labels ?? [],
    approved: org.require_worker_approval === 0,
    pairedBy: g.decidedBy!,
    pairedFromIp: g.requestIp,
  });
  return { credential, workerId: worker.id, orgId: worker.org_id };
}

export function pairingView(g: GrantRow) {
  const v = grantView(g);
  return { userCode: v.userCode, status: v.status, name: v.workerName ?? "", hostname: v.hostname ?? "", labels: v.labels ?? [], requestIp: v.requestIp, createdAt: v.createdAt, expiresAt: v.expiresAt };
}

export function* describePairing(core: Core, userCode: string): Q<GrantRow | null> {
  return yield* findPendingGrant(core, "pairing", userCode);
}

/** Approves a pending pairing into an org where the caller may create work (run in a write); null when the code is unknown. */
export function* approvePairing(core: Core, userId: string, userCode: string, orgId: string): Q<GrantRow | null> {
  const role = (yield* get<{ role: Role }>(ROLE, orgId, userId))?.role;
  if (!role) throw new ApiError(404, "not_found", "organization not found");
  if (!can(role, PAIRING_PERMISSION)) throw forbidden(`your role (${role}) cannot pair workers into this organization`);
  return yield* decideGrant(core, "pairing", userCode, { approve: true, decidedBy: userId, orgId });
}

export function* denyPairing(core: Core, userId: string, userCode: string): Q<GrantRow | null> {
  return yield* decideGrant(core, "pairing", userCode, { approve: false, decidedBy: userId });
}
