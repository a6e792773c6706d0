// Integrations (SPEC §9): inbound webhooks that create tasks, and the outbox of signed callbacks.
import { sqliteTable, text, integer, primaryKey, index, uniqueIndex } from "drizzle-orm/sqlite-core";
import { sql } from "drizzle-orm";
import { orgs } from "./identity";
import { projects, tasks } from "./tasks";

export type IntegrationKind = "github" | "gitlab" | "signed_json";

export const integrations = sqliteTable(
  "integrations",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    kind: text("kind").$type<IntegrationKind>().notNull(),
    name: text("name").notNull(),
    projectId: text("project_id").notNull().references(() => projects.id),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    callbackUrl: text("callback_url"),
    // Set when the receiver answered 410 Gone; setting a callback URL again clears it.
    callbackDisabledAt: text("callback_disabled_at"),
    config: text("config", { mode: "json" }).$type<{ label?: string; command?: string }>().notNull().default({}),
    // The secret is needed in clear to verify HMACs, so it is sealed (AES-GCM), not hashed.
    secretSealed: text("secret_sealed").notNull(),
    secretLast4: text("secret_last4").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [index("integrations_org").on(t.orgId, t.id)],
);

/**
 * What already made a task at an integration: delivery ids and items (an issue labeled, a comment).
 * The primary key is the dedupe: inserted in the task's transaction, a second insert fails.
 */
export const inboundKeys = sqliteTable(
  "inbound_keys",
  {
    integrationId: text("integration_id").notNull().references(() => integrations.id, { onDelete: "cascade" }),
    key: text("key").notNull(),
    taskId: text("task_id").notNull().references(() => tasks.id, { onDelete: "cascade" }),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.integrationId, t.key] })],
);

/** The completion webhook plugin: one per org, for every task of the org or of one project. */
export const plugins = sqliteTable(
  "plugins",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    kind: text("kind").$type<"completion_webhook">().notNull(),
    url: text("url").notNull(),
    projectId: text("project_id").references(() => projects.id),
    enabled: integer("enabled", { mode: "boolean" }).notNull().default(true),
    secretSealed: text("secret_sealed").notNull(),
    secretLast4: text("secret_last4").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [uniqueIndex("plugins_org_kind").on(t.orgId, t.kind)],
);

export type DeliveryStatus = "pending" | "delivering" | "succeeded" | "failed";

/**
 * The outbox: one row per callback, written in the transaction of the task change that caused it.
 * The row id is the X-Svc-Delivery value, stable across retries and redeliveries.
 */
export const deliveries = sqliteTable(
  "deliveries",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    targetType: text("target_type").$type<"integration" | "plugin">().notNull(),
    // An integration or plugin id; no foreign key, so the log outlives a deleted target.
    targetId: text("target_id").notNull(),
    taskId: text("task_id").notNull(),
    event: text("event").$type<"completed" | "failed" | "needs_attention">().notNull(),
    // The JSON body, frozen when the row is written (the task as it was at that change).
    payload: text("payload").notNull(),
    status: text("status").$type<DeliveryStatus>().notNull(),
    // While delivering: the claim of the relay sending it (a try's result is recorded only under
    // it), and next_attempt_at is when the claim runs out (another server's relay may take it then).
    claim: text("claim"),
    attempts: integer("attempts").notNull().default(0),
    // Attempts in the current round: drives the backoff; a redelivery starts a new round.
    roundAttempts: integer("round_attempts").notNull().default(0),
    nextAttemptAt: integer("next_attempt_at").notNull(),
    lastStatusCode: integer("last_status_code"),
    lastError: text("last_error"),
    lastLatencyMs: integer("last_latency_ms"),
    lastAttemptAt: text("last_attempt_at"),
    deliveredAt: text("delivered_at"),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    index("deliveries_due").on(t.nextAttemptAt).where(sql`status = 'pending'`),
    index("deliveries_in_flight").on(t.id).where(sql`status = 'delivering'`),
    index("deliveries_target").on(t.targetId, t.id),
  ],
);

/**
 * Each try of a delivery: when, the receiver's status code or the error, the latency. Bounded: the
 * relay keeps the last DELIVERY_TRIES_KEPT per delivery (the delivery row keeps the total count).
 */
export const deliveryTries = sqliteTable(
  "delivery_tries",
  {
    deliveryId: text("delivery_id").notNull().references(() => deliveries.id, { onDelete: "cascade" }),
    // 1, 2, 3... across rounds: the delivery's `attempts` after this try.
    attempt: integer("attempt").notNull(),
    at: text("at").notNull(),
    outcome: text("outcome").$type<"succeeded" | "retrying" | "failed">().notNull(),
    statusCode: integer("status_code"),
    error: text("error"),
    latencyMs: integer("latency_ms"),
  },
  (t) => [primaryKey({ columns: [t.deliveryId, t.attempt] })],
);
