// Request and response schemas of the task API (SPEC §5). The OpenAPI document is built from these.
import { t, type TSchema } from "elysia";
import { ACTIONS, TASK_STATUSES } from "./machine";
import { MAX_LIMIT } from "./cursor";

export { ErrorBody } from "../../server/errors";
import { ErrorBody } from "../../server/errors";
import { Line, Text } from "../../lib/text";
import { RefName } from "../../lib/refname";
import { AGENT_NAMES } from "../../protocol/requests";
import { Int } from "../../server/answer-schemas";

/** A string enum with no default: t.UnionEnum defaults to its first value, which would fill absent fields. */
export function Enum<const T extends readonly [string, ...string[]]>(values: T, options: { description?: string } = {}) {
  const schema = t.UnionEnum(values, options);
  delete (schema as { default?: unknown }).default;
  return schema;
}

export const Priority = Enum(["LOW", "MEDIUM", "HIGH", "URGENT"], { description: "Default MEDIUM" });
export const Kind = Enum(["task", "review", "plan"], { description: "Default task" });
export const Status = Enum(TASK_STATUSES);
const Review = t.Object({ base: RefName(), head: RefName() });
// Answers carry what was stored, including refs taken before they were checked.
const ReviewRecord = t.Object({ base: t.String(), head: t.String() });
const Id = t.String({ minLength: 1, maxLength: 64 });

export const CreateTaskBody = t.Object(
  {
    projectId: Id,
    title: Line(200),
    prompt: Text(100_000),
    priority: t.Optional(Priority),
    kind: t.Optional(Kind),
    review: t.Optional(Review),
    agent: t.Optional(Enum(AGENT_NAMES, { description: "The agent to run it with; offered only to workers that have it. Default: the project's policy.preferredAgent, else any agent the worker has" })),
  },
  { additionalProperties: false },
);

export const ArtifactInfo = t.Object({
  name: t.String(),
  contentType: t.String(),
  size: Int(),
  createdAt: t.String(),
  attempt: Int({ description: "The attempt that uploaded it (the task's attempt then): an artifact of an earlier attempt stays until one of the same name replaces it" }),
});

/** A name for people to read, looked up when the record is read; null when its row is gone. */
const Name = t.Nullable(t.String({ description: "For people to read; null when it no longer exists" }));

const Actor = t.Object(
  {
    type: t.String({ description: "user, token, worker, integration or app" }),
    id: t.String(),
    name: t.Optional(Name),
  },
  { description: "Who did it: name is a user's name (or email), a token's owner and token name, a worker's, integration's or the GitHub app's name" },
);

export const Usage = t.Object(
  {
    inputTokens: Int(),
    outputTokens: Int(),
    cacheReadTokens: Int(),
    cacheWriteTokens: Int(),
    costUsd: t.Number({ description: "US dollars, as the agent reports it" }),
    model: t.Nullable(t.String({ description: "The model most recently reported" })),
  },
  { description: "What the task's agents used, summed over its attempts; null when none was reported" },
);

