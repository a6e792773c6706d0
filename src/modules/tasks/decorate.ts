// What a task record shows beyond its row (issue 10): usage summed over its attempts, the cost
// allowance (the project's budget, raised by approvals), and why a queued task waits. Used by the
// readers (list.ts) and by the live updates (store.ts), so both show the same record.
import type { Core } from "../../server/core";
import type { TaskRow } from "./record";
import type { Q } from "../../db/query";
import { usageOfTasks, type UsageTotals } from "../usage/service";
import { budgetOf } from "../projects/policy";
import { waitingReason, type OnlineWorkers } from "../workers/waiting";
import { projectPolicy } from "../projects/cache";

export interface Decorations {
  usage: UsageTotals | null;
  allowanceUsd: number | null;
  waitingReason: string | null;
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
  return (r: TaskRow) => {
    const perTaskUsd = budgetOf(policies.get(r.project_id)).perTaskUsd;
    return {
      usage: usage.get(r.id) ?? null,
      allowanceUsd: perTaskUsd === undefined ? null : Math.max(r.budget_usd ?? 0, perTaskUsd),
      waitingReason: waiting.get(r.id) ?? null,
    };
  };
}
