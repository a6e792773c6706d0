// The one way a task is written. Every change runs in an IMMEDIATE transaction that reads the
// row, applies the change, allocates the next timeline seqs (no gaps, even with concurrent
// writers), runs core.taskHooks, and commits; live updates go out after the commit.
import type { Core } from "../../server/core";
import { notFound } from "../../server/errors";
import type { Actor } from "../auth/principal";
import { iso } from "../../lib/time";
import { namedEvent, toTaskRecord, type ArtifactInfo, type TaskEvent, type TaskRow } from "./record";
import { resolveNames, taskRefs, type Names } from "./names";
import { decorations } from "./decorate";

/** Who an event is by: a person (or their token), a worker, an integration; none for the server's own. */
export type EventActor = Actor | { type: "worker" | "integration"; id: string };

export interface EventInput {
  type: string;
  data: unknown;
  actor?: EventActor | null;
  /** Worker events: the attempt and the worker's own seq, which dedupe resends. */
  attempt?: number;
  workerSeq?: number;
}

export interface TaskChange {
  before: TaskRow | null;
  after: TaskRow;
  events: TaskEvent[];
}

/** Columns a change may set. */
export type TaskPatch = Partial<
  Pick<
    TaskRow,
    | "status"
    | "paused_from"
    | "attempt"
    | "run_mode"
    | "worker_id"
    | "lease_token_hash"
    | "summary"
    | "changes"
    | "needs"
    | "plan"
    | "pull_request"
    | "started_at"
    | "finished_at"
    | "budget_usd"
  >
>;

const COLUMNS = [
  "id", "org_id", "project_id", "title", "prompt", "priority", "priority_rank", "kind", "review", "status", "paused_from",
  "attempt", "run_mode", "worker_id", "lease_token_hash", "parent_id", "plan_index", "created_by_type", "created_by_id",
  "summary", "changes", "needs", "plan", "source", "pull_request", "agent", "budget_usd", "last_seq", "created_at", "updated_at", "started_at", "finished_at",
] as const;

const statements = new WeakMap<Core, ReturnType<typeof prepare>>();

function prepare(core: Core) {
  const q = core.sqlite;
  return {
    byId: q.query<TaskRow, [string]>("SELECT * FROM tasks WHERE id = ?"),
    insert: q.query(`INSERT INTO tasks (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map(() => "?").join(", ")})`),
    /** Multi-row event inserts by row count (1..EVENT_ROWS), made when first needed. */
    insertEvents: [] as ReturnType<typeof q.query>[],
    /** A transaction around any function, made once (run with .immediate(fn)). */
    tx: q.transaction((fn: () => TaskChange) => fn()),
    /** UPDATE statements by the list of columns they set (a change writes only what it changed). */
    updates: new Map<string, ReturnType<typeof q.query>>(),
    artifacts: q.query<{ name: string; content_type: string; size: number; created_at: string }, [string]>(
      "SELECT name, content_type, size, created_at FROM artifacts WHERE task_id = ? ORDER BY name",
    ),
  };
}

export function taskStatements(core: Core) {
  let s = statements.get(core);
  if (!s) statements.set(core, (s = prepare(core)));
  return s;
}

export function artifactsOf(core: Core, taskId: string): ArtifactInfo[] {
  return taskStatements(core)
    .artifacts.all(taskId)
    .map((a) => ({ name: a.name, contentType: a.content_type, size: a.size, createdAt: a.created_at }));
}

/** A task of this org, or null (another org's task is as good as missing). */
export function findTask(core: Core, orgId: string, taskId: string): TaskRow | null {
  const row = taskStatements(core).byId.get(taskId);
  return row && row.org_id === orgId ? row : null;
}

/** Rows per multi-row event INSERT: a worker's batch of events is one statement, not one per event. */
const EVENT_ROWS = 16;

function insertEvents(core: Core, rows: number) {
  const s = taskStatements(core);
  let q = s.insertEvents[rows];
  if (!q) {
    const values = Array.from({ length: rows }, () => "(?, ?, ?, ?, ?, ?, ?, ?)").join(", ");
    q = s.insertEvents[rows] = core.sqlite.query(`INSERT INTO task_events (task_id, seq, type, at, actor, data, attempt, worker_seq) VALUES ${values}`);
  }
  return q;
}

function writeEvents(core: Core, taskId: string, firstSeq: number, inputs: EventInput[], at: string): TaskEvent[] {
  const params: (string | number | null)[] = [];
  const written = inputs.map((e, i) => {
    const seq = firstSeq + i;
    params.push(taskId, seq, e.type, at, e.actor ? JSON.stringify(e.actor) : null, JSON.stringify(e.data ?? null), e.attempt ?? null, e.workerSeq ?? null);
    return { seq, type: e.type, at, ...(e.actor ? { actor: e.actor } : {}), data: e.data ?? null };
  });
  for (let i = 0; i < inputs.length; i += EVENT_ROWS) {
    const rows = Math.min(EVENT_ROWS, inputs.length - i);
    insertEvents(core, rows).run(...params.slice(i * 8, (i + rows) * 8));
  }
  return written;
}