export const TaskRecord = t.Object(
  {
    id: t.String(),
    orgId: t.String(),
    projectId: t.String(),
    title: t.String(),
    prompt: t.String(),
    priority: Priority,
    kind: Kind,
    review: t.Nullable(ReviewRecord),
    status: Status,
    attempt: Int({ description: "How many runs on a worker this task has had" }),
    workerId: t.Nullable(t.String()),
    worker: t.Nullable(t.Object({ id: t.String(), name: Name }, { description: "The worker of the current attempt (workerId, named)" })),
    parentId: t.Nullable(t.String({ description: "The plan task that proposed this task" })),
    createdBy: t.Object(
      { type: Enum(["user", "token", "integration", "plan", "app"]), id: t.String(), name: Name },
      { description: "name: the user, token, integration, the plan task's title, or the GitHub app's (app: its slug, for tasks the app made in an organization other than the one owning it)" },
    ),
    summary: t.Nullable(t.String()),
    changes: t.Nullable(
      t.Object(
        {
          files: Int(),
          additions: Int(),
          deletions: Int(),
          branch: t.Nullable(t.String({ description: "ao/<taskId>; null when the task changed nothing" })),
          commit: t.Nullable(t.String()),
          base: t.Nullable(t.String({ description: "The commit the task started from" })),
          pushed: t.Boolean({ description: "The branch was pushed to the repository's origin" }),
        },
        { description: "What an ordinary task changed in its primary repository (its diff is the artifact changes.diff); null for review and plan tasks and projects without a repository" },
      ),
    ),
    needs: t.Nullable(
      t.Object(
        {
          kind: Enum(["input", "approval", "budget"]),
          message: t.String(),
          costUsd: t.Optional(t.Number({ description: "budget: what the task had cost when it passed its allowance" })),
          allowanceUsd: t.Optional(t.Nullable(t.Number({ description: "budget: the allowance it passed" }))),
        },
        { description: "What the task waits for. budget (status needs_approval): it passed its cost allowance; approve raises the allowance by the project's perTaskUsd, deny cancels the task" },
      ),
    ),
    plan: t.Nullable(t.Object({ tasks: t.Array(t.Unknown()) }, { description: "Set when a plan task completes: the tasks it proposes, each {title, prompt, priority?, kind?, review?, agent?}" })),
    source: t.Nullable(t.Record(t.String(), t.Unknown(), { description: "Where the task came from (integration, delivery)" })),
    pullRequest: t.Nullable(
      t.Object(
        {
          number: Int(),
          url: t.String(),
          state: Enum(["open", "closed", "merged"]),
          headBranch: t.String(),
          repository: t.String({ description: "owner/name at GitHub" }),
          draft: t.Optional(t.Boolean()),
          reviewUrl: t.Optional(t.String({ description: "A review task: the link of the review it posted" })),
        },
        { description: "The pull request at GitHub opened with the task's result (branch ao/<taskId>), or the one a review task reviewed" },
      ),
    ),
    artifacts: t.Array(ArtifactInfo),
    agent: t.Nullable(t.String({ description: "The agent the task asked for (claude, codex, exec); null: the project's preferred one, or any" })),
    usage: t.Nullable(Usage),
    allowanceUsd: t.Nullable(
      t.Number({ description: "What the task may cost (all attempts) before a person is asked: the project's policy.budget.perTaskUsd, raised by each approval to go on; null without a per-task budget" }),
    ),
    waitingReason: t.Nullable(t.String({ description: "Why a queued task is not offered, when ao knows: its project is over its daily budget, or no online worker could take it (none online, none for its project, none with its agent or its project's labels); null while it only waits for a free slot" })),
    failureReason: t.Nullable(
      t.String({ description: "Why a failed task failed: the message of its last attempt's last error event on the timeline; null in every other state, or when the attempt left no error" }),
    ),
    createdAt: t.String(),
    updatedAt: t.String(),
    startedAt: t.Nullable(t.String()),
    finishedAt: t.Nullable(t.String()),
  },
  { description: "A task" },
);

export const TaskEvent = t.Object({
  seq: Int({ description: "1, 2, 3... per task, no gaps" }),
  type: t.String({ description: "status, action, log, message, tool, artifact, error, plan; pull_request and review (the GitHub app: opened, merged, closed, reopened, posted, backing_off, failed)" }),
  at: t.String(),
  actor: t.Optional(Actor),
  data: t.Unknown(),
});

export const Limit = t.Optional(t.Integer({ minimum: 1, maximum: MAX_LIMIT, description: `1..${MAX_LIMIT}, default 50` }));

export const ListTasksQuery = t.Object({
  limit: Limit,
  cursor: t.Optional(t.String({ description: "nextCursor of the previous page" })),
  status: t.Optional(Status),
  projectId: t.Optional(Id),
  kind: t.Optional(Kind),
  parentId: t.Optional(Id),
});

export const TaskPage = t.Object({ items: t.Array(TaskRecord), nextCursor: t.Nullable(t.String()) });

export const EventsQuery = t.Object({
  after: t.Optional(t.Integer({ minimum: 0, description: "Only events with a greater seq (0: from the start)" })),
  cursor: t.Optional(t.String({ description: "nextCursor of the previous page (same as after)" })),
  limit: Limit,
});

export const EventPage = t.Object({
  items: t.Array(TaskEvent),
  nextCursor: t.Nullable(t.String({ description: "Pass as after (or cursor) for the next page; null at the end" })),
});

export const ActionBody = t.Object(
  {
    action: Enum(ACTIONS),
    input: t.Optional(t.String({ maxLength: 100_000, description: "Text handed to the task (action input; required there, and not blank)" })),
    // The 2,000-character limit counts characters, not UTF-16 units: checked in the service. The
    // schema's bound is the most UTF-16 units 2,000 characters take; every message says 2,000.
    reason: t.Optional(
      t.String({ maxLength: 4_000, "x-accepts": "a string of at most 2000 characters", description: "At most 2,000 characters (maxLength counts UTF-16 units)" }),
    ),
  },
  { additionalProperties: false },
);

export const TaskParams = t.Object({ orgId: t.String(), taskId: t.String() });
export const ArtifactParams = t.Object({ orgId: t.String(), taskId: t.String(), name: t.String() });
export const AppliedPlan = t.Object({ tasks: t.Array(TaskRecord) });

/**
 * Documents answers in the OpenAPI document (detail.responses) without Elysia validating each
 * answer against the schema: for pages of records that check costs more than building the page.
 */
export function documented(responses: Record<number, [TSchema, string]>) {
  return Object.fromEntries(
    Object.entries(responses).map(([status, [schema, description]]) => [status, { description, content: { "application/json": { schema } } }]),
  );
}

export const errorResponses = documented({
  400: [ErrorBody, "validation_failed"],
  401: [ErrorBody, "unauthorized"],
  403: [ErrorBody, "forbidden"],
  404: [ErrorBody, "not_found"],
});
