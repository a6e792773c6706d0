// Reading tasks: the list (keyset pages, newest first), one task, and its timeline.
// These are hot paths: raw SQL, one text per filter combination (the store prepares each once).
import type { Core } from "../../server/core";
import { invalid, notFound } from "../../server/errors";
import type { TaskKind, TaskStatus } from "../../db/schema";
import { DEFAULT_LIMIT, decodeCursor, pageFrom } from "./cursor";
import { eventOfRow, namedEvent, toTaskRecord, type ArtifactInfo, type EventRow, type TaskRecord, type TaskRow } from "./record";
import { resolveNames, taskRefs } from "./names";
import { artifactsOf, findTask, publishedRecordOf } from "./store";
import { decorations } from "./decorate";
import { all, type Q } from "../../db/query";

export interface TaskFilters {
  status?: TaskStatus;
  projectId?: string;
  kind?: TaskKind;
  parentId?: string;
}

const FILTERS = [
  ["status", "status"],
  ["projectId", "project_id"],
  ["kind", "kind"],
  ["parentId", "parent_id"],
] as const;

interface ArtifactRow {
  task_id: string;
  name: string;
  content_type: string;
  size: number;
  created_at: string;
  attempt: number;
}


// One statement for any page size: the ids arrive as a JSON array.
const ARTIFACTS_OF_MANY =
  "SELECT task_id, name, content_type, size, created_at, attempt FROM artifacts WHERE task_id IN (SELECT value FROM json_each(?)) ORDER BY task_id, name";
const SELECT_EVENTS = "SELECT seq, type, at, actor, data FROM task_events WHERE task_id = ? AND seq > ? ORDER BY seq LIMIT ?";

/** The list query of each combination of filters (bit i = FILTERS[i] present, bit 4 = cursor). */
const LISTS = Array.from({ length: 32 }, (_, mask) => {
  const where = ["org_id = ?"];
  FILTERS.forEach(([, column], i) => {
    if (mask & (1 << i)) where.push(`${column} = ?`);
  });
  if (mask & 16) where.push("id < ?");
  return `SELECT * FROM tasks WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT ?`;
});

/** Artifacts of several tasks with one query, grouped by task. */
export function* artifactsByTask(_core: Core, ids: string[]): Q<Map<string, ArtifactInfo[]>> {
  const out = new Map<string, ArtifactInfo[]>();
  if (ids.length === 0) return out;
  for (const a of yield* all<ArtifactRow>(ARTIFACTS_OF_MANY, JSON.stringify(ids))) {
    let list = out.get(a.task_id);
    if (!list) out.set(a.task_id, (list = []));
    list.push({ name: a.name, contentType: a.content_type, size: a.size, createdAt: a.created_at, attempt: a.attempt });
  }
  return out;
}

export function* listTasks(core: Core, orgId: string, q: TaskFilters & { limit?: number; cursor?: string }) {
  const limit = q.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(q.cursor, "tsk");
  let mask = 0;
  const args: (string | number)[] = [orgId];
  FILTERS.forEach(([key], i) => {
    const v = q[key];
    if (v !== undefined) {
      mask |= 1 << i;
      args.push(v);
    }
  });
  if (after) {
    mask |= 16;
    args.push(after);
  }
  args.push(limit + 1);
  const probe = yield* all<TaskRow>(LISTS[mask], ...args);
  return pageFrom(probe, limit, (r) => r.id, yield* recordsOf(core, probe.slice(0, limit)));
}

/**
 * How the records of rows already read are built: their artifacts, names and decorations (the
 * org's online workers among them) read once for all of them, as a page or the queued tasks
 * followed live (live/service.ts) need.
 */
export function* recordsOf(core: Core, rows: TaskRow[]): Q<(r: TaskRow) => TaskRecord> {
  const artifacts = yield* artifactsByTask(core, rows.map((r) => r.id));
  const names = yield* resolveNames(core, rows.flatMap(taskRefs));
  const extras = yield* decorations(core, rows);
  return (r) => ({ ...toTaskRecord(r, artifacts.get(r.id) ?? [], names), ...extras(r) });
}


export function* getTask(core: Core, orgId: string, taskId: string): Q<TaskRecord> {
  const row = yield* findTask(core, orgId, taskId);
  if (!row) throw notFound("task");
  return yield* taskRecordOf(core, row);
}

/**
 * The record of a row already read (an action's answer shows the row the action left): the one
 * its change's publication built for live subscribers when there were any, else built here.
 */
export function* taskRecordOf(core: Core, row: TaskRow): Q<TaskRecord> {
  const built = publishedRecordOf(row);
  if (built) return built;
  const artifacts = yield* artifactsOf(core, row.id);
  const names = yield* resolveNames(core, taskRefs(row));
  return { ...toTaskRecord(row, artifacts, names), ...(yield* decorations(core, [row]))(row) };
}

export function* listEvents(core: Core, orgId: string, taskId: string, q: { after?: number; cursor?: string; limit?: number }) {
  const row = yield* findTask(core, orgId, taskId);
  if (!row) throw notFound("task");
  const limit = q.limit ?? DEFAULT_LIMIT;
  // after and cursor are two names for one position: both at once would leave one ignored.
  if (q.after !== undefined && q.cursor !== undefined) {
    throw invalid("give after or cursor, not both", [{ field: "cursor", message: "not with after (they name the same position)" }]);
  }
  const after = q.after ?? cursorSeq(q.cursor);
  const probe = yield* all<EventRow>(SELECT_EVENTS, taskId, after, limit + 1);
  const rows = probe.length > limit ? probe.slice(0, limit) : probe;
  const events = rows.map(eventOfRow);
  const names = yield* resolveNames(core, events.map((e) => e.actor));
  const items = events.map((e) => namedEvent(e, names));
  return { items, nextCursor: probe.length > limit ? String(rows[rows.length - 1].seq) : null };
}

function cursorSeq(cursor: string | undefined): number {
  if (cursor === undefined || cursor === "") return 0;
  if (!/^\d{1,15}$/.test(cursor)) throw invalid("the cursor is not valid", [{ field: "cursor", message: "not a cursor returned by this list" }]);
  return Number(cursor);
}