/** Inserts a new task with its first events. Call inside a transaction; publish the result after commit. */
export function txInsertTask(core: Core, row: Omit<TaskRow, "last_seq" | "created_at" | "updated_at">, events: EventInput[]): TaskChange {
  const now = iso();
  const full: TaskRow = { ...row, last_seq: events.length, created_at: now, updated_at: now };
  taskStatements(core).insert.run(...COLUMNS.map((c) => full[c] as string | number | null));
  const written = writeEvents(core, full.id, 1, events, now);
  const change = { before: null, after: full, events: written };
  for (const hook of core.taskHooks) core.store.sync(hook(change));
  return change;
}

/**
 * Changes a task inside the caller's transaction. `decide` sees the current row and returns the
 * patch and events, or throws (e.g. invalid_transition) to change nothing.
 */
export function txChangeTask(
  core: Core,
  orgId: string | null,
  taskId: string,
  decide: (row: TaskRow) => { patch?: TaskPatch; events: EventInput[]; touch?: boolean },
): TaskChange {
  const s = taskStatements(core);
  const before = s.byId.get(taskId);
  if (!before || (orgId !== null && before.org_id !== orgId)) throw notFound("task");
  const { patch = {}, events, touch = false } = decide(before);
  // `touch`: the record changed outside the row (e.g. its artifacts list), so updatedAt moves too.
  const changed = touch || Object.keys(patch).length > 0;
  const now = iso();
  // updatedAt moves strictly forward on every change (two changes in one millisecond stay
  // distinguishable): publishChanges and polling clients tell a record change by it.
  const updatedAt = now > before.updated_at ? now : iso(Date.parse(before.updated_at) + 1);
  const after: TaskRow = { ...before, ...patch, last_seq: before.last_seq + events.length, updated_at: changed ? updatedAt : before.updated_at };
  if (!changed && events.length === 0) return { before, after, events: [] };
  // Only the columns that changed: SQLite rewrites an index whenever its column is SET, even to the
  // same value, so a full-row update paid for the status and worker indexes on every event batch.
  // The patch's keys are TaskRow column names (typed, never from a request).
  const columns: string[] = [];
  const values: (string | number | null)[] = [];
  for (const c of [...Object.keys(patch), "last_seq", "updated_at"] as (keyof TaskRow)[]) {
    if (after[c] !== before[c] && !columns.includes(c)) {
      columns.push(c);
      values.push(after[c] as string | number | null);
    }
  }
  const key = columns.join(",");
  let update = s.updates.get(key);
  if (!update) s.updates.set(key, (update = core.sqlite.query(`UPDATE tasks SET ${columns.map((c) => `${c} = ?`).join(", ")} WHERE id = ?`)));
  update.run(...values, taskId);
  const written = writeEvents(core, taskId, before.last_seq + 1, events, now);
  const change = { before, after, events: written };
  if (changed) for (const hook of core.taskHooks) core.store.sync(hook(change));
  return change;
}

/** txChangeTask in its own IMMEDIATE transaction, published after commit. */
export function changeTask(core: Core, orgId: string | null, taskId: string, decide: Parameters<typeof txChangeTask>[3]): TaskChange {
  const change = taskStatements(core).tx.immediate(() => txChangeTask(core, orgId, taskId, decide));
  publishChanges(core, [change]);
  return change;
}

/** Live updates and after-commit listeners for committed changes. */
export function publishChanges(core: Core, changes: TaskChange[]) {
  const recordChanged = (c: TaskChange) => c.before === null || c.after.updated_at !== c.before.updated_at;
  // Messages are built only for changes someone is subscribed to: a CI pipeline creating tasks with
  // no page open pays for no names and no JSON (bench/tasks-create.ts).
  const topicsOf = (c: TaskChange) => [`org:${c.after.org_id}`, `task:${c.after.id}`];
  const heard = new Set(changes.filter((c) => topicsOf(c).some((t) => core.hub.hasSubscribers(t))));
  // The names of every record and actor, one query per kind for the whole batch (a group commit
  // of creates); none for worker log lines (no actor, no record change).
  const names = resolveNames(
    core,
    [...heard].flatMap((c) => [...(recordChanged(c) ? taskRefs(c.after) : []), ...c.events.map((e) => e.actor)]),
  );
  for (const change of changes) {
    if (heard.has(change)) publishOne(core, change, recordChanged(change), topicsOf(change), names);
    if (recordChanged(change)) core.events.emit("task.changed", change);
  }
}

/** The live messages of one change, to the task's org and its own topic. */
function publishOne(core: Core, change: TaskChange, recordChanged: boolean, topics: string[], names: Names) {
  const { after, before, events } = change;
  if (recordChanged) {
    // A new task has no artifacts yet: skip the query on the create hot path.
    const artifacts = before === null ? [] : artifactsOf(core, after.id);
    // A new task has no usage yet either; a changed one shows what the readers show.
    const extras = before === null ? {} : decorations(core, [after])(after);
    const message = JSON.stringify({ type: "task.updated", orgId: after.org_id, task: { ...toTaskRecord(after, artifacts, names), ...extras } });
    for (const t of topics) core.hub.publish(t, message);
  }
  for (const event of events) {
    const message = JSON.stringify({ type: "task.event", orgId: after.org_id, taskId: after.id, event: namedEvent(event, names) });
    for (const t of topics) core.hub.publish(t, message);
  }
}
