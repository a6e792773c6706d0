// Workers as people manage them (SPEC §7): list, read, update name/labels/policy, approve, revoke.
import type { Core } from "../../server/core";
import { conflict, invalid, notFound } from "../../server/errors";
import { iso } from "../../lib/time";
import { pageOf, type Page, type PageQuery } from "../orgs/paging";
import { presenceOf } from "./presence";
import { forgetSightings } from "./clones";
import { forgetWorkers, getWorkerRow, type WorkerRecord, type WorkerRow } from "./registry";
import { failReadinessRuns, giveUpAttempts } from "./recovery";
import { all, get, run, type Q } from "../../db/query";
import type { TaskChange } from "../tasks/store";

export interface WorkerUpdate {
  name?: string;
  labels?: string[];
  policy?: { projects?: string[] } & Record<string, unknown>;
}

const FIRST = "SELECT * FROM workers WHERE org_id = ? ORDER BY id DESC LIMIT ?";
const AFTER = "SELECT * FROM workers WHERE org_id = ? AND id < ? ORDER BY id DESC LIMIT ?";
const UPDATE = "UPDATE workers SET name = ?, labels = ?, policy = ?, updated_at = ? WHERE id = ?";
const APPROVE = "UPDATE workers SET approved_at = ?, approved_by = ?, updated_at = ? WHERE id = ? AND approved_at IS NULL";
const REVOKE = "UPDATE workers SET revoked_at = ?, updated_at = ? WHERE id = ? AND revoked_at IS NULL";
const PROJECT = "SELECT id FROM projects WHERE id = ? AND org_id = ?";

export function* workerRecord(core: Core, row: WorkerRow): Q<WorkerRecord> {
  return yield* presenceOf(core).record(row);
}

function* mustFind(core: Core, orgId: string, workerId: string): Q<WorkerRow> {
  const row = yield* getWorkerRow(core, orgId, workerId);
  if (!row) throw notFound("worker");
  return row;
}

export function* listWorkers(core: Core, orgId: string, query: PageQuery): Q<Page<WorkerRecord>> {
  const page = yield* pageOf(query, 1, (after, n) => (after ? all<WorkerRow>(AFTER, orgId, after[0], n) : all<WorkerRow>(FIRST, orgId, n)), (row) => [row.id], (row) => row);
  const items: WorkerRecord[] = [];
  for (const row of page.items) items.push(yield* workerRecord(core, row));
  return { items, nextCursor: page.nextCursor };
}

export function* getWorker(core: Core, orgId: string, workerId: string): Q<WorkerRecord> {
  return yield* workerRecord(core, yield* mustFind(core, orgId, workerId));
}

/** A worker policy as given to PATCH: a JSON object whose `projects`, when present, lists projects of the org. */
function* checkPolicy(_core: Core, orgId: string, value: unknown): Q<NonNullable<WorkerUpdate["policy"]>> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalid("policy must be a JSON object", [{ field: "policy", message: "must be an object" }]);
  const policy = value as NonNullable<WorkerUpdate["policy"]>;
  if (policy.projects === undefined) return policy;
  const projects: unknown = policy.projects;
  if (!Array.isArray(projects) || projects.length > 500 || projects.some((id) => typeof id !== "string") || new Set(projects).size !== projects.length) {
    throw invalid("policy.projects must be a list of distinct project ids", [{ field: "policy.projects", message: "up to 500 distinct project ids" }]);
  }
  // A mistyped project id would silently leave the worker with nothing to take.
  const unknown: { field: string; message: string }[] = [];
  for (const [i, id] of (projects as string[]).entries()) {
    if (id.length > 64 || !(yield* get(PROJECT, id, orgId))) unknown.push({ field: `policy.projects.${i}`, message: "no such project in this organization" });
  }
  if (unknown.length) throw invalid("policy.projects names projects this organization does not have", unknown);
  return policy;
}

function* writeUpdate(core: Core, orgId: string, workerId: string, update: Omit<WorkerUpdate, "policy"> & { policy?: unknown }) {
  const row = yield* mustFind(core, orgId, workerId);
  if (row.revoked_at) throw conflict("the worker was revoked");
  const name = update.name?.trim() ?? row.name;
  const labels = update.labels ?? (JSON.parse(row.labels) as string[]);
  const policy = update.policy !== undefined ? yield* checkPolicy(core, orgId, update.policy) : (JSON.parse(row.policy) as NonNullable<WorkerUpdate["policy"]>);
  yield* run(UPDATE, name, JSON.stringify(labels), JSON.stringify(policy), iso(), workerId);
  return { labels, policy };
}

// The operations below write, then tell the connection and the org's pages after the commit: they
// are edges (routes call them) that run their programs through core.store.

export async function updateWorker(core: Core, orgId: string, workerId: string, update: Omit<WorkerUpdate, "policy"> & { policy?: unknown }): Promise<WorkerRecord> {
  const { labels, policy } = await core.store.write(writeUpdate(core, orgId, workerId, update));
  forgetWorkers(core);
  const presence = presenceOf(core);
  await presence.refresh(workerId, { labels: new Set(labels), projects: policy.projects ? new Set(policy.projects) : null });
  await presence.publish(orgId, workerId);
  return core.store.read(getWorker(core, orgId, workerId));
}

/** Approves the worker; true when it was not approved before. */
function* writeApproval(core: Core, orgId: string, workerId: string, approvedBy: string): Q<boolean> {
  const row = yield* mustFind(core, orgId, workerId);
  if (row.revoked_at) throw conflict("the worker was revoked");
  if (row.approved_at) return false;
  yield* run(APPROVE, iso(), approvedBy, iso(), workerId);
  return true;
}

export async function approveWorker(core: Core, orgId: string, workerId: string, approvedBy: string): Promise<WorkerRecord> {
  if (await core.store.write(writeApproval(core, orgId, workerId, approvedBy))) {
    forgetWorkers(core);
    const presence = presenceOf(core);
    await presence.refresh(workerId, { approved: true });
    await presence.publish(orgId, workerId);
  }
  return core.store.read(getWorker(core, orgId, workerId));
}

/** Revokes in one transaction with what goes with it; the attempts it gave up, or null when it was revoked already. */
function* writeRevocation(core: Core, orgId: string, workerId: string): Q<TaskChange[] | null> {
  const row = yield* mustFind(core, orgId, workerId);
  if (row.revoked_at) return null;
  yield* run(REVOKE, iso(), iso(), workerId);
  // What it reported of its workspace can no longer be reached through it.
  yield* forgetSightings(core, orgId, workerId);
  yield* presenceOf(core).dispatcher.mailbox.forget(workerId);
  yield* failReadinessRuns(core, workerId, "the worker was revoked");
  return yield* giveUpAttempts(core, workerId, "the worker was revoked");
}

/** Revokes the credential: refused from now on, socket closed, held attempts back to the queue. Idempotent. */
export async function revokeWorker(core: Core, orgId: string, workerId: string): Promise<WorkerRecord> {
  const lost = await core.store.write(writeRevocation(core, orgId, workerId));
  if (lost) {
    forgetWorkers(core);
    const presence = presenceOf(core);
    await presence.revoked(workerId, lost);
    await presence.publish(orgId, workerId);
  }
  return core.store.read(getWorker(core, orgId, workerId));
}
