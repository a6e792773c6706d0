// The one way a task is written. Every change is a program run in one write transaction that
// reads the row, applies the change, allocates the next timeline seqs (no gaps: writers are
// serialized), runs core.taskHooks, and commits; live updates go out after the commit.
import type { Core } from "../../server/core";
import { notFound } from "../../server/errors";
import type { Actor } from "../auth/principal";
import { iso } from "../../lib/time";
import { all, get, run, type Q } from "../../db/query";
import { eventOfRow, namedEvent, toTaskRecord, type ArtifactInfo, type EventRow, type TaskEvent, type TaskRecord, type TaskRow } from "./record";
import { resolveNames, taskRefs, type Names } from "./names";
import { decorations } from "./decorate";
import { waitingReason } from "../workers/waiting";

/** Who an event is by: a person (or their token), a worker, an integration, the GitHub app; none for the server's own. */
export type EventActor = Actor | { type: "worker" | "integration" | "app"; id: string };

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

const SELECT_TASK = "SELECT * FROM tasks WHERE id = ?";
const INSERT_TASK = `INSERT INTO tasks (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map(() => "?").join(", ")})`;
const SELECT_ARTIFACTS = "SELECT name, content_type, size, created_at, attempt FROM artifacts WHERE task_id = ? ORDER BY name";

