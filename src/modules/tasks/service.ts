// Task rules: creating tasks and applying people's actions through the state machine.
import type { Core } from "../../server/core";
import { ApiError, invalid, notFound } from "../../server/errors";
import type { Actor } from "../auth/principal";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import type { Priority, TaskKind, TaskStatus } from "../../db/schema";
import { ACTION_TABLE, BUDGET_ANSWERS, TERMINAL, allowedActions, isAllowed, type Action } from "./machine";
import { money, taskBudget } from "../usage/service";
import { PRIORITY_RANK, type TaskRow } from "./record";
import { interruptedCalls } from "./interrupted";
import { get, type Q } from "../../db/query";
import { changeTask, commitChange, publishChanges, txChangeTask, txInsertTask, type EventActor, type EventInput, type TaskChange, type TaskPatch } from "./store";

export interface NewTask {
  projectId: string;
  title: string;
  prompt: string;
  priority?: Priority;
  kind?: TaskKind;
  review?: { base: string; head: string } | null;
  createdBy: { type: TaskRow["created_by_type"]; id: string };
  parentId?: string | null;
  planIndex?: number | null;
  /** Where the task came from (integration, delivery, item link). */
  source?: Record<string, unknown> | null;
  /** The agent to run it with (claude, codex, exec); none: the project's preferredAgent, or any. */
  agent?: string | null;
  /** Who made it happen, for the first timeline event (default: createdBy, unless a plan). */
  actor?: Actor | null;
}

const SELECT_PROJECT = "SELECT archived FROM projects WHERE id = ? AND org_id = ?";
const SELECT_REPOSITORY = "SELECT id FROM repositories WHERE project_id = ? LIMIT 1";
const SELECT_PLAN_CHILD = "SELECT id FROM tasks WHERE parent_id = ? AND plan_index IS NOT NULL LIMIT 1";
const SELECT_POLICY = "SELECT policy FROM projects WHERE id = ?";
const SELECT_TASK_OF_ORG = "SELECT * FROM tasks WHERE id = ? AND org_id = ?";

/** The creator as the actor of the first event; a plan is no actor (apply-plan passes the person who applied it). */
function creatorActor(c: NewTask["createdBy"]): EventActor | null {
  return c.type === "plan" ? null : { type: c.type, id: c.id };
}

/**
 * review {base, head} goes with kind review and only with it: a review without its range cannot
 * run, and a range on another kind would be silently dropped.
 */
export function checkKindAndReview(kind: string | undefined, review: unknown, field = "review") {
  const given = review !== undefined && review !== null;
  if ((kind ?? "task") === "review") {
    if (!given) throw invalid("a review task needs review {base, head}", [{ field, message: "required with kind review" }]);
  } else if (given) {
    throw invalid(`review {base, head} is only for kind review, not ${kind ?? "task"}`, [
      { field, message: `only with kind review; kind is ${kind === undefined ? "task (the default)" : kind}` },
    ]);
  }
}

/** Whether the project has a repository: a review runs in a checkout of it, and without one would review nothing. */
export function* hasRepository(projectId: string): Q<boolean> {
  return Boolean(yield* get(SELECT_REPOSITORY, projectId));
}

export const REVIEW_NEEDS_REPOSITORY = "review needs a project with a repository";

const COUNT_UNFINISHED_REVIEWS = `SELECT COUNT(*) AS n FROM tasks WHERE org_id = ? AND project_id = ? AND kind = 'review' AND status NOT IN (${[...TERMINAL].map((s) => `'${s}'`).join(", ")})`;

/** How many reviews of the project are not finished: each still needs a repository to check out (hasRepository). */
export function* unfinishedReviews(orgId: string, projectId: string): Q<number> {
  return (yield* get<{ n: number }>(COUNT_UNFINISHED_REVIEWS, orgId, projectId))?.n ?? 0;
}

