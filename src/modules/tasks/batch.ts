// Group commit for task creation. A create's cost is mostly its commit (the WAL write of every
// b-tree page it touched), so creates that arrive in the same event-loop turn share one
// IMMEDIATE transaction, each in its own savepoint: one refused create (unknown project,
// archived) rolls back alone. Every caller still gets its answer only after the commit, so
// nothing is acknowledged that is not durable. Under no load a batch is a single create that
// waits only for the end of the current turn.
import type { Core } from "../../server/core";
import { publishChanges, type TaskChange } from "./store";
import { txCreateTask, type NewTask } from "./service";

const MAX_BATCH = 256;

interface Pending {
  orgId: string;
  input: NewTask;
  resolve: (c: TaskChange) => void;
  reject: (e: unknown) => void;
}

const queues = new WeakMap<Core, Pending[]>();

function flush(core: Core) {
  const batch = queues.get(core);
  queues.delete(core);
  if (!batch || batch.length === 0) return;
  const results: (TaskChange | { error: unknown })[] = [];
  try {
    core.sqlite
      .transaction(() => {
        for (const p of batch) {
          try {
            // A nested transaction() is a savepoint.
            results.push(core.sqlite.transaction(() => txCreateTask(core, p.orgId, p.input))());
          } catch (error) {
            results.push({ error });
          }
        }
      })
      .immediate();
  } catch (error) {
    // The commit itself failed: none of them happened.
    for (const p of batch) p.reject(error);
    return;
  }
  publishChanges(
    core,
    results.filter((r): r is TaskChange => !("error" in r)),
  );
  batch.forEach((p, i) => {
    const r = results[i];
    if ("error" in r) p.reject(r.error);
    else p.resolve(r);
  });
}

/** createTask, committed together with the other creates of this event-loop turn. */
export function createTaskBatched(core: Core, orgId: string, input: NewTask): Promise<TaskChange> {
  return new Promise((resolve, reject) => {
    let queue = queues.get(core);
    if (!queue) {
      queues.set(core, (queue = []));
      setImmediate(() => flush(core));
    }
    queue.push({ orgId, input, resolve, reject });
    if (queue.length >= MAX_BATCH) flush(core);
  });
}
