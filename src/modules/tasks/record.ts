// The task row as SQLite returns it, and the record the API shows.
import type { Priority, TaskKind, TaskStatus } from "../../db/schema";
import type { TaskChanges } from "../../protocol/requests";
import { nameOf, type Names } from "./names";
import type { UsageTotals } from "../usage/service";

export interface TaskRow {
  id: string;
  org_id: string;
  project_id: string;
  title: string;
  prompt: string;
  priority: Priority;
  priority_rank: number;
  kind: TaskKind;
  review: string | null;
  status: TaskStatus;
  paused_from: TaskStatus | null;
  attempt: number;
  run_mode: "fresh" | "continue";
  worker_id: string | null;
  lease_token_hash: string | null;
  parent_id: string | null;
  plan_index: number | null;
  created_by_type: "user" | "token" | "integration" | "plan" | "app";
  created_by_id: string;
  summary: string | null;
  changes: string | null;
  needs: string | null;
  plan: string | null;
  source: string | null;
  agent: string | null;
  budget_usd: number | null;
  pull_request: string | null;
  last_seq: number;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
}

/** The pull request holding a task's result, or the one a review task reviewed (its review's link in reviewUrl). */
export interface PullRequestInfo {
  number: number;
  url: string;
  state: "open" | "closed" | "merged";
  headBranch: string;
  repository: string;
  draft?: boolean;
  reviewUrl?: string;
}

export interface ArtifactInfo {
  name: string;
  contentType: string;
  size: number;
  createdAt: string;
  attempt: number;
}

export interface TaskEvent {
  seq: number;
  type: string;
  at: string;
  /** Stored as {type, id}; the name is added when the event is read or published. */
  actor?: { type: string; id: string; name?: string | null };
  data: unknown;
}

/** The event as the API shows it: its actor named. */
export function namedEvent(e: TaskEvent, names: Names): TaskEvent {
  return e.actor ? { ...e, actor: { type: e.actor.type, id: e.actor.id, name: nameOf(names, e.actor.type, e.actor.id) } } : e;
}

export const PRIORITY_RANK: Record<Priority, number> = { LOW: 0, MEDIUM: 1, HIGH: 2, URGENT: 3 };

const json = <T>(text: string | null): T | null => (text === null ? null : (JSON.parse(text) as T));

/** `names` must hold the row's taskRefs (src/modules/tasks/names.ts). */
export function toTaskRecord(row: TaskRow, artifacts: ArtifactInfo[], names: Names) {
  return {
    id: row.id,
    orgId: row.org_id,
    projectId: row.project_id,
    title: row.title,
    prompt: row.prompt,
    priority: row.priority,
    kind: row.kind,
    review: json<{ base: string; head: string }>(row.review),
    status: row.status,
    attempt: row.attempt,
    workerId: row.worker_id,
    worker: row.worker_id ? { id: row.worker_id, name: nameOf(names, "worker", row.worker_id) } : null,
    parentId: row.parent_id,
    createdBy: { type: row.created_by_type, id: row.created_by_id, name: nameOf(names, row.created_by_type, row.created_by_id) },
    summary: row.summary,
    changes: json<TaskChanges>(row.changes ?? null),
    needs: json<{ kind: "input" | "approval" | "budget"; message: string; costUsd?: number; allowanceUsd?: number | null }>(row.needs),
    plan: json<{ tasks: unknown[] }>(row.plan),
    source: json<Record<string, unknown>>(row.source),
    pullRequest: json<PullRequestInfo>(row.pull_request ?? null),
    artifacts,
    agent: row.agent,
    // Filled by the readers that know them (list.ts decorate): the record alone cannot.
    usage: null as UsageTotals | null,
    allowanceUsd: null as number | null,
    waitingReason: null as string | null,
    failureReason: null as string | null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
  };
}

export type TaskRecord = ReturnType<typeof toTaskRecord>;

/** A task_events row as the queries select it (seq, type, at, actor, data). */
export interface EventRow {
  seq: number;
  type: string;
  at: string;
  actor: string | null;
  data: string | null;
}

/** The event a task_events row stores (actor and data are JSON text there). */
export const eventOfRow = (e: EventRow): TaskEvent => ({
  seq: e.seq,
  type: e.type,
  at: e.at,
  ...(e.actor ? { actor: JSON.parse(e.actor) } : {}),
  data: e.data === null ? null : JSON.parse(e.data),
});
