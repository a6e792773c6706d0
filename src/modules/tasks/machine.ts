// The task state machine, written once as data (SPEC §5). Routes, the worker protocol and the
// web app's buttons all read these tables.
import type { TaskStatus } from "../../db/schema";

export const TASK_STATUSES = ["queued", "running", "paused", "needs_input", "needs_approval", "completed", "failed", "cancelled"] as const;
export const TERMINAL: ReadonlySet<TaskStatus> = new Set(["completed", "failed", "cancelled"]);
export const ACTIONS = ["pause", "resume", "cancel", "retry", "restart", "input", "approve", "deny"] as const;
export type Action = (typeof ACTIONS)[number];

const NON_TERMINAL: TaskStatus[] = ["queued", "running", "paused", "needs_input", "needs_approval"];

/** action -> the states it is allowed from, and the state it leads to ("paused-from" = where pause left it). */
export const ACTION_TABLE: Record<Action, { from: readonly TaskStatus[]; to: TaskStatus | "paused-from" }> = {
  pause: { from: ["queued", "running", "needs_input", "needs_approval"], to: "paused" },
  resume: { from: ["paused"], to: "paused-from" },
  cancel: { from: NON_TERMINAL, to: "cancelled" },
  retry: { from: ["failed", "cancelled"], to: "queued" },
  restart: { from: ["running", "paused", "needs_input", "needs_approval", "completed", "failed", "cancelled"], to: "queued" },
  input: { from: ["needs_input", "running"], to: "running" },
  approve: { from: ["needs_approval"], to: "running" },
  deny: { from: ["needs_approval"], to: "running" },
};

/**
 * A needs_approval that is a budget question (needs.kind budget, the task passed its cost
 * allowance): approve goes on with the allowance raised by the project's perTaskUsd, deny cancels
 * the task (there is no tool call to refuse).
 */
export const BUDGET_ANSWERS: Partial<Record<Action, TaskStatus>> = { approve: "running", deny: "cancelled" };

export function allowedActions(status: TaskStatus): Action[] {
  return ACTIONS.filter((a) => ACTION_TABLE[a].from.includes(status));
}

export function isAllowed(action: Action, status: TaskStatus): boolean {
  return ACTION_TABLE[action].from.includes(status);
}

/**
 * What a worker holding the current lease may report: from -> allowed targets.
 * Claiming (queued -> running) is not a transition here; it is the claim itself.
 */
export const WORKER_TRANSITIONS: Partial<Record<TaskStatus, readonly TaskStatus[]>> = {
  running: ["needs_input", "needs_approval", "completed", "failed"],
  needs_input: ["running", "completed", "failed"],
  needs_approval: ["running", "completed", "failed"],
  // A paused agent may still finish or fail (it was told to pause but the process ended).
  paused: ["completed", "failed"],
};

export function workerMayTransition(from: TaskStatus, to: TaskStatus): boolean {
  return WORKER_TRANSITIONS[from]?.includes(to) ?? false;
}
