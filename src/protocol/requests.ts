// The worker protocol's HTTP requests and answers (all under /api/v1/worker). State changes go
// over HTTP so they get a status code and can be retried; the socket only carries signals.
import { Type as T, type Static } from "@sinclair/typebox";
import { Line, MadeOneLine, MadeStorable, Matching, Storable } from "../lib/text";
import { compiledOnFirstUse } from "../lib/checks";
import { RefName } from "../lib/refname";

const LABEL_WORDS = "lower-case letters, digits and . _ : -, starting with a letter or digit, up to 50 characters";
export const Label = Matching("^[a-z0-9][a-z0-9._:-]{0,49}$", `a label: ${LABEL_WORDS}`, { description: LABEL_WORDS });
export const Labels = T.Array(Label, { maxItems: 20, uniqueItems: true });

export const PairRequest = T.Object({
  name: Line(100),
  hostname: T.String({ minLength: 1, maxLength: 255 }),
  labels: T.Optional(Labels),
});
export type PairRequest = Static<typeof PairRequest>;

export const PairStarted = T.Object({
  deviceCode: T.String(),
  userCode: T.String(),
  verificationUri: T.String(),
  verificationUriComplete: T.String(),
  intervalSec: T.Integer(),
  expiresIn: T.Integer(),
});
export type PairStarted = Static<typeof PairStarted>;

export const PairPoll = T.Object({ deviceCode: T.String({ minLength: 1, maxLength: 200 }) });
export const PairResult = T.Object({ credential: T.String(), workerId: T.String(), orgId: T.String() });
export type PairResult = Static<typeof PairResult>;

/** The agents a task may ask for by name (task create's `agent`, `policy.preferredAgent`, `ao worker --agent`). */
export const AGENT_NAMES = ["claude", "codex", "exec"] as const;
export type AgentName = (typeof AGENT_NAMES)[number];

export const ClaimRequest = T.Object({ offerId: T.String({ minLength: 1, maxLength: 100 }) });

export const RepositoryInfo = T.Object({
  id: T.String(),
  url: T.String(),
  name: T.String(),
  branch: T.String(),
  primary: T.Boolean(),
  /**
   * A GitHub installation access token for this repository alone (contents and pull requests
   * write), minted for this attempt: for git over HTTPS as x-access-token. Never logged or stored.
   */
  token: T.Optional(T.String()),
  /** The server wants the task's branch ao/<taskId> pushed (an app repository whose project opens pull requests). */
  push: T.Optional(T.Boolean()),
});
export type RepositoryInfo = Static<typeof RepositoryInfo>;

export const ClaimedTask = T.Object({
  id: T.String(),
  projectId: T.String(),
  title: T.String(),
  prompt: T.String(),
  kind: T.Union([T.Literal("task"), T.Literal("review"), T.Literal("plan")]),
  priority: T.String(),
  review: T.Union([T.Object({ base: T.String(), head: T.String() }), T.Null()]),
  /** The agent the task asked for; null or absent: the project's preferredAgent, else any the worker has. */
  agent: T.Optional(T.Union([T.String(), T.Null()])),
  /** The person who created the task (co-author of the task's commit), when there is one. */
  createdBy: T.Union([T.Object({ name: T.String(), email: T.String() }), T.Null()]),
});
export type ClaimedTask = Static<typeof ClaimedTask>;

export const TaskBudget = T.Object({
  /** policy.budget.perTaskUsd: what an approval to go on raises the allowance by. */
  perTaskUsd: T.Number(),
  /** What the task may cost in all (its attempts together) before a person is asked. */
  allowanceUsd: T.Number(),
  /** What the task's earlier attempts cost. */
  costUsd: T.Number(),
});
export type TaskBudget = Static<typeof TaskBudget>;

