// The code-hosting app (SPEC §10): the one GitHub App of this instance, the installations bound to
// organizations, their repositories as last synced, people's own connections, one-use states of
// the browser flows, and the outbox of pull requests and reviews to write at GitHub.
import { sqliteTable, text, integer, index, primaryKey } from "drizzle-orm/sqlite-core";
import { sql } from "drizzle-orm";
import { orgs, users } from "./identity";
import { integrations } from "./integrations";

/**
 * One app per instance (README "Connect GitHub"): the organization that created it owns its
 * webhook integration; any organization may install it. Secrets are sealed (AES-GCM).
 */
export const codehostApps = sqliteTable("codehost_apps", {
  // Always "app": the primary key makes a second app impossible.
  id: text("id").primaryKey(),
  orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
  integrationId: text("integration_id").notNull().references(() => integrations.id),
  appId: integer("app_id").notNull(),
  slug: text("slug").notNull(),
  name: text("name").notNull(),
  htmlUrl: text("html_url").notNull(),
  clientId: text("client_id").notNull(),
  clientSecretSealed: text("client_secret_sealed").notNull(),
  webhookSecretSealed: text("webhook_secret_sealed").notNull(),
  privateKeySealed: text("private_key_sealed").notNull(),
  createdBy: text("created_by").notNull(),
  createdAt: text("created_at").notNull(),
});

export type CodehostStatePurpose = "manifest" | "install" | "user";

/** A browser flow's state: bound to a person and an org, single use (deleted when used), expiring. */
export const codehostStates = sqliteTable("codehost_states", {
  // Only the hash: a leaked database does not let anyone finish someone else's flow.
  stateHash: text("state_hash").primaryKey(),
  purpose: text("purpose").$type<CodehostStatePurpose>().notNull(),
  orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
  userId: text("user_id").notNull(),
  // The manifest flow's integration, made before GitHub knows the app.
  integrationId: text("integration_id"),
  expiresAt: integer("expires_at").notNull(),
});

export const codehostInstallations = sqliteTable(
  "codehost_installations",
  {
    // GitHub's installation id. One installation serves one ao organization.
    id: integer("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    accountLogin: text("account_login").notNull(),
    accountType: text("account_type").notNull(),
    accountId: integer("account_id").notNull(),
    repositorySelection: text("repository_selection").notNull(),
    suspended: integer("suspended", { mode: "boolean" }).notNull().default(false),
    syncedAt: text("synced_at"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("codehost_installations_org").on(t.orgId, t.id)],
);

export const codehostRepositories = sqliteTable(
  "codehost_repositories",
  {
    installationId: integer("installation_id").notNull().references(() => codehostInstallations.id, { onDelete: "cascade" }),
    // GitHub's repository id.
    id: integer("id").notNull(),
    orgId: text("org_id").notNull(),
    fullName: text("full_name").notNull(),
    private: integer("private", { mode: "boolean" }).notNull(),
    cloneUrl: text("clone_url").notNull(),
    htmlUrl: text("html_url").notNull(),
    defaultBranch: text("default_branch").notNull(),
    // normalizeRepoUrl(clone_url): how a project's repository URL finds its installation.
    urlKey: text("url_key").notNull(),
    syncedAt: text("synced_at").notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.installationId, t.id] }),
    index("codehost_repositories_org_name").on(t.orgId, t.fullName),
    index("codehost_repositories_org_url").on(t.orgId, t.urlKey),
  ],
);

/** A person's own GitHub authorization (user-to-server token), sealed. */
export const codehostConnections = sqliteTable("codehost_connections", {
  userId: text("user_id").primaryKey().references(() => users.id, { onDelete: "cascade" }),
  login: text("login").notNull(),
  githubUserId: integer("github_user_id").notNull(),
  tokenSealed: text("token_sealed").notNull(),
  refreshTokenSealed: text("refresh_token_sealed"),
  expiresAt: text("expires_at"),
  createdAt: text("created_at").notNull(),
  updatedAt: text("updated_at").notNull(),
});

export type CodehostJobKind = "open_pull_request" | "post_review";
export type CodehostJobStatus = "pending" | "working" | "done" | "failed";

/** Writes at GitHub that a task's result causes, claimed and retried with backoff (like the callback outbox). */
export const codehostJobs = sqliteTable(
  "codehost_jobs",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    taskId: text("task_id").notNull(),
    kind: text("kind").$type<CodehostJobKind>().notNull(),
    payload: text("payload", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    status: text("status").$type<CodehostJobStatus>().notNull(),
    // While working: the claim of the runner doing it (renewed as it works), and next_attempt_at
    // is when the claim runs out (another server's runner may take it then).
    claim: text("claim"),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    lastError: text("last_error"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    index("codehost_jobs_due").on(t.nextAttemptAt).where(sql`status = 'pending'`),
    // Jobs being worked on, for the look for claims that ran out (a server died mid-job).
    index("codehost_jobs_working").on(t.nextAttemptAt).where(sql`status = 'working'`),
    index("codehost_jobs_task").on(t.taskId, t.kind),
  ],
);
