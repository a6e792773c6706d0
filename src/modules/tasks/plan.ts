// Plans (SPEC §5): a completed plan task carries plan.tasks; apply-plan creates them once.
// Idempotent: each child is keyed by (parent_id, plan_index), unique in the database, and the
// whole apply runs in one IMMEDIATE transaction, so parallel calls yield one set of children.
import type { Core } from "../../server/core";
import { ApiError, conflict, invalid, notFound } from "../../server/errors";
import type { Actor } from "../auth/principal";
import type { Priority, TaskKind } from "../../db/schema";
import { toTaskRecord, type TaskRecord, type TaskRow } from "./record";
import { resolveNames, taskRefs } from "./names";
import { findTask, publishChanges, txChangeTask, type TaskChange } from "./store";
import { hasRepository, REVIEW_NEEDS_REPOSITORY, txCreateTask } from "./service";
import { artifactsByTask } from "./list";
import { oneLine, withoutNul } from "../../lib/text";
import { all, isUniqueViolation, type Q } from "../../db/query";
import { AGENT_NAMES, type AgentName } from "../../protocol/requests";

export interface PlanItem {
  title: string;
  prompt: string;
  priority?: Priority;
  kind?: TaskKind;
  review?: { base: string; head: string };
  agent?: AgentName;
}

export const MAX_PLAN_TASKS = 100;
const PRIORITIES = new Set(["LOW", "MEDIUM", "HIGH", "URGENT"]);
const KINDS = new Set(["task", "review", "plan"]);
const AGENTS = new Set<string>(AGENT_NAMES);
const isText = (v: unknown, max: number) => typeof v === "string" && v.trim().length > 0 && v.length <= max;

/**
 * Checks a plan as a worker reports it ({tasks: [{title, prompt, priority?, kind?, review?, agent?}]}),
 * returning the normalised plan, or throwing 400 validation_failed with the faulty fields.
 */
export function parsePlan(value: unknown): { tasks: PlanItem[] } {
  const problems: { field: string; message: string }[] = [];
  const tasks = (value as { tasks?: unknown } | null)?.tasks;
  if (!Array.isArray(tasks)) throw invalid("the plan must be {tasks: [...]}", [{ field: "plan.tasks", message: "must be an array" }]);
  if (tasks.length > MAX_PLAN_TASKS) problems.push({ field: "plan.tasks", message: `at most ${MAX_PLAN_TASKS} tasks` });
  const out: PlanItem[] = tasks.map((raw, i) => {
    const item = (raw ?? {}) as Record<string, unknown>;
    const at = `plan.tasks.${i}`;
    // An agent's title may carry a newline or a stray escape: made one line rather than refused.
    const title = typeof item.title === "string" ? oneLine(item.title) : "";
    if (!title || title.length > 200) problems.push({ field: `${at}.title`, message: "1..200 characters on one line" });
    // A NUL in an agent's prompt (PostgreSQL's text cannot hold one) is dropped rather than refused.
    const prompt = typeof item.prompt === "string" ? withoutNul(item.prompt) : item.prompt;
    if (!isText(prompt, 100_000)) problems.push({ field: `${at}.prompt`, message: "1..100000 characters" });
    if (item.priority !== undefined && !PRIORITIES.has(item.priority as string)) problems.push({ field: `${at}.priority`, message: "LOW, MEDIUM, HIGH or URGENT" });
    if (item.kind !== undefined && !KINDS.has(item.kind as string)) problems.push({ field: `${at}.kind`, message: "task, review or plan" });
    if (item.agent !== undefined && !AGENTS.has(item.agent as string)) problems.push({ field: `${at}.agent`, message: AGENT_NAMES.join(", ") });
    const review = item.review as { base?: unknown; head?: unknown } | undefined;
    const reviewOk = review !== undefined && isText(review?.base, 255) && isText(review?.head, 255);
    if (item.kind === "review" && !reviewOk) problems.push({ field: `${at}.review`, message: "{base, head} required with kind review" });
    if (item.kind !== "review" && review !== undefined && review !== null) problems.push({ field: `${at}.review`, message: "only with kind review" });
    return {
      title,
      prompt: String(prompt ?? ""),
      ...(item.priority !== undefined ? { priority: item.priority as Priority } : {}),
      ...(item.kind !== undefined ? { kind: item.kind as TaskKind } : {}),
      ...(item.kind === "review" && reviewOk ? { review: { base: String(review!.base), head: String(review!.head) } } : {}),
      ...(item.agent !== undefined ? { agent: item.agent as AgentName } : {}),
    };
  });
  if (problems.length) throw invalid("the plan is not valid", problems);
  return { tasks: out };
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
