// Workers as people manage them (SPEC §7): list, read, update name/labels/policy, approve, revoke.
import type { Core } from "../../server/core";
import { conflict, invalid, notFound } from "../../server/errors";
import { iso } from "../../lib/time";
import { pageOf, type Page, type PageQuery } from "../orgs/paging";
import { pure } from "../../db/query";
import { presenceOf } from "./presence";
import { txForgetSightings } from "./clones";
import { forgetWorkers, getWorkerRow, toWorkerRecord, type WorkerRecord, type WorkerRow } from "./registry";

export interface WorkerUpdate {
  name?: string;
  labels?: string[];
  policy?: { projects?: string[] } & Record<string, unknown>;
}

const statements = new WeakMap<Core, ReturnType<typeof prepare>>();
function prepare(core: Core) {
  const q = core.sqlite;
  return {
    first: q.query<WorkerRow, [string, number]>("SELECT * FROM workers WHERE org_id = ? ORDER BY id DESC LIMIT ?"),
    after: q.query<WorkerRow, [string, string, number]>("SELECT * FROM workers WHERE org_id = ? AND id < ? ORDER BY id DESC LIMIT ?"),
    update: q.query("UPDATE workers SET name = ?, labels = ?, policy = ?, updated_at = ? WHERE id = ?"),
    approve: q.query("UPDATE workers SET approved_at = ?, approved_by = ?, updated_at = ? WHERE id = ? AND approved_at IS NULL"),
    revoke: q.query("UPDATE workers SET revoked_at = ?, updated_at = ? WHERE id = ? AND revoked_at IS NULL"),
    project: q.query<{ id: string }, [string, string]>("SELECT id FROM projects WHERE id = ? AND org_id = ?"),
  };
}
function stmts(core: Core) {
  let s = statements.get(core);
  if (!s) statements.set(core, (s = prepare(core)));
  return s;
}

export function workerRecord(core: Core, row: WorkerRow): WorkerRecord {
  const presence = presenceOf(core);
  return toWorkerRecord(core, row, { connected: presence.dispatcher.isConnected(row.id), lastSeenAt: presence.lastSeenOf(row.id) });
}

function mustFind(core: Core, orgId: string, workerId: string): WorkerRow {
  const row = getWorkerRow(core, orgId, workerId);
  if (!row) throw notFound("worker");
  return row;
}

export function listWorkers(core: Core, orgId: string, query: PageQuery): Page<WorkerRecord> {
  const s = stmts(core);
  return core.store.sync(pageOf(
    query,
    1,
    (after, n) => pure(after ? s.after.all(orgId, after[0], n) : s.first.all(orgId, n)),
    (row) => [row.id],
    (row) => workerRecord(core, row),
  ));
}

export function getWorker(core: Core, orgId: string, workerId: string): WorkerRecord {
  return workerRecord(core, mustFind(core, orgId, workerId));
}

/** A worker policy as given to PATCH: a JSON object whose `projects`, when present, lists projects of the org. */
function checkPolicy(core: Core, orgId: string, value: unknown): NonNullable<WorkerUpdate["policy"]> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) throw invalid("policy must be a JSON object", [{ field: "policy", message: "must be an object" }]);
  const policy = value as NonNullable<WorkerUpdate["policy"]>;
  if (policy.projects === undefined) return policy;
  const projects: unknown = policy.projects;
  if (!Array.isArray(projects) || projects.length > 500 || projects.some((id) => typeof id !== "string") || new Set(projects).size !== projects.length) {
    throw invalid("policy.projects must be a list of distinct project ids", [{ field: "policy.projects", message: "up to 500 distinct project ids" }]);
  }
  // A mistyped project id would silently leave the worker with nothing to take.
  const unknown = (projects as string[]).flatMap((id, i) =>
    id.length <= 64 && stmts(core).project.get(id, orgId) ? [] : [{ field: `policy.projects.${i}`, message: "no such project in this organization" }],
  );
  if (unknown.length) throw invalid("policy.projects names projects this organization does not have", unknown);
  return policy;
}

export function updateWorker(core: Core, orgId: string, workerId: string, update: Omit<WorkerUpdate, "policy"> & { policy?: unknown }): WorkerRecord {
  const row = mustFind(core, orgId, workerId);
  if (row.revoked_at) throw conflict("the worker was revoked");
  const name = update.name?.trim() ?? row.name;
  const labels = update.labels ?? (JSON.parse(row.labels) as string[]);
  const policy = update.policy !== undefined ? checkPolicy(core, orgId, update.policy) : (JSON.parse(row.policy) as NonNullable<WorkerUpdate["policy"]>);
  stmts(core).update.run(name, JSON.stringify(labels), JSON.stringify(policy), iso(), workerId);
  forgetWorkers(core);
  const presence = presenceOf(core);
  presence.refresh(workerId, { labels: new Set(labels), projects: policy.projects ? new Set(policy.projects) : null });
  presence.publish(orgId, workerId);
  return getWorker(core, orgId, workerId);
}

export function approveWorker(core: Core, orgId: string, workerId: string, approvedBy: string): WorkerRecord {
  const row = mustFind(core, orgId, workerId);
  if (row.revoked_at) throw conflict("the worker was revoked");
  if (!row.approved_at) {
    stmts(core).approve.run(iso(), approvedBy, iso(), workerId);
    forgetWorkers(core);
    const presence = presenceOf(core);
    presence.refresh(workerId, { approved: true });
    presence.publish(orgId, workerId);
  }
  return getWorker(core, orgId, workerId);
}

/** Revokes the credential: refused from now on, socket closed, held attempts back to the queue. Idempotent. */
export function revokeWorker(core: Core, orgId: string, workerId: string): WorkerRecord {
  const row = mustFind(core, orgId, workerId);
  if (!row.revoked_at) {
    core.sqlite.transaction(() => {
      stmts(core).revoke.run(iso(), iso(), workerId);
      // What it reported of its workspace can no longer be reached through it.
      txForgetSightings(core, orgId, workerId);
    })();
    forgetWorkers(core);
    const presence = presenceOf(core);
    presence.revoke(workerId);
    presence.publish(orgId, workerId);
  }
  return getWorker(core, orgId, workerId);
}
