// The API's shapes as the command line reads them (its own copy: the client never imports the server).
export const TASK_STATUSES = ["queued", "running", "paused", "needs_input", "needs_approval", "completed", "failed", "cancelled"] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];
export const TERMINAL: ReadonlySet<string> = new Set(["completed", "failed", "cancelled"]);
export const NEEDS_ATTENTION: ReadonlySet<string> = new Set(["needs_input", "needs_approval"]);
export const ACTIONS = ["pause", "resume", "cancel", "retry", "restart", "input", "approve", "deny"] as const;
export const PRIORITIES = ["LOW", "MEDIUM", "HIGH", "URGENT"] as const;
export const KINDS = ["task", "review", "plan"] as const;
export const AGENT_NAMES = ["claude", "codex", "exec"] as const;
export const ROLES = ["owner", "admin", "member", "viewer"] as const;

export interface Task {
  id: string;
  orgId: string;
  projectId: string;
  title: string;
  prompt: string;
  priority: string;
  kind: string;
  review: { base: string; head: string } | null;
  status: string;
  attempt: number;
  workerId: string | null;
  /** The worker named (servers before names had only workerId). */
  worker?: { id: string; name: string | null } | null;
  parentId: string | null;
  createdBy?: { type: string; id: string; name?: string | null };
  summary: string | null;
  /** What an ordinary task changed (servers before it have none). */
  changes?: { files: number; additions: number; deletions: number; branch: string | null; commit: string | null; base: string | null; pushed: boolean } | null;
  needs: { kind: string; message: string } | null;
  plan: { tasks: unknown[] } | null;
  artifacts?: { name: string; contentType: string; size: number; createdAt: string }[];
  /** Servers before usage and agents (issue 10) have none of these. */
  agent?: string | null;
  usage?: { inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number; costUsd: number; model: string | null } | null;
  allowanceUsd?: number | null;
  waitingReason?: string | null;
  /** Why a failed task failed: its last attempt's last error (servers before it have none). */
  failureReason?: string | null;
  /** The pull request at GitHub with the task's result (or the one a review task reviewed). */
  pullRequest?: { number: number; url: string; state: string; headBranch: string; repository?: string; draft?: boolean; reviewUrl?: string } | null;
  createdAt: string;
  updatedAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

export interface TaskEvent {
  seq: number;
  type: string;
  at: string;
  actor?: { type: string; id: string; name?: string | null };
  data: unknown;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface CodehostStatus {
  app: { slug: string; name: string; htmlUrl: string; appId: number; ownedByThisOrg: boolean } | null;
  installations: { id: number; account: { login: string; type: string }; repositorySelection: string; suspended: boolean; repositories: number; syncedAt: string | null }[];
  connection: { login: string } | null;
  githubUrl: string;
}
