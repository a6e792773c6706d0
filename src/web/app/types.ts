// The API's records as the web app reads them (SPEC §4, §5). Written by hand: the server's
// typebox schemas live with server code the browser bundle must not pull in.

export type Role = "owner" | "admin" | "member" | "viewer";
export interface User {
  id: string;
  email: string;
  name: string;
  isAdmin: boolean;
  twoFactorEnabled: boolean;
  createdAt: string;
}
export interface Org {
  id: string;
  name: string;
  role: Role;
  requireWorkerApproval?: boolean;
}
export interface Project {
  id: string;
  name: string;
  archived: boolean;
}
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export type Status = "queued" | "running" | "paused" | "needs_input" | "needs_approval" | "completed" | "failed" | "cancelled";
export const STATUSES: Status[] = ["queued", "running", "paused", "needs_input", "needs_approval", "completed", "failed", "cancelled"];
export const KINDS = ["task", "review", "plan"] as const;
export const PRIORITIES = ["LOW", "MEDIUM", "HIGH", "URGENT"] as const;
/** The states in which a task waits for a person. */
export const WAITING: ReadonlySet<Status> = new Set(["needs_input", "needs_approval"]);

export interface Who {
  type: string;
  id: string;
  name?: string | null;
}
export interface Artifact {
  name: string;
  contentType: string;
  size: number;
  createdAt: string;
  /** The attempt that uploaded it (an earlier attempt's stays until one of the same name replaces it). */
  attempt: number;
}
/** Being added by other work (issue 9, 10): rendered when present. */
export interface Changes {
  files: number;
  additions: number;
  deletions: number;
  branch: string | null;
  commit: string | null;
  base: string | null;
  pushed: boolean;
}
export interface PullRequest {
  number: number;
  url: string;
  state: string;
  headBranch: string;
  /** A review task: the review it posted on this pull request. */
  reviewUrl?: string;
}
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
  model: string | null;
}
export interface Task {
  id: string;
  orgId: string;
  projectId: string;
  title: string;
  prompt: string;
  priority: string;
  kind: string;
  review: { base: string; head: string } | null;
  status: Status;
  attempt: number;
  workerId: string | null;
  worker?: { id: string; name: string | null } | null;
  parentId: string | null;
  createdBy: Who;
  summary: string | null;
  needs: { kind: string; message: string } | null;
  plan: { tasks: unknown[] } | null;
  artifacts: Artifact[];
  changes?: Changes | null;
  pullRequest?: PullRequest | null;
  usage?: Usage | null;
  /** Why a queued task is not offered, when the server can tell (no online worker could take it, say). */
  waitingReason?: string | null;
  /** Why a failed task failed: the message of its last attempt's last error event. */
  failureReason?: string | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}
export interface TaskEvent {
  seq: number;
  type: string;
  at: string;
  actor?: Who;
  data: unknown;
}