/** Creates a task inside the write that runs it; publish the change after commit. */
export function* txCreateTask(core: Core, orgId: string, input: NewTask): Q<TaskChange> {
  checkKindAndReview(input.kind, input.review);
  const project = yield* get<{ archived: number }>(SELECT_PROJECT, input.projectId, orgId);
  if (!project) throw invalid("projectId does not name a project of this organization", [{ field: "projectId", message: "unknown project" }]);
  if (project.archived) throw new ApiError(409, "conflict", "the project is archived and takes no new tasks");
  if (input.title.trim() === "") throw invalid("title must not be blank", [{ field: "title", message: "1..200 characters, not only spaces" }]);
  const kind = input.kind ?? "task";
  if (kind === "review" && !(yield* hasRepository(input.projectId))) {
    throw invalid("a review task needs a repository to review, and the project has none: add one to the project first", [{ field: "kind", message: REVIEW_NEEDS_REPOSITORY }]);
  }
  const priority = input.priority ?? "MEDIUM";
  const id = newId("tsk");
  return yield* txInsertTask(
    core,
    {
      id,
      org_id: orgId,
      project_id: input.projectId,
      title: input.title,
      prompt: input.prompt,
      priority,
      priority_rank: PRIORITY_RANK[priority],
      kind,
      review: kind === "review" && input.review ? JSON.stringify({ base: input.review.base, head: input.review.head }) : null,
      status: "queued",
      paused_from: null,
      attempt: 0,
      run_mode: "fresh",
      worker_id: null,
      lease_token_hash: null,
      parent_id: input.parentId ?? null,
      plan_index: input.planIndex ?? null,
      created_by_type: input.createdBy.type,
      created_by_id: input.createdBy.id,
      summary: null,
      changes: null,
      needs: null,
      plan: null,
      source: input.source ? JSON.stringify(input.source) : null,
      agent: input.agent ?? null,
      budget_usd: null,
      pull_request: null,
      started_at: null,
      finished_at: null,
    },
    [{ type: "status", data: { from: null, to: "queued" }, actor: input.actor ?? creatorActor(input.createdBy) }],
  );
}

/** A task in its own write transaction, published after commit (routes use the group commit, batch.ts). */
export function createTask(core: Core, orgId: string, input: NewTask): Promise<TaskChange> {
  return commitChange(core, txCreateTask(core, orgId, input));
}

export interface ActionInput {
  action: Action;
  input?: string;
  reason?: string;
}

/** The needs of a row waiting for a person, or null. */
function needsOf(row: TaskRow): { kind: string; message: string; allowanceUsd?: number | null } | null {
  return row.needs ? (JSON.parse(row.needs) as { kind: string; message: string }) : null;
}

/**
 * The answer to a budget question: deny cancels; approve raises the task's allowance by the
 * project's perTaskUsd (the allowance it passed, again, when the policy no longer sets one).
 */
function* budgetAnswer(core: Core, action: Action, row: TaskRow, now: string): Q<TaskPatch | null> {
  const needs = needsOf(row);
  if (row.status !== "needs_approval" || needs?.kind !== "budget" || !BUDGET_ANSWERS[action]) return null;
  if (action === "deny") return actionPatch("cancel", row, now);
  const policy = (yield* get<{ policy: string }>(SELECT_POLICY, row.project_id))?.policy;
  const budget = yield* taskBudget(core, row, policy ? JSON.parse(policy) : {}, row.attempt);
  const passed = budget?.allowanceUsd ?? needs.allowanceUsd ?? 0;
  return { status: "running", needs: null, budget_usd: money(passed + (budget?.perTaskUsd ?? passed)) };
}

/** The patch an action makes, given the current row. The stop of a running attempt is told to the worker after commit. */
function actionPatch(action: Action, row: TaskRow, now: string): TaskPatch {
  const target = ACTION_TABLE[action].to;
  switch (action) {
    case "pause":
      return { status: "paused", paused_from: row.status };
    case "resume": {
      // Paused from a worker-held state, but the worker is gone: back to the queue.
      const back = (target === "paused-from" ? row.paused_from : target) ?? "queued";
      const to: TaskStatus = back !== "queued" && !row.worker_id ? "queued" : back;
      return { status: to, paused_from: null };
    }
    case "cancel":
      return { status: "cancelled", paused_from: null, needs: null, lease_token_hash: null, finished_at: now };
    case "retry":
    case "restart":
      // What the last attempt reported belongs to it (its events keep it): the new one starts bare.
      return {
        status: "queued",
        paused_from: null,
        needs: null,
        summary: null,
        changes: null,
        plan: null,
        started_at: null,
        worker_id: null,
        lease_token_hash: null,
        run_mode: action === "retry" ? "continue" : "fresh",
        finished_at: null,
      };
    case "input":
    case "approve":
    case "deny":
      return { status: "running", needs: null };
  }
}

