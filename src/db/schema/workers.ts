import { sqliteTable, text, integer, primaryKey, index, uniqueIndex } from "drizzle-orm/sqlite-core";
import { orgs } from "./identity";
import { projects, repositories } from "./tasks";

export interface ToolInfo {
  name: string;
  version: string | null;
}

export interface AgentInfo extends ToolInfo {
  /** exec only: the program its command line starts. */
  command?: string;
}

/**
 * A paired machine. Online/offline is not stored: it follows from the live socket and
 * lastSeenAt; what is stored is whether it was approved and whether it was revoked.
 */
export const workers = sqliteTable(
  "workers",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    hostname: text("hostname").notNull().default(""),
    labels: text("labels", { mode: "json" }).$type<string[]>().notNull().default([]),
    // {projects?: string[]}: when set, the worker only takes tasks of these projects.
    policy: text("policy", { mode: "json" }).$type<Record<string, unknown>>().notNull().default({}),
    // SHA-256 of the aow_ credential; the value itself is shown to the worker once.
    credentialHash: text("credential_hash").notNull().unique(),
    approvedAt: text("approved_at"),
    approvedBy: text("approved_by"),
    revokedAt: text("revoked_at"),
    pairedBy: text("paired_by"),
    pairedFromIp: text("paired_from_ip"),
    tools: text("tools", { mode: "json" }).$type<ToolInfo[]>().notNull().default([]),
    agents: text("agents", { mode: "json" }).$type<AgentInfo[]>().notNull().default([]),
    providers: text("providers", { mode: "json" }).$type<string[]>().notNull().default([]),
    version: text("version"),
    capacity: integer("capacity").notNull().default(1),
    lastSeenAt: text("last_seen_at"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("workers_org").on(t.orgId, t.id)],
);

/**
 * Messages for a worker that was away when they were sent (controls such as a person's input,
 * readiness requests), in order, until its next hello. In the database so that a restart of the
 * server does not lose them. At most 100 per worker are kept.
 */
export const workerMail = sqliteTable(
  "worker_mail",
  {
    id: integer("id").primaryKey({ autoIncrement: true }),
    workerId: text("worker_id").notNull().references(() => workers.id, { onDelete: "cascade" }),
    message: text("message").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("worker_mail_worker").on(t.workerId, t.id)],
);

/** What a worker has in its workspace of a project's repositories (a clone it was asked for, or found). */
export const workerRepositories = sqliteTable(
  "worker_repositories",
  {
    workerId: text("worker_id").notNull().references(() => workers.id, { onDelete: "cascade" }),
    repositoryId: text("repository_id").notNull().references(() => repositories.id, { onDelete: "cascade" }),
    orgId: text("org_id").notNull(),
    status: text("status").$type<"cloning" | "cloned" | "failed">().notNull(),
    path: text("path"),
    error: text("error"),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.workerId, t.repositoryId] }), index("worker_repositories_repository").on(t.repositoryId)],
);

/** A git repository seen on workers that belongs to no project, one row per org and remote. */
export const discoveredRepositories = sqliteTable(
  "discovered_repositories",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    url: text("url").notNull(),
    // Remote URL normalised (host/path, no scheme, user or .git) so clones of one remote are one row.
    normalizedUrl: text("normalized_url").notNull(),
    name: text("name").notNull(),
    branch: text("branch"),
    status: text("status").$type<"new" | "accepted" | "dismissed">().notNull(),
    sightings: text("sightings", { mode: "json" }).$type<{ workerId: string; path: string; at: string }[]>().notNull().default([]),
    repositoryId: text("repository_id"),
    firstSeenAt: text("first_seen_at").notNull(),
    lastSeenAt: text("last_seen_at").notNull(),
  },
  (t) => [uniqueIndex("discovered_org_url").on(t.orgId, t.normalizedUrl), index("discovered_org_status").on(t.orgId, t.status, t.id)],
);

export interface ReadinessCheck {
  id: string;
  passed: boolean;
  detail: string;
}

export const readinessRuns = sqliteTable(
  "readiness_runs",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    projectId: text("project_id").notNull().references(() => projects.id, { onDelete: "cascade" }),
    repositoryId: text("repository_id").notNull(),
    workerId: text("worker_id").notNull(),
    status: text("status").$type<"queued" | "running" | "completed" | "failed">().notNull(),
    score: integer("score"),
    checks: text("checks", { mode: "json" }).$type<ReadinessCheck[]>(),
    report: text("report"),
    error: text("error"),
    requestedBy: text("requested_by", { mode: "json" }).$type<{ type: string; id: string }>(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    finishedAt: text("finished_at"),
  },
  (t) => [index("readiness_project").on(t.projectId, t.id), index("readiness_worker").on(t.workerId, t.status)],
);
