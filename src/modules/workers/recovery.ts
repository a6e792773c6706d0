// Lost attempts: a worker that went silent, was revoked, or came back without them. Each lost
// attempt goes back to the queue (the next claim is attempt + 1) until MAX_ATTEMPTS, then fails
// with an event that says why.
import type { Core } from "../../server/core";
import { iso } from "../../lib/time";
import type { TaskRow } from "../tasks/record";
import { publishChanges, txChangeTask, type Decision, type TaskChange, type TaskPatch } from "../tasks/store";
import { interruptedCalls } from "../tasks/interrupted";
import { isHeld } from "./dispatcher-state";
import { heldTaskIds } from "./registry";
import { run, type Q } from "../../db/query";

export const MAX_ATTEMPTS = 3;

function* decideLoss(row: TaskRow, workerId: string, reason: string): Q<Decision> {
  if (row.worker_id !== workerId || !isHeld(row)) return { events: [] };
  const lost = `attempt ${row.attempt} was lost: ${reason}`;
  const base = { worker_id: null, lease_token_hash: null, needs: null } satisfies TaskPatch;
  const error = (message: string) => ({ type: "error", attempt: row.attempt, data: { message, workerId, attempt: row.attempt } });
  // The calls it was running will not report back (the lease goes): closed after the error that says why.
  const closed = yield* interruptedCalls(row, `stopped: ${lost}`);
  if (row.status === "paused") {
    // Stays paused; resuming it now queues a new attempt (its worker is gone).
    return { patch: { ...base, paused_from: "queued" }, events: [error(lost), ...closed] };
  }
  if (row.attempt >= MAX_ATTEMPTS) {
    return {
      patch: { ...base, worker_id: row.worker_id, status: "failed", finished_at: iso() },
      events: [error(`${lost}; the task failed after ${row.attempt} attempts`), ...closed, { type: "status", data: { from: row.status, to: "failed", reason: "attempts exhausted" } }],
    };
  }
  return {
    patch: { ...base, status: "queued", paused_from: null },
    events: [error(`${lost}; the task goes back to the queue`), ...closed, { type: "status", data: { from: row.status, to: "queued", reason: "attempt lost" } }],
  };
}

/**
 * Gives up the attempts a worker holds (all of them, or only those in `taskIds`), in the caller's
 * write transaction. The changes are the caller's to publish after the commit (publishLost).
 */
export function* giveUpAttempts(core: Core, workerId: string, reason: string, taskIds?: string[]): Q<TaskChange[]> {
  const ids = taskIds ?? (yield* heldTaskIds(core, workerId));
  const changes: TaskChange[] = [];
  for (const id of ids) {
    const change = yield* txChangeTask(core, null, id, (row) => decideLoss(row, workerId, reason));
    if (change.events.length > 0) changes.push(change);
  }
  return changes;
}

/** After the commit of giveUpAttempts: counted, and published to pages and listeners (the dispatcher re-offers). */
export function publishLost(core: Core, changes: TaskChange[]) {
  if (changes.length === 0) return;
  core.metrics.attemptsLost.inc(changes.length);
  publishChanges(core, changes);
}

/** giveUpAttempts in its own write transaction, published after it. */
export async function loseAttempts(core: Core, workerId: string, reason: string, taskIds?: string[]): Promise<TaskChange[]> {
  if (taskIds?.length === 0) return [];
  const changes = await core.store.write(giveUpAttempts(core, workerId, reason, taskIds));
  publishLost(core, changes);
  return changes;
}

const FAIL_RUNS_OF = "UPDATE readiness_runs SET status = 'failed', error = ?, updated_at = ?, finished_at = ? WHERE worker_id = ? AND status IN ('queued', 'running')";
// Runs whose worker no server has seen since the cutoff (last_seen_at is ISO text: it sorts as time).
const FAIL_UNFINISHED_RUNS = `UPDATE readiness_runs SET status = 'failed', error = ?, updated_at = ?, finished_at = ?
  WHERE status IN ('queued', 'running') AND worker_id IN (SELECT id FROM workers WHERE last_seen_at IS NULL OR last_seen_at < ?)`;
/** The server holding a worker's socket writes its last_seen_at every 5 s (presence.ts); this leaves room for that. */
const SEEN_MARGIN_MS = 10_000;

/** Readiness runs waiting on a worker that is gone will not finish: they fail with the reason. */
export function* failReadinessRuns(_core: Core, workerId: string, reason: string): Q<void> {
  const now = iso();
  yield* run(FAIL_RUNS_OF, reason, now, now, workerId);
}

/**
 * At startup: unfinished runs of workers that no server has heard from for the offline timeout
 * will not finish; they fail, to be asked again. The others go on: their worker is connected to
 * another server, or reconnects, and reports the run over HTTP whichever server answers.
 */
export function* failInterruptedReadinessRuns(core: Core): Q<void> {
  const nowMs = Date.now();
  const now = iso(nowMs);
  const cutoff = iso(nowMs - core.config.workerTimeouts.offlineMs - SEEN_MARGIN_MS);
  yield* run(FAIL_UNFINISHED_RUNS, "the server restarted before the run finished, and its worker is away; ask again", now, now, cutoff);
}
