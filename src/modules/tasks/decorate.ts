// What a task record shows beyond its row (issue 10): usage summed over its attempts, the cost
// allowance (the project's budget, raised by approvals), and why a queued task waits. Used by the
// readers (list.ts) and by the live updates (store.ts), so both show the same record.
import type { Core } from "../../server/core";
import type { TaskRow } from "./record";
import { usageOfTasks } from "../usage/service";
import { budgetOf } from "../projects/policy";
import { waitingReason } from "../workers/eligibility";

const statements = new WeakMap<Core, ReturnType<typeof prepare>>();
function prepare(core: Core) {
  return { policy: core.sqlite.query<{ policy: string }, [string]>("SELECT policy FROM projects WHERE id = ?") };
}
function stmts(core: Core) {
  let s = statements.get(core);
  if (!s) statements.set(core, (s = prepare(core)));
  return s;
}

/** The extra fields of these rows' records: one usage query for all, one policy read per project, the rest in memory. */
export function decorations(core: Core, rows: TaskRow[]) {
  const usage = usageOfTasks(core, rows.map((r) => r.id));
  const policies = new Map<string, unknown>();
  const policyOf = (projectId: string) => {
    if (!policies.has(projectId)) {
      const row = stmts(core).policy.get(projectId);
      policies.set(projectId, row ? JSON.parse(row.policy) : {});
    }
    return policies.get(projectId);
  };
  return (r: TaskRow) => {
    const perTaskUsd = budgetOf(policyOf(r.project_id)).perTaskUsd;
    return {
      usage: usage.get(r.id) ?? null,
      allowanceUsd: perTaskUsd === undefined ? null : Math.max(r.budget_usd ?? 0, perTaskUsd),
      waitingReason: waitingReason(core, r),
    };
  };
}