export const MAX_REASON_CHARS = 2000;

/** The actions that put a task back in the queue: another run, which an archived project no longer takes. */
const REQUEUES = new Set<Action>(["retry", "restart"]);

export async function applyAction(core: Core, orgId: string, taskId: string, req: ActionInput, actor: Actor): Promise<TaskChange> {
  // Characters, not UTF-16 units: 2,000 emoji are 2,000 characters.
  if (req.reason !== undefined && req.reason.length > MAX_REASON_CHARS && [...req.reason].length > MAX_REASON_CHARS) {
    throw invalid(`reason is longer than ${MAX_REASON_CHARS} characters`, [{ field: "reason", message: `at most ${MAX_REASON_CHARS} characters` }]);
  }
  // The agent is handed input only by the input action: on any other it would be dropped.
  if (req.action !== "input" && req.input !== undefined) {
    throw invalid(`input goes with the action input, not ${req.action}`, [{ field: "input", message: `only with action input; action is ${req.action}` }]);
  }
  const change = await changeTask(core, orgId, taskId, function* (row) {
    if (!isAllowed(req.action, row.status)) {
      throw new ApiError(409, "invalid_transition", `cannot ${req.action} a task that is ${row.status}`, {
        status: row.status,
        allowedActions: allowedActions(row.status),
      });
    }
    // Spaces alone would reach the agent as an answer that says nothing.
    if (req.action === "input" && (req.input === undefined || req.input.trim() === "")) {
      throw invalid("action input needs an input that is not blank", [{ field: "input", message: req.input === undefined ? "required with action input" : "must not be blank" }]);
    }
    if (REQUEUES.has(req.action) && (yield* get<{ archived: number }>(SELECT_PROJECT, row.project_id, orgId))?.archived) {
      throw new ApiError(409, "conflict", `the project is archived and runs no more work: restore it first (PATCH {archived: false}) to ${req.action} its tasks`);
    }
    // Its tasks are keyed by their place in the plan: a plan run again would propose others.
    if (REQUEUES.has(req.action) && row.kind === "plan" && (yield* get(SELECT_PLAN_CHILD, row.id))) {
      throw new ApiError(409, "conflict", `the plan was applied and its tasks were created: make a new plan rather than ${req.action} this one`);
    }
    const budget = yield* budgetAnswer(core, req.action, row, iso());
    const patch = budget ?? actionPatch(req.action, row, iso());
    const events: EventInput[] = [
      {
        type: "action",
        actor,
        data: {
          action: req.action,
          ...(req.reason !== undefined ? { reason: req.reason } : {}),
          ...(req.input !== undefined ? { input: req.input } : {}),
          // A budget answer says what it did: the allowance it raised to, or that the task stops.
          ...(budget ? { budget: budget.budget_usd !== undefined ? { allowanceUsd: budget.budget_usd } : { cancelled: true } } : {}),
        },
      },
    ];
    // A held attempt stops here (an ended one keeps its lease, and said its last): what it was running will not report back.
    if (!TERMINAL.has(row.status) && row.lease_token_hash !== null && patch.lease_token_hash === null) {
      events.push(...(yield* interruptedCalls(row, `stopped: the task was ${req.action === "restart" ? "restarted" : "cancelled"}`)));
    }
    if (patch.status && patch.status !== row.status) events.push({ type: "status", actor, data: { from: row.status, to: patch.status } });
    return { patch, events };
  });
  core.events.emit("task.action", { change, action: req.action, input: req.input, reason: req.reason, actor });
  return change;
}

export function* getTaskRow(_core: Core, orgId: string, taskId: string): Q<TaskRow> {
  const row = yield* get<TaskRow>(SELECT_TASK_OF_ORG, taskId, orgId);
  if (!row) throw notFound("task");
  return row;
}

export { TERMINAL, txChangeTask, publishChanges };
