import { sqliteTable, text, integer, real, blob, primaryKey, index, uniqueIndex } from "drizzle-orm/sqlite-core";
import { sql } from "drizzle-orm";
import { orgs } from "./identity";

export const projects = sqliteTable(
  "projects",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    knowledge: text("knowledge").notNull().default(""),
    policy: text("policy", { mode: "json" }).$type<Record<string, unknown>>().notNull().default({}),
    archived: integer("archived", { mode: "boolean" }).notNull().default(false),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    index("projects_org").on(t.orgId, t.id),
    // Names are unique among an org's live projects; archived ones free their name.
    uniqueIndex("projects_org_name_live").on(t.orgId, t.name).where(sql`archived = 0`),
  ],
);

export const repositories = sqliteTable(
  "repositories",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    projectId: text("project_id").notNull().references(() => projects.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    name: text("name").notNull(),
    branch: text("branch").notNull().default("main"),
    primary: integer("is_primary", { mode: "boolean" }).notNull().default(false),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    index("repositories_project").on(t.projectId),
    uniqueIndex("repositories_project_url").on(t.projectId, t.url),
    uniqueIndex("repositories_one_primary").on(t.projectId).where(sql`is_primary = 1`),
  ],
);

export type TaskStatus = "queued" | "running" | "paused" | "needs_input" | "needs_approval" | "completed" | "failed" | "cancelled";
export type Priority = "LOW" | "MEDIUM" | "HIGH" | "URGENT";
export type TaskKind = "task" | "review" | "plan";

export const tasks = sqliteTable(
  "tasks",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    projectId: text("project_id").notNull().references(() => projects.id),
    title: text("title").notNull(),
    prompt: text("prompt").notNull(),
    priority: text("priority").$type<Priority>().notNull(),
    // Numeric rank of priority (URGENT 3 .. LOW 0) so the queue orders by an index.
    priorityRank: integer("priority_rank").notNull(),
    kind: text("kind").$type<TaskKind>().notNull(),
    review: text("review", { mode: "json" }).$type<{ base: string; head: string } | null>(),
    status: text("status").$type<TaskStatus>().notNull(),
    // The state a paused task returns to on resume.
    pausedFrom: text("paused_from").$type<TaskStatus | null>(),
    attempt: integer("attempt").notNull().default(0),
    // How the next attempt starts: retry continues the previous attempt's work, restart starts fresh.
    runMode: text("run_mode").$type<"fresh" | "continue">().notNull().default("fresh"),
    workerId: text("worker_id"),
    // Fences worker writes: only the holder of the current attempt's lease may write.
    leaseTokenHash: text("lease_token_hash"),
    parentId: text("parent_id"),
    // Position in the parent plan's task list: (parent_id, plan_index) is unique, which makes apply-plan idempotent.
    planIndex: integer("plan_index"),
    createdByType: text("created_by_type").$type<"user" | "token" | "integration" | "plan" | "app">().notNull(),
    createdById: text("created_by_id").notNull(),
    summary: text("summary"),
    // What an ordinary task changed: {files, additions, deletions, branch, commit, base, pushed}.
    changes: text("changes", { mode: "json" }).$type<Record<string, unknown> | null>(),
    needs: text("needs", { mode: "json" }).$type<{ kind: "input" | "approval"; message: string } | null>(),
    plan: text("plan", { mode: "json" }).$type<{ tasks: unknown[] } | null>(),
    source: text("source", { mode: "json" }).$type<Record<string, unknown> | null>(),
    // The agent the task asked for (claude, codex, exec); null: the project's preferred one, or any.
    agent: text("agent"),
    // The task's own cost allowance once a person approved going over budget; null: the project's perTaskUsd.
    budgetUsd: real("budget_usd"),
    // The pull request at GitHub that holds the task's result (or that a review task reviewed).
    pullRequest: text("pull_request", { mode: "json" }).$type<Record<string, unknown> | null>(),
    lastSeq: integer("last_seq").notNull().default(0),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    startedAt: text("started_at"),
    finishedAt: text("finished_at"),
  },
  (t) => [
    index("tasks_org").on(t.orgId, t.id),
    index("tasks_org_status").on(t.orgId, t.status, t.id),
    index("tasks_org_project").on(t.orgId, t.projectId, t.id),
    index("tasks_org_kind").on(t.orgId, t.kind, t.id),
    // Partial: most tasks have no parent, and an index a create need not touch is a write saved.
    index("tasks_org_parent").on(t.orgId, t.parentId, t.id).where(sql`parent_id IS NOT NULL`),
    // The queue of an org, a priority at a time, oldest first (dispatcher.ts reads it by rank: an
    // index cannot serve ORDER BY rank DESC, id ASC whole, and a sort would read every queued task).
    index("tasks_queue").on(t.orgId, t.priorityRank, t.id).where(sql`status = 'queued'`),
    // The attempts a worker holds (recovery when it goes offline or is revoked).
    index("tasks_worker_held").on(t.workerId).where(sql`status IN ('running', 'paused', 'needs_input', 'needs_approval')`),
    uniqueIndex("tasks_plan_child").on(t.parentId, t.planIndex).where(sql`parent_id IS NOT NULL`),
  ],
);

