// A task's result as a branch: after the transaction that completed a task whose worker pushed its
// branch ao/<taskId> has committed, the listeners hear of it (the code-hosting app opens a pull
// request). Listeners must not throw into the emitter; a failure is theirs to log.
import type { Core } from "../../server/core";

export interface CompletedWithBranch {
  orgId: string;
  projectId: string;
  taskId: string;
  repositoryId: string;
  branch: string;
  base: string | null;
  commit: string | null;
}

type Listener = (result: CompletedWithBranch, core?: Core) => void;
const listeners: Listener[] = [];

/** Registers a listener. Several servers may share a process: a listener given `core` checks it is its own. */
export function onTaskCompletedWithBranch(fn: Listener) {
  listeners.push(fn);
}

export function emitTaskCompletedWithBranch(result: CompletedWithBranch, core?: Core) {
  for (const fn of listeners) {
    try {
      fn(result, core);
    } catch (error) {
      core?.log.error("a listener of completed branches failed", { taskId: result.taskId, error: String(error) });
    }
  }
}
