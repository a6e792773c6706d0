// The API's records the management pages read (SPEC §3, §4, §7-§10), written by hand like
// types.ts: the server's typebox schemas live with server code the bundle must not pull in.
import type { Page, Role } from "./types";
export type { Page };

export interface Repository {
  id: string;
  url: string;
  name: string;
  branch: string;
  primary: boolean;
}
export interface ProjectRecord {
  id: string;
  orgId: string;
  name: string;
  knowledge: string;
  policy: Record<string, unknown>;
  archived: boolean;
  repositories: Repository[];
  createdAt: string;
  updatedAt: string;
}
export interface ReadinessRun {
  runId: string;
  projectId: string;
  repositoryId: string;
  workerId: string;
  status: "queued" | "running" | "completed" | "failed";
  score: number | null;
  checks: { id: string; passed: boolean; detail: string }[];
  report: string | null;
  error: string | null;
  createdAt: string;
  finishedAt: string | null;
}
export interface Discovered {
  id: string;
  url: string;
  name: string;
  branch: string | null;
  workers: { workerId: string; path: string; seenAt: string }[];
  firstSeenAt: string;
  lastSeenAt: string;
}
export interface CloneStatus {
  workerId: string;
  status: "cloning" | "cloned" | "failed";
  path: string | null;
  error: string | null;
  updatedAt: string;
}
export interface UsageAmounts {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
}
export interface ProjectUsage {
  projectId: string;
  from: string;
  to: string;
  totals: UsageAmounts & { tasks: number };
  days: (UsageAmounts & { day: string })[];
}

export type WorkerStatus = "online" | "offline" | "pending_approval" | "revoked";
export interface WorkerRecord {
  id: string;
  orgId: string;
  name: string;
  hostname: string;
  labels: string[];
  policy: Record<string, unknown>;
  status: WorkerStatus;
  tools: { name: string; version: string | null }[];
  agents: { name: string; version: string | null; command?: string }[];
  providers: string[];
  version: string | null;
  capacity: number;
  lastSeenAt: string | null;
  runningTaskIds: string[];
  approvedAt: string | null;
  revokedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export type IntegrationKind = "github" | "gitlab" | "signed_json";
export interface Integration {
  id: string;
  orgId: string;
  kind: IntegrationKind;
  name: string;
  projectId: string;
  enabled: boolean;
  callbackUrl: string | null;
  callbackDisabledAt: string | null;
  config: { label?: string; command?: string };
  hookUrl: string;
  secretLast4: string;
  createdAt: string;
  updatedAt: string;
}
export interface Plugin {
  id: string;
  orgId: string;
  url: string;
  projectId: string | null;
  enabled: boolean;
  secretLast4: string;
  createdAt: string;
  updatedAt: string;
}
export interface DeliveryTry {
  attempt: number;
  at: string;
  outcome: "succeeded" | "retrying" | "failed";
  statusCode: number | null;
  error: string | null;
  latencyMs: number | null;
}
export interface Delivery {
  id: string;
  taskId: string;
  event: "completed" | "failed" | "needs_attention";
  status: "pending" | "delivering" | "succeeded" | "failed";
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  lastAttemptAt: string | null;
  deliveredAt: string | null;
  createdAt: string;
  recentTries: DeliveryTry[];
}

export interface Member {
  userId: string;
  email: string;
  name: string;
  role: Role;
  joinedAt: string;
}
export interface OrgRecord {
  id: string;
  name: string;
  requireWorkerApproval: boolean;
  role: Role;
  createdAt: string;
  updatedAt: string;
}
export interface ApiToken {
  id: string;
  name: string;
  orgId: string;
  role: Role;
  lastFour: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  createdAt: string;
}
export interface SessionRecord {
  id: string;
  client: string;
  current: boolean;
  createdAt: string;
  lastUsedAt: string;
}
export interface UserRecord {
  id: string;
  email: string;
  name: string;
  isAdmin: boolean;
  twoFactorEnabled: boolean;
  createdAt: string;
}

export interface Installation {
  id: number;
  account: { login: string; type: string; id: number };
  repositorySelection: string;
  suspended: boolean;
  repositories: number;
  syncedAt: string | null;
}
export interface CodeHost {
  app: { slug: string; name: string; htmlUrl: string; appId: number; ownedByThisOrg: boolean; integrationId: string | null } | null;
  installations: Installation[];
  connection: { login: string } | null;
  githubUrl: string;
}
export interface HostedRepository {
  id: number;
  installationId: number;
  fullName: string;
  private: boolean;
  cloneUrl: string;
  htmlUrl: string;
  defaultBranch: string;
}