export const taskEvents = sqliteTable(
  "task_events",
  {
    taskId: text("task_id").notNull().references(() => tasks.id, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    type: text("type").notNull(),
    at: text("at").notNull(),
    actor: text("actor", { mode: "json" }).$type<{ type: string; id: string } | null>(),
    data: text("data", { mode: "json" }).$type<unknown>(),
    // Events a worker sends carry its own per-attempt seq; (task, attempt, worker seq) dedupes resends.
    attempt: integer("attempt"),
    workerSeq: integer("worker_seq"),
  },
  (t) => [
    primaryKey({ columns: [t.taskId, t.seq] }),
    uniqueIndex("task_events_worker_seq").on(t.taskId, t.attempt, t.workerSeq).where(sql`worker_seq IS NOT NULL`),
  ],
);

export const artifacts = sqliteTable(
  "artifacts",
  {
    taskId: text("task_id").notNull().references(() => tasks.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    contentType: text("content_type").notNull(),
    size: integer("size").notNull(),
    etag: text("etag").notNull(),
    attempt: integer("attempt").notNull().default(0),
    createdAt: text("created_at").notNull(),
    /** Its body in artifact_bodies (PostgreSQL); null on SQLite, where the body is a file. */
    bodyId: text("body_id"),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.name] })],
);

/**
 * Artifact bodies kept in the database, on PostgreSQL, where every server must read what any
 * server stored (on SQLite they are files under <dataDir>/artifacts and these tables stay empty).
 * An upload writes its chunks first, each in a short write of its own, then records the artifact
 * pointing at its body and marks the body stored; a body never stored is an upload in progress or
 * one that died with its server.
 */
export const artifactBodies = sqliteTable(
  "artifact_bodies",
  {
    id: text("id").primaryKey(),
    taskId: text("task_id").notNull().references(() => tasks.id, { onDelete: "cascade" }),
    stored: integer("stored").notNull().default(0),
    /** ms */
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("artifact_bodies_task").on(t.taskId), index("artifact_bodies_unstored").on(t.createdAt).where(sql`stored = 0`)],
);

export const artifactChunks = sqliteTable(
  "artifact_chunks",
  {
    bodyId: text("body_id").notNull().references(() => artifactBodies.id, { onDelete: "cascade" }),
    n: integer("n").notNull(),
    data: blob("data", { mode: "buffer" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.bodyId, t.n] })],
);

/**
 * What agents used, per attempt and UTC day: a worker reports an attempt's cumulative usage, the
 * server adds the difference to the row of the day it arrives, so a task's usage is the sum of its
 * rows and a project's day is the sum of that day's rows.
 */
export const taskUsage = sqliteTable(
  "task_usage",
  {
    taskId: text("task_id").notNull().references(() => tasks.id, { onDelete: "cascade" }),
    attempt: integer("attempt").notNull(),
    day: text("day").notNull(),
    orgId: text("org_id").notNull(),
    projectId: text("project_id").notNull(),
    inputTokens: integer("input_tokens").notNull().default(0),
    outputTokens: integer("output_tokens").notNull().default(0),
    cacheReadTokens: integer("cache_read_tokens").notNull().default(0),
    cacheWriteTokens: integer("cache_write_tokens").notNull().default(0),
    costUsd: real("cost_usd").notNull().default(0),
    model: text("model"),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.attempt, t.day] }), index("task_usage_project_day").on(t.projectId, t.day)],
);