export const ClaimResult = T.Object({
  attempt: T.Integer(),
  leaseToken: T.String(),
  /** fresh: start from scratch; continue: a retry that continues the previous attempt's work. */
  runMode: T.Union([T.Literal("fresh"), T.Literal("continue")]),
  task: ClaimedTask,
  project: T.Object({
    id: T.String(),
    name: T.String(),
    knowledge: T.String(),
    policy: T.Record(T.String(), T.Unknown()),
    /** Primary first. */
    repositories: T.Array(RepositoryInfo),
  }),
  /** The project's per-task budget, when it has one: the worker pauses the agent once costUsd + this attempt's cost passes allowanceUsd. */
  budget: T.Optional(T.Union([TaskBudget, T.Null()])),
});
export type ClaimResult = Static<typeof ClaimResult>;

export const Needs = T.Object({
  message: Storable(10_000, { minLength: 1 }),
  /** budget (with needs_approval): the task passed its allowance; approve raises it, deny cancels the task. */
  kind: T.Optional(T.Literal("budget")),
});

/** The most tasks a plan may propose. */
const MAX_PLAN_TASKS = 100;

/**
 * One task a plan proposes, as a worker reports it: the one definition the worker (its agent's
 * plan.json) and the server (the transition, apply-plan) check. The server takes the title through
 * oneLine and the prompt through withoutNul, so the schema allows what they mend.
 */
export const PlanItem = T.Object({
  title: MadeOneLine(200),
  prompt: MadeStorable(100_000),
  priority: T.Optional(T.Union([T.Literal("LOW"), T.Literal("MEDIUM"), T.Literal("HIGH"), T.Literal("URGENT")])),
  kind: T.Optional(T.Union([T.Literal("task"), T.Literal("review"), T.Literal("plan")])),
  /** Required with kind review and only with it: a rule across fields, checked by planProblems. */
  review: T.Optional(T.Object({ base: RefName(), head: RefName() })),
  /** The agent to run it with; none: the plan's own agent (or, if the plan named none, the project's choice). */
  agent: T.Optional(T.Union(AGENT_NAMES.map((a) => T.Literal(a)))),
});
export type PlanItem = Static<typeof PlanItem>;
export const Plan = T.Object({ tasks: T.Array(PlanItem, { maxItems: MAX_PLAN_TASKS }) });
export type Plan = Static<typeof Plan>;

/**
 * A fault of a plan: where (a JSON pointer such as /tasks/1/review) and, for the schema's own, the
 * TypeBox error that lib/field-messages.ts puts in words.
 */
export type PlanProblem = { path: string; message: string; type?: number; schema?: unknown; value?: unknown };

const checkPlan = compiledOnFirstUse(Plan);

/**
 * What is wrong with a plan (none: it is good): Plan's errors, and the rule across fields a schema
 * cannot say, that `review` goes with kind review and only with it.
 */
export function planProblems(value: unknown): PlanProblem[] {
  const problems: PlanProblem[] = [...checkPlan().Errors(value)];
  const tasks = (value as { tasks?: unknown } | null)?.tasks;
  if (!Array.isArray(tasks)) return problems;
  for (const [i, item] of tasks.entries()) {
    if (typeof item !== "object" || item === null) continue;
    const { kind, review } = item as { kind?: unknown; review?: unknown };
    const path = `/tasks/${i}/review`;
    if (kind === "review" && review === undefined) problems.push({ path, message: "is required with kind review: {base, head}" });
    if (kind !== "review" && review !== undefined) problems.push({ path, message: "only with kind review" });
  }
  // Item by item, as a person fixes them (the schema's errors came first, the rule's after).
  const index = (p: PlanProblem) => Number(p.path.match(/^\/tasks\/(\d+)/)?.[1] ?? -1);
  return problems.sort((a, b) => index(a) - index(b));
}

/** What an ordinary task changed in its primary repository, reported with to = completed. */
const CommitId = Matching("^[0-9a-f]{40}([0-9a-f]{24})?$", "a commit id: 40 (SHA-1) or 64 (SHA-256) lower-case hex digits");

export const TaskChanges = T.Object({
  files: T.Integer({ minimum: 0 }),
  additions: T.Integer({ minimum: 0 }),
  deletions: T.Integer({ minimum: 0 }),
  /** ao/<taskId>; null when nothing changed */
  branch: T.Union([RefName(), T.Null()]),
  commit: T.Union([CommitId, T.Null()]),
  /** The commit the task started from; null for a repository with no commits yet */
  base: T.Union([CommitId, T.Null()]),
  pushed: T.Boolean(),
});
export type TaskChanges = Static<typeof TaskChanges>;

