// Lost attempts: a worker that went silent, was revoked, or came back without them. Each lost
// attempt goes back to the queue (the next claim is attempt + 1) until MAX_ATTEMPTS, then fails
// with an event that says why.
import type { Core } from "../../server/core";
import { iso } from "../../lib/time";
import type { TaskRow } from "../tasks/record";
import { publishChanges, txChangeTask, type EventInput, type TaskChange, type TaskPatch } from "../tasks/store";
import { isHeld } from "./dispatcher";
import { heldTaskIds } from "./registry";

export const MAX_ATTEMPTS = 3;

function decideLoss(row: TaskRow, workerId: string, reason: string): { patch?: TaskPatch; events: EventInput[] } {
  if (row.worker_id !== workerId || !isHeld(row)) return { events: [] };
  const lost = `attempt ${row.attempt} was lost: ${reason}`;
  const base = { worker_id: null, lease_token_hash: null, needs: null } satisfies TaskPatch;
  if (row.status === "paused") {
    // Stays paused; resuming it now queues a new attempt (its worker is gone).
    return { patch: { ...base, paused_from: "queued" }, events: [{ type: "error", attempt: row.attempt, data: { message: lost, workerId, attempt: row.attempt } }] };
  }
  if (row.attempt >= MAX_ATTEMPTS) {
    const message = `${lost}; the task failed after ${row.attempt} attempts`;
    return {
      patch: { ...base, worker_id: row.worker_id, status: "failed", finished_at: iso() },
      events: [
        { type: "error", attempt: row.attempt, data: { message, workerId, attempt: row.attempt } },
        { type: "status", data: { from: row.status, to: "failed", reason: "attempts exhausted" } },
      ],
    };
  }
  return {
    patch: { ...base, status: "queued", paused_from: null },
    events: [
      { type: "error", attempt: row.attempt, data: { message: `${lost}; the task goes back to the queue`, workerId, attempt: row.attempt } },
      { type: "status", data: { from: row.status, to: "queued", reason: "attempt lost" } },
    ],
  };
}

/** Gives up the attempts a worker holds (all of them, or only those in `taskIds`). */
export function loseAttempts(core: Core, workerId: string, reason: string, taskIds?: string[]): TaskChange[] {
  const ids = taskIds ?? heldTaskIds(core, workerId);
  if (ids.length === 0) return [];
  const changes = core.sqlite
    .transaction(() => ids.map((id) => core.store.sync(txChangeTask(core, null, id, (row) => decideLoss(row, workerId, reason)))))
    .immediate()
    .filter((c) => c.events.length > 0);
  core.metrics.attemptsLost.inc(changes.length);
  publishChanges(core, changes);
  return changes;
}

/** Readiness runs waiting on a worker that is gone will not finish: they fail with the reason. */
export function failReadinessRuns(core: Core, workerId: string, reason: string) {
  const now = iso();
  core.sqlite
    .query("UPDATE readiness_runs SET status = 'failed', error = ?, updated_at = ?, finished_at = ? WHERE worker_id = ? AND status IN ('queued', 'running')")
    .run(reason, now, now, workerId);
}

/** At startup: unfinished runs lost their request with the previous process (it lived in memory); they fail, to be asked again. */
export function failInterruptedReadinessRuns(core: Core) {
  const now = iso();
  core.sqlite
    .query("UPDATE readiness_runs SET status = 'failed', error = ?, updated_at = ?, finished_at = ? WHERE status IN ('queued', 'running')")
    .run("the server restarted before the run finished; ask again", now, now);
}
