import { sqliteTable, text, integer, primaryKey, index, uniqueIndex } from "drizzle-orm/sqlite-core";

export const users = sqliteTable("users", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique(),
  name: text("name").notNull().default(""),
  passwordHash: text("password_hash").notNull(),
  isAdmin: integer("is_admin", { mode: "boolean" }).notNull().default(false),
  totpSecretSealed: text("totp_secret_sealed"),
  totpEnabled: integer("totp_enabled", { mode: "boolean" }).notNull().default(false),
  // Last accepted TOTP time step: a code of this step or earlier is refused (replay).
  totpLastStep: integer("totp_last_step").notNull().default(0),
  createdAt: text("created_at").notNull(),
  updatedAt: text("updated_at").notNull(),
});

export const recoveryCodes = sqliteTable(
  "recovery_codes",
  {
    userId: text("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    codeHash: text("code_hash").notNull(),
    usedAt: text("used_at"),
  },
  (t) => [primaryKey({ columns: [t.userId, t.codeHash] })],
);

export const orgs = sqliteTable("orgs", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  requireWorkerApproval: integer("require_worker_approval", { mode: "boolean" }).notNull().default(false),
  createdAt: text("created_at").notNull(),
  updatedAt: text("updated_at").notNull(),
});

export const memberships = sqliteTable(
  "memberships",
  {
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    userId: text("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    role: text("role", { enum: ["owner", "admin", "member", "viewer"] }).notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.orgId, t.userId] }), index("memberships_user").on(t.userId)],
);

/** A sign-in: the family of refresh tokens and access tokens it issued. */
export const sessions = sqliteTable(
  "sessions",
  {
    id: text("id").primaryKey(),
    userId: text("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    client: text("client").notNull(), // web | cli | device
    revokedAt: text("revoked_at"),
    revokedReason: text("revoked_reason"),
    createdAt: text("created_at").notNull(),
    lastUsedAt: text("last_used_at").notNull(),
  },
  (t) => [index("sessions_user").on(t.userId)],
);

export const refreshTokens = sqliteTable(
  "refresh_tokens",
  {
    tokenHash: text("token_hash").primaryKey(),
    sessionId: text("session_id").notNull().references(() => sessions.id, { onDelete: "cascade" }),
    usedAt: text("used_at"),
    expiresAt: integer("expires_at").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("refresh_tokens_session").on(t.sessionId)],
);

/**
 * RFC 8628 grants: device sign-in (kind signin) and worker pairing (kind pairing).
 * The device code is stored hashed; the user code is stored normalised (no dash, upper case).
 */
export const deviceGrants = sqliteTable(
  "device_grants",
  {
    id: text("id").primaryKey(),
    kind: text("kind", { enum: ["signin", "pairing"] }).notNull(),
    deviceCodeHash: text("device_code_hash").notNull().unique(),
    userCode: text("user_code").notNull(),
    status: text("status", { enum: ["pending", "approved", "denied", "consumed"] }).notNull(),
    clientName: text("client_name"),
    // pairing: what the worker said about itself
    workerName: text("worker_name"),
    hostname: text("hostname"),
    labels: text("labels", { mode: "json" }).$type<string[]>(),
    requestIp: text("request_ip"),
    intervalSec: integer("interval_sec").notNull(),
    lastPolledAt: integer("last_polled_at"),
    expiresAt: integer("expires_at").notNull(),
    decidedBy: text("decided_by"),
    orgId: text("org_id"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [uniqueIndex("device_grants_user_code").on(t.userCode)],
);

export const apiTokens = sqliteTable(
  "api_tokens",
  {
    id: text("id").primaryKey(),
    userId: text("user_id").notNull().references(() => users.id, { onDelete: "cascade" }),
    orgId: text("org_id").notNull().references(() => orgs.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    role: text("role", { enum: ["owner", "admin", "member", "viewer"] }).notNull(),
    tokenHash: text("token_hash").notNull().unique(),
    lastFour: text("last_four").notNull(),
    expiresAt: text("expires_at"),
    lastUsedAt: text("last_used_at"),
    createdAt: text("created_at").notNull(),
  },
  (t) => [index("api_tokens_user").on(t.userId)],
);

/**
 * The one-time setup tokens of the servers started while no user exists (SHA-256 hashes; the token
 * is only in the setup link its server logged): any server on the database accepts any of them.
 * Emptied when the first user is created; a server that stops removes its own.
 */
export const setupTokens = sqliteTable("setup_tokens", {
  tokenHash: text("token_hash").primaryKey(),
  serverId: text("server_id").notNull(),
  createdAt: text("created_at").notNull(),
});
