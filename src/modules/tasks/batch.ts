// Group commit for task writes. A write's cost is mostly its commit (the WAL write of every
// b-tree page it touched), so the task writes that arrive in the same event-loop turn (creates,
// and a worker's claims, transitions and events) share one IMMEDIATE transaction, each in its own
// savepoint: one refused write (unknown project, stale lease) rolls back alone. Every caller still
// gets its answer only after the commit, so nothing is acknowledged that is not durable. Under no
// load a batch is a single write that waits only for the end of the current turn.
// On SQLite each write is a program run synchronously inside the bun:sqlite transaction. On
// PostgreSQL (every write transaction takes the one writers' lock, so they run one at a time
// across servers) a batch is one PgStore.writeEach: the writes that arrive while a batch waits
// for the lock or runs make the next one.
import type { Database } from "bun:sqlite";
import type { Core } from "../../server/core";
import type { Q } from "../../db/query";
import type { PgStore } from "../../db/pg-store";
import { publishChanges, txChangeTask, type Decide, type TaskChange } from "./store";
import { txCreateTask, type NewTask } from "./service";

const MAX_BATCH = 256;

interface Pending {
  /** The write, run inside the batch's transaction; its change is published after commit. */
  write: Q<TaskChange>;
  resolve: (c: TaskChange) => void;
  reject: (e: unknown) => void;
}

interface Batcher {
  queue: Pending[] | null;
  /** The batch's transaction and each write's savepoint (a nested transaction() is a savepoint), made once. */
  outer: ReturnType<Database["transaction"]>;
  /** Called inside `outer`, a savepoint; called alone (.immediate), a transaction of its own. */
  savepoint: ReturnType<Database["transaction"]>;
}

const batchers = new WeakMap<Core, Batcher>();

function batcherOf(core: Core, sqlite: Database): Batcher {
  let b = batchers.get(core);
  if (!b) {
    const savepoint = sqlite.transaction((write: Q<TaskChange>) => core.store.sync(write));
    b = {
      queue: null,
      savepoint,
      outer: sqlite.transaction((batch: Pending[], results: (TaskChange | { error: unknown })[]) => {
        for (const p of batch) {
          try {
            results.push(savepoint(p.write));
          } catch (error) {
            results.push({ error });
          }
        }
      }),
    };
    batchers.set(core, b);
  }
  return b;
}

// publishChanges has published when it returns on SQLite (and never throws): every change is
// out before its caller is answered, as before.
function flush(core: Core, b: Batcher) {
  const batch = b.queue;
  b.queue = null;
  if (!batch || batch.length === 0) return;
  if (batch.length === 1) {
    // Alone in its turn (no load): its own transaction, no savepoint; a refusal rolls it all back.
    const p = batch[0];
    let change: TaskChange;
    try {
      change = b.savepoint.immediate(p.write) as TaskChange;
    } catch (error) {
      p.reject(error);
      return;
    }
    void publishChanges(core, [change]);
    p.resolve(change);
    return;
  }
  const results: (TaskChange | { error: unknown })[] = [];
  try {
    b.outer.immediate(batch, results);
  } catch (error) {
    // The commit itself failed: none of them happened.
    for (const p of batch) p.reject(error);
    return;
  }
  void publishChanges(
    core,
    results.filter((r): r is TaskChange => !("error" in r)),
  );
  batch.forEach((p, i) => {
    const r = results[i];
    if ("error" in r) p.reject(r.error);
    else p.resolve(r);
  });
}

interface PgBatcher {
  /** The writes waiting for the next batch. */
  queue: Pending[];
  /** A batch is waiting for the lock or running (until its commit). */
  busy: boolean;
}

const pgBatchers = new WeakMap<Core, PgBatcher>();

/**
 * Starts the next batch unless one is under way. A write that comes when none is goes on the next
 * microtask (the writes of one turn go together); the ones that come meanwhile wait for the batch
 * before to commit, which under load is what makes batches large.
 */
function flushPg(core: Core, store: PgStore, b: PgBatcher) {
  if (b.busy || b.queue.length === 0) return;
  const batch = b.queue.splice(0, MAX_BATCH);
  b.busy = true;
  store.writeEach(batch.map((p) => p.write)).then(
    async (outcomes) => {
      // Committed: the next batch may take the lock while this one's changes are published.
      b.busy = false;
      flushPg(core, store, b);
      await publishChanges(core, outcomes.flatMap((o) => ("value" in o ? [o.value] : [])));
      batch.forEach((p, i) => {
        const o = outcomes[i]!;
        if ("value" in o) p.resolve(o.value);
        else p.reject(o.error);
      });
    },
    (error: unknown) => {
      // The transaction itself failed: none of them happened.
      b.busy = false;
      flushPg(core, store, b);
      for (const p of batch) p.reject(error);
    },
  );
}

function groupCommitPg(core: Core, store: PgStore, write: Q<TaskChange>): Promise<TaskChange> {
  let b = pgBatchers.get(core);
  if (!b) pgBatchers.set(core, (b = { queue: [], busy: false }));
  const batcher = b;
  return new Promise((resolve, reject) => {
    if (!batcher.busy && batcher.queue.length === 0) queueMicrotask(() => flushPg(core, store, batcher));
    batcher.queue.push({ write, resolve, reject });
  });
}

/** Runs `write` in a group commit; resolves after the commit, once its change is published. */
function groupCommit(core: Core, write: Q<TaskChange>): Promise<TaskChange> {
  const sqlite = core.sqlite;
  if (!sqlite) return groupCommitPg(core, core.store as PgStore, write);
  return new Promise((resolve, reject) => {
    const b = batcherOf(core, sqlite);
    if (!b.queue) {
      b.queue = [];
      setImmediate(() => flush(core, b));
    }
    b.queue.push({ write, resolve, reject });
    if (b.queue.length >= MAX_BATCH) flush(core, b);
  });
}

/** createTask, committed together with the other task writes of this event-loop turn. */
export function createTaskBatched(core: Core, orgId: string, input: NewTask): Promise<TaskChange> {
  return groupCommit(core, txCreateTask(core, orgId, input));
}

/** changeTask, committed together with the other task writes of this event-loop turn. */
export function changeTaskBatched(core: Core, orgId: string | null, taskId: string, decide: Decide): Promise<TaskChange> {
  return groupCommit(core, txChangeTask(core, orgId, taskId, decide));
}