/** Rows per multi-row event INSERT: a worker's batch of events is one statement, not one per event. */
const EVENT_ROWS = 16;
/** The event INSERT of 1..EVENT_ROWS rows (index rows - 1): a bounded set of statements. */
const INSERT_EVENTS = Array.from(
  { length: EVENT_ROWS },
  (_, i) => `INSERT INTO task_events (task_id, seq, type, at, actor, data, attempt, worker_seq) VALUES ${Array.from({ length: i + 1 }, () => "(?, ?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
);
/** UPDATE texts by the list of columns they set, built once per list (a change writes only what it changed). */
const UPDATES = new Map<string, string>();

/** A task by id, whatever its org (the caller checked access another way, e.g. by lease). */
export function* taskById(_core: Core, taskId: string): Q<TaskRow | undefined> {
  return yield* get<TaskRow>(SELECT_TASK, taskId);
}

export function* artifactsOf(_core: Core, taskId: string): Q<ArtifactInfo[]> {
  const rows = yield* all<{ name: string; content_type: string; size: number; created_at: string; attempt: number }>(SELECT_ARTIFACTS, taskId);
  return rows.map((a) => ({ name: a.name, contentType: a.content_type, size: a.size, createdAt: a.created_at, attempt: a.attempt }));
}

/** A task of this org, or null (another org's task is as good as missing). */
export function* findTask(core: Core, orgId: string, taskId: string): Q<TaskRow | null> {
  const row = yield* taskById(core, taskId);
  return row && row.org_id === orgId ? row : null;
}

function* writeEvents(taskId: string, firstSeq: number, inputs: EventInput[], at: string): Q<TaskEvent[]> {
  const params: (string | number | null)[] = [];
  const written = inputs.map((e, i) => {
    const seq = firstSeq + i;
    params.push(taskId, seq, e.type, at, e.actor ? JSON.stringify(e.actor) : null, JSON.stringify(e.data ?? null), e.attempt ?? null, e.workerSeq ?? null);
    return { seq, type: e.type, at, ...(e.actor ? { actor: e.actor } : {}), data: e.data ?? null };
  });
  for (let i = 0; i < inputs.length; i += EVENT_ROWS) {
    const rows = Math.min(EVENT_ROWS, inputs.length - i);
    yield* run(INSERT_EVENTS[rows - 1], ...params.slice(i * 8, (i + rows) * 8));
  }
  return written;
}

/** Inserts a new task with its first events. Run it in a write; publish the result after commit. */
export function* txInsertTask(core: Core, row: Omit<TaskRow, "last_seq" | "created_at" | "updated_at">, events: EventInput[]): Q<TaskChange> {
  const now = iso();
  const full: TaskRow = { ...row, last_seq: events.length, created_at: now, updated_at: now };
  yield* run(INSERT_TASK, ...COLUMNS.map((c) => full[c] as string | number | null));
  const written = yield* writeEvents(full.id, 1, events, now);
  const change = { before: null, after: full, events: written };
  for (const hook of core.taskHooks) yield* hook(change);
  return change;
}

/** What a change does to the row it saw: the columns to set and the events to append. */
export interface Decision {
  patch?: TaskPatch;
  events: EventInput[];
  touch?: boolean;
}

/** Decides a change from the current row: plainly, or as a program when deciding reads the database. */
export type Decide = (row: TaskRow) => Decision | Q<Decision>;

const isProgram = (d: Decision | Q<Decision>): d is Q<Decision> => typeof (d as Q<Decision>).next === "function";

/**
 * Changes a task inside the write that runs it. `decide` sees the current row and returns the
 * patch and events, or throws (e.g. invalid_transition) to change nothing.
 */
export function* txChangeTask(core: Core, orgId: string | null, taskId: string, decide: Decide): Q<TaskChange> {
  // Queries are yielded here directly, not through taskById: each level of yield* costs on every
  // query of this hot path.
  const before = yield* get<TaskRow>(SELECT_TASK, taskId);
  if (!before || (orgId !== null && before.org_id !== orgId)) throw notFound("task");
  const decided = decide(before);
  const { patch = {}, events, touch = false } = isProgram(decided) ? yield* decided : decided;
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
  let update = UPDATES.get(key);
  if (!update) UPDATES.set(key, (update = `UPDATE tasks SET ${columns.map((c) => `${c} = ?`).join(", ")} WHERE id = ?`));
  yield* run(update, ...values, taskId);
  const written = events.length > 0 ? yield* writeEvents(taskId, before.last_seq + 1, events, now) : [];
  const change = { before, after, events: written };
  if (changed) for (const hook of core.taskHooks) yield* hook(change);
  return change;
}

/** Runs a task write in its own transaction and publishes it after commit. */
export async function commitChange(core: Core, write: Q<TaskChange>): Promise<TaskChange> {
  const change = await core.store.write(write);
  await publishChanges(core, [change]);
  return change;
}

/** txChangeTask in its own write transaction, published after commit. */
export function changeTask(core: Core, orgId: string | null, taskId: string, decide: Decide): Promise<TaskChange> {
  return commitChange(core, txChangeTask(core, orgId, taskId, decide));
}

/**
 * Publishes committed changes. It never fails: the changes are committed whatever happens to
 * their messages, so a failure is logged. On SQLite it has published when it returns (the store
 * reads synchronously), as the group commit relies on.
 */
export function publishChanges(core: Core, changes: TaskChange[]): Promise<void> {
  // Several servers (PostgreSQL): the others publish to their own subscribers. SQLite pays nothing.
  if (core.sqlite === null) announce(core, changes);
  return core.store.read(publication(core, changes)).catch((error) => {
    core.log.error("publishing task changes failed", { error: String((error as Error)?.stack ?? error) });
  });
}

/** What the live messages of one committed change are made from, on its server or another. */
interface LiveChange {
  after: TaskRow;
  /** A new task: its record has no artifacts and no usage yet, so neither is read. */
  created: boolean;
  /** Its record changed (task.updated), not only its timeline. */
  recordChanged: boolean;
  events: TaskEvent[];
}

const isRecordChange = (c: TaskChange) => c.before === null || c.after.updated_at !== c.before.updated_at;

/** Whether anyone on this server listens to the task: messages are built only for them. */
const heardHere = (core: Core, orgId: string, taskId: string) =>
  core.hub.hasSubscribers(`org:${orgId}`) || core.hub.hasSubscribers(`task:${taskId}`);

/** Live updates and after-commit listeners for committed changes. */
function* publication(core: Core, changes: TaskChange[]): Q<void> {
  // Messages are built only for changes someone is subscribed to: a CI pipeline creating tasks with
  // no page open pays for no names and no JSON (bench/tasks-create.ts).
  const heard = new Map<TaskChange, LiveChange>();
  for (const c of changes) {
    if (heardHere(core, c.after.org_id, c.after.id)) heard.set(c, { after: c.after, created: c.before === null, recordChanged: isRecordChange(c), events: c.events });
  }
  const names = yield* namesOf(core, heard.values());
  for (const change of changes) {
    const live = heard.get(change);
    if (live) yield* publishOne(core, live, names);
    if (isRecordChange(change)) core.events.emit("task.changed", change);
  }
}

/**
 * The names of every record and actor, one query per kind for the whole batch (a group commit of
 * creates); none for worker log lines (no actor, no record change).
 */
function namesOf(core: Core, heard: Iterable<LiveChange>): Q<Names> {
  return resolveNames(core, [...heard].flatMap((c) => [...(c.recordChanged ? taskRefs(c.after) : []), ...c.events.map((e) => e.actor)]));
}

/**
 * The whole record a change's publication built, by the change's row: the answer to the request
 * that made the change is that record (list.ts, taskRecordOf), built once rather than twice.
 */
const published = new WeakMap<TaskRow, TaskRecord>();

export const publishedRecordOf = (row: TaskRow): TaskRecord | undefined => published.get(row);

/**
 * The updatedAt of the newest record of each task published here (bounded: past 10,000 tasks it
 * starts over). A record read before a newer one was published is not to be sent after it: with
 * several servers reads are asynchronous, and a task's record sent again (why it waits) may have
 * been read just before its claim was published.
 */
const newestPublished = new WeakMap<Core, Map<string, string>>();

function notePublished(core: Core, row: TaskRow) {
  let newest = newestPublished.get(core);
  if (!newest) newestPublished.set(core, (newest = new Map()));
  if (newest.size >= 10_000) newest.clear();
  if ((newest.get(row.id) ?? "") < row.updated_at) newest.set(row.id, row.updated_at);
}

/** Whether a newer record of the task than this row's has been published here. */
export const outdated = (core: Core, row: TaskRow): boolean => (newestPublished.get(core)?.get(row.id) ?? "") > row.updated_at;

/** The live messages of one change, to the task's org and its own topic. */
function* publishOne(core: Core, change: LiveChange, names: Names): Q<void> {
  const { after, events } = change;
  const topics = [`org:${after.org_id}`, `task:${after.id}`];
  if (change.recordChanged) {
    // A new task has no artifacts yet: skip the query on the create hot path.
    const artifacts = change.created ? [] : yield* artifactsOf(core, after.id);
    // A new task has no usage yet either, only perhaps a reason to wait (as the create's answer
    // says); a changed one shows what the readers show.
    const extras = change.created ? { waitingReason: yield* waitingReason(core, after) } : (yield* decorations(core, [after]))(after);
    const record = { ...toTaskRecord(after, artifacts, names), ...extras };
    published.set(after, record as TaskRecord);
    notePublished(core, after);
    const message = JSON.stringify({ type: "task.updated", orgId: after.org_id, task: record });
    for (const t of topics) core.hub.publish(t, message);
  }
  for (const event of events) {
    const message = JSON.stringify({ type: "task.event", orgId: after.org_id, taskId: after.id, event: namedEvent(event, names) });
    for (const t of topics) core.hub.publish(t, message);
  }
}

// --- Several servers (PostgreSQL) -----------------------------------------------------------
//
// Each committed change is announced on the bus in one small message (ids and a seq range, never
// rows). Every other server reads what it names and publishes to its own subscribers exactly the
// messages the origin published to its own (publishOne above), so a subscriber on any server gets
// every task.updated and every task.event once. Events are exact: the seq range names rows that
// never change. The record is read on arrival, so a task.updated may show a newer state than the
// change that caused it (the later change's own message follows, and shows the same or newer).
// The "task.changed" listeners (integrations, callbacks, code hosts) write, so they run once, on
// the origin; the other servers' dispatchers hear "task.changedElsewhere" instead.

/** The bus channel of committed task changes. */
const CHANGED = "task.changed";

/** What a change's holder and queue place were before it: what a dispatcher needs of the old row. */
export type TaskBefore = Pick<TaskRow, "status" | "worker_id" | "attempt">;

/** A committed change on the bus: server, org, task, record changed, events' seq range, the row before (null: created). */
type ChangeNotice = {
  from: string;
  o: string;
  t: string;
  r: 0 | 1;
  s: [number, number] | null;
  b: TaskBefore | null;
};

const SELECT_EVENT_RANGE = "SELECT seq, type, at, actor, data FROM task_events WHERE task_id = ? AND seq BETWEEN ? AND ? ORDER BY seq";

/** Sends one notice per change that anyone could hear of. Never throws (the changes have committed). */
function announce(core: Core, changes: TaskChange[]) {
  try {
    for (const c of changes) {
      const recordChanged = isRecordChange(c);
      if (!recordChanged && c.events.length === 0) continue;
      const { before, after, events } = c;
      const notice: ChangeNotice = {
        from: core.instanceId,
        o: after.org_id,
        t: after.id,
        r: recordChanged ? 1 : 0,
        s: events.length > 0 ? [events[0].seq, events[events.length - 1].seq] : null,
        b: before && { status: before.status, worker_id: before.worker_id, attempt: before.attempt },
      };
      core.bus.publish(CHANGED, notice);
    }
  } catch (error) {
    core.log.error("announcing task changes failed", { error: String((error as Error)?.stack ?? error) });
  }
}

/**
 * Hears the other servers' task changes (PostgreSQL; nothing on SQLite). Notices are handled one
 * batch at a time, in the order they arrived, so a subscriber gets each task's messages in order;
 * the notices that arrive while a batch is read make the next batch.
 */
export function relayTaskChanges(core: Core) {
  if (core.sqlite !== null) return;
  let waiting: ChangeNotice[] = [];
  let draining = false;
  const drain = async () => {
    draining = true;
    while (waiting.length > 0) {
      const batch = waiting;
      waiting = [];
      await core.store.read(relayed(core, batch)).catch((error) => {
        core.log.error("relaying task changes failed", { error: String((error as Error)?.stack ?? error) });
      });
    }
    draining = false;
  };
  core.bus.on(CHANGED, (notice: ChangeNotice) => {
    // The bus delivers to the publishing server too: its own changes were published at commit.
    if (notice.from === core.instanceId) return;
    waiting.push(notice);
    if (!draining) void drain();
  });
  // A lost LISTEN connection loses the notices sent meanwhile; NOTIFY keeps none to re-read, so
  // subscribers here may have missed messages (their clients re-read a task on reconnecting).
  core.bus.onReconnect(() => core.log.warn("the bus reconnected: live subscribers here may have missed task changes"));
}

/** Reads what the notices name and publishes it here; the dispatcher hears the record changes. */
function* relayed(core: Core, notices: ChangeNotice[]): Q<void> {
  const rows = new Map<string, TaskRow | undefined>();
  const changes: { notice: ChangeNotice; live: LiveChange; heard: boolean }[] = [];
  for (const notice of notices) {
    const heard = heardHere(core, notice.o, notice.t);
    // Worker log lines nobody here follows cost nothing.
    if (!heard && !notice.r) continue;
    // A batch reads each task once: the row is the newest either way.
    if (!rows.has(notice.t)) rows.set(notice.t, yield* get<TaskRow>(SELECT_TASK, notice.t));
    const after = rows.get(notice.t);
    if (!after) continue;
    const events = heard && notice.s ? (yield* all<EventRow>(SELECT_EVENT_RANGE, notice.t, notice.s[0], notice.s[1])).map(eventOfRow) : [];
    changes.push({ notice, heard, live: { after, created: notice.b === null, recordChanged: notice.r === 1, events } });
  }
  const names = yield* namesOf(core, changes.filter((c) => c.heard).map((c) => c.live));
  for (const { notice, live, heard } of changes) {
    if (heard) yield* publishOne(core, live, names);
    if (notice.r) core.events.emit("task.changedElsewhere", { before: notice.b, after: live.after });
  }
}