export const WORKER_TARGETS = ["running", "needs_input", "needs_approval", "completed", "failed"] as const;

export const TransitionRequest = T.Object({
  leaseToken: T.String({ minLength: 1, maxLength: 200 }),
  to: T.Union(WORKER_TARGETS.map((s) => T.Literal(s))),
  summary: T.Optional(Storable(20_000)),
  error: T.Optional(Storable(20_000)),
  /** Required with needs_input and needs_approval: what the person is asked. */
  needs: T.Optional(Needs),
  /** A plan task's proposal, with to = completed. */
  plan: T.Optional(Plan),
  /** An ordinary task's changes, with to = completed. */
  changes: T.Optional(TaskChanges),
});
export type TransitionRequest = Static<typeof TransitionRequest>;

/** Event types a worker may write; status and action events are the server's own. */
export const WORKER_EVENT_TYPES = ["log", "message", "tool", "edit", "decision", "error"] as const;
export type WorkerEventType = (typeof WORKER_EVENT_TYPES)[number];

export const WorkerEvent = T.Object({
  seq: T.Integer({ minimum: 1 }),
  type: T.Union(WORKER_EVENT_TYPES.map((s) => T.Literal(s))),
  data: T.Unknown(),
});
export type WorkerEvent = Static<typeof WorkerEvent>;

export const EventsRequest = T.Object({
  leaseToken: T.String({ minLength: 1, maxLength: 200 }),
  events: T.Array(WorkerEvent, { minItems: 1, maxItems: 1000 }),
});
export type EventsRequest = Static<typeof EventsRequest>;
export const EventsResult = T.Object({ written: T.Integer(), duplicates: T.Integer() });

/** An attempt's usage so far as its agent reports it: cumulative over the attempt, never a delta. */
export const Usage = T.Object({
  inputTokens: T.Integer({ minimum: 0 }),
  outputTokens: T.Integer({ minimum: 0 }),
  cacheReadTokens: T.Integer({ minimum: 0 }),
  cacheWriteTokens: T.Integer({ minimum: 0 }),
  costUsd: T.Number({ minimum: 0, maximum: 1_000_000 }),
  model: T.Union([T.String({ maxLength: 200 }), T.Null()]),
});
export type Usage = Static<typeof Usage>;

export const UsageReport = T.Object({ leaseToken: T.String({ minLength: 1, maxLength: 200 }), usage: Usage });
export type UsageReport = Static<typeof UsageReport>;
export const UsageResult = T.Object({
  /** The task's cost so far, all attempts. */
  costUsd: T.Number(),
});

/** Header carrying the lease on artifact uploads (the body is the file). */
export const LEASE_HEADER = "x-ao-lease";

export const ReposReport = T.Object({
  repos: T.Array(
    T.Object({ path: T.String({ maxLength: 4096 }), url: T.String({ minLength: 1, maxLength: 2048 }), branch: T.Optional(T.String({ maxLength: 255 })) }),
    { maxItems: 1000 },
  ),
});
export type ReposReport = Static<typeof ReposReport>;

export const CloneReport = T.Object({
  ok: T.Boolean(),
  path: T.Optional(T.String({ maxLength: 4096 })),
  error: T.Optional(T.String({ maxLength: 10_000 })),
});
export type CloneReport = Static<typeof CloneReport>;

export const ReadinessCheck = T.Object({ id: T.String({ maxLength: 100 }), passed: T.Boolean(), detail: T.String({ maxLength: 4000 }) });
export type ReadinessCheck = Static<typeof ReadinessCheck>;

export const ReadinessReport = T.Object({
  status: T.Union([T.Literal("running"), T.Literal("completed"), T.Literal("failed")]),
  score: T.Optional(T.Integer({ minimum: 0, maximum: 100 })),
  checks: T.Optional(T.Array(ReadinessCheck, { maxItems: 100 })),
  report: T.Optional(T.String({ maxLength: 200_000 })),
  error: T.Optional(T.String({ maxLength: 10_000 })),
});
export type ReadinessReport = Static<typeof ReadinessReport>;
