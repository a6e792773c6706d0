// What a task record shows beyond its row (issue 10): usage summed over its attempts, the cost
// allowance (the project's budget, raised by approvals), why a queued task waits, and why a failed
// one failed. Used by the readers (list.ts) and by the live updates (store.ts), so both show the
// same record.
import type { Core } from "../../server/core";
import type { TaskRow } from "./record";
import { all, type Q } from "../../db/query";
import { usageOfTasks, type UsageTotals } from "../usage/service";
import { budgetOf } from "../projects/policy";
import { waitingReason, type OnlineWorkers } from "../workers/waiting";
import { projectPolicy } from "../projects/cache";

export interface Decorations {
  usage: UsageTotals | null;
  allowanceUsd: number | null;
  waitingReason: string | null;
  failureReason: string | null;
}

// The error events of the attempts that failed, oldest first: the timeline says why, so no column does.
const ERRORS_OF_LAST_ATTEMPTS = `SELECT e.task_id, e.data FROM task_events e JOIN tasks t ON t.id = e.task_id AND e.attempt = t.attempt
   WHERE e.task_id IN (SELECT value FROM json_each(?)) AND e.type = 'error' ORDER BY e.task_id, e.seq`;

/** Why each failed task failed: the message of its last attempt's last error event. */
function* failureReasons(rows: TaskRow[]): Q<Map<string, string>> {
  const out = new Map<string, string>();
  const failed = rows.filter((r) => r.status === "failed").map((r) => r.id);
  if (failed.length === 0) return out;
  for (const e of yield* all<{ task_id: string; data: string | null }>(ERRORS_OF_LAST_ATTEMPTS, JSON.stringify(failed))) {
    const message = (e.data ? JSON.parse(e.data) : null)?.message;
    if (typeof message === "string" && message) out.set(e.task_id, message);
  }
  return out;
}

/** The extra fields of these rows' records: one usage query for all, one policy per project (cached with the projects), the rest in memory. */
export function* decorations(core: Core, rows: TaskRow[]): Q<(r: TaskRow) => Decorations> {
  const usage = yield* usageOfTasks(core, rows.map((r) => r.id));
  const policies = new Map<string, unknown>();
  for (const r of rows) {
    if (!policies.has(r.project_id)) policies.set(r.project_id, (yield* projectPolicy(core, r.project_id)) ?? {});
  }
  const waiting = new Map<string, string | null>();
  const online: OnlineWorkers = new Map();
  for (const r of rows) waiting.set(r.id, yield* waitingReason(core, r, online));
  const failures = yield* failureReasons(rows);
  return (r: TaskRow) => {
    const perTaskUsd = budgetOf(policies.get(r.project_id)).perTaskUsd;
    return {
      usage: usage.get(r.id) ?? null,
      allowanceUsd: perTaskUsd === undefined ? null : Math.max(r.budget_usd ?? 0, perTaskUsd),
      waitingReason: waiting.get(r.id) ?? null,
      failureReason: failures.get(r.id) ?? null,
    };
  };
}
