// Plans (SPEC §5): a completed plan task carries plan.tasks; apply-plan creates them once.
// Idempotent: each child is keyed by (parent_id, plan_index), unique in the database, and the
// whole apply runs in one IMMEDIATE transaction, so parallel calls yield one set of children.
import type { Core } from "../../server/core";
import { Value } from "@sinclair/typebox/value";
import { ApiError, conflict, fieldErrors, invalid, invalidRequest, notFound } from "../../server/errors";
import type { Actor } from "../auth/principal";
import { toTaskRecord, type TaskRecord, type TaskRow } from "./record";
import { resolveNames, taskRefs } from "./names";
import { findTask, publishChanges, txChangeTask, type TaskChange } from "./store";
import { hasRepository, REVIEW_NEEDS_REPOSITORY, txCreateTask } from "./service";
import { artifactsByTask } from "./list";
import { oneLine, withoutNul } from "../../lib/text";
import { all, isUniqueViolation, type Q } from "../../db/query";
import { Plan, planProblems, type PlanItem } from "../../protocol/requests";

/**
 * A plan as a worker reports it, checked against the protocol's Plan (400 validation_failed naming
 * each field at fault, as the transition's body) and made storable: each title one line, NUL
 * characters dropped from each prompt, fields Plan does not name dropped.
 */
export function parsePlan(value: unknown): Plan {
  const problems = planProblems(value);
  if (problems.length) throw invalidRequest("body", fieldErrors(problems.map((p) => ({ ...p, path: `/plan${p.path}` }))));
  const plan = Value.Clean(Plan, structuredClone(value)) as Plan;
  // An agent's title may carry a newline or a stray escape, its prompt a NUL (PostgreSQL's text cannot hold one): mended, not refused.
  return { tasks: plan.tasks.map((item) => ({ ...item, title: oneLine(item.title), prompt: withoutNul(item.prompt) })) };
}

const SELECT_CHILDREN = "SELECT * FROM tasks WHERE parent_id = ? AND plan_index IS NOT NULL ORDER BY plan_index";

export interface AppliedPlan {
  /** True when this call created the tasks (201), false when they already existed (200). */
  created: boolean;
  tasks: TaskRecord[];
}

/** Run it in a write: the plan's children are created in one transaction. */
function* applyOnce(core: Core, orgId: string, planId: string, actor: Actor): Q<{ created: boolean; changes: TaskChange[] }> {
  const plan = yield* findTask(core, orgId, planId);
  if (!plan) throw notFound("task");
  if (plan.kind !== "plan") throw invalid("only a plan task can be applied", [{ field: "id", message: `this task is of kind ${plan.kind}` }]);
  if (plan.status !== "completed") throw conflict(`the plan is ${plan.status}; only a completed plan can be applied`, { status: plan.status });
  let items: PlanItem[];
  try {
    items = parsePlan(plan.plan === null ? null : JSON.parse(plan.plan)).tasks;
  } catch (err) {
    throw conflict("the completed plan carries no valid task list", err instanceof ApiError ? err.details : undefined);
  }
  const have = new Set((yield* all<TaskRow>(SELECT_CHILDREN, planId)).map((c) => c.plan_index));
  // Checked for the whole plan first: a review among its tasks would otherwise refuse it naming only `kind`.
  const reviews = items.flatMap((item, index) => (item.kind === "review" && !have.has(index) ? [index] : []));
  if (reviews.length > 0 && !(yield* hasRepository(plan.project_id))) {
    throw invalid(
      "the plan proposes a review, and its project has no repository to review: add one to the project, then apply the plan",
      reviews.map((index) => ({ field: `plan.tasks.${index}.kind`, message: REVIEW_NEEDS_REPOSITORY })),
    );
  }
  const changes: TaskChange[] = [];
  for (const [index, item] of items.entries()) {
    if (have.has(index)) continue;
    changes.push(
      yield* txCreateTask(core, orgId, {
        ...item,
        // The plan's agent carries to its tasks (a plan run with codex proposes work for codex).
        agent: item.agent ?? plan.agent,
        projectId: plan.project_id,
        createdBy: { type: "plan", id: planId },
        parentId: planId,
        planIndex: index,
        actor,
      }),
    );
  }
  if (changes.length > 0) {
    changes.push(yield* txChangeTask(core, orgId, planId, () => ({ events: [{ type: "plan", actor, data: { applied: changes.map((c) => c.after.id) } }] })));
  }
  return { created: changes.length > 0, changes };
}

/** Creates the tasks a completed plan proposes, once; later calls return the same tasks. */
export async function applyPlan(core: Core, orgId: string, planId: string, actor: Actor): Promise<AppliedPlan> {
  let result: { created: boolean; changes: TaskChange[] };
  try {
    result = await core.store.write(applyOnce(core, orgId, planId, actor));
  } catch (err) {
    // Another process applied it between our read and write: the unique index refused ours.
    if (!isUniqueViolation(err)) throw err;
    result = await core.store.write(applyOnce(core, orgId, planId, actor));
  }
  await publishChanges(core, result.changes);
  const tasks = await core.store.read(planTasks(core, planId));
  return { created: result.created, tasks };
}

/** The records of a plan's children, in plan order. */
function* planTasks(core: Core, planId: string): Q<TaskRecord[]> {
  const rows = yield* all<TaskRow>(SELECT_CHILDREN, planId);
  const artifacts = yield* artifactsByTask(core, rows.map((r) => r.id));
  const names = yield* resolveNames(core, rows.flatMap(taskRefs));
  return rows.map((row) => toTaskRecord(row, artifacts.get(row.id) ?? [], names));
}
