// Schemas of the worker, pairing, clone, readiness and discovered routes (people's side). The
// worker protocol's own schemas are in src/protocol.
import { t } from "elysia";
import { Labels } from "../../protocol/requests";

export { ErrorBody } from "../../server/errors";
import { ErrorBody } from "../../server/errors";
import { Line } from "../../lib/text";
import { pageOfSchema } from "../orgs/model";
import { Int } from "../../server/answer-schemas";
export const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

const Id = t.String({ minLength: 1, maxLength: 64 });
const Tool = t.Object({ name: t.String(), version: t.Nullable(t.String()) });
const Agent = t.Object(
  {
    name: t.String({ description: "claude, codex (found on the worker's PATH) or exec" }),
    version: t.Nullable(t.String({ description: "null for exec" })),
    command: t.Optional(t.String({ description: "exec only: the program its --exec command line starts (its name, not its arguments)" })),
  },
  { description: "An agent the worker can run" },
);

// Checked by the service, not here: the app's body normalisation would turn "text" given for an
// object into {"0":"t",...} and accept it.
export const WorkerPolicy = t.Unknown({
  description:
    "A JSON object. policy.projects (optional, up to 500 project ids of this organization): the worker only takes tasks of these projects. Other keys are kept as given.",
});

export const WorkerRecord = t.Object({
  id: t.String(),
  orgId: t.String(),
  name: t.String(),
  hostname: t.String(),
  labels: t.Array(t.String()),
  policy: t.Record(t.String(), t.Unknown()),
  status: t.UnionEnum(["online", "offline", "pending_approval", "revoked"]),
  tools: t.Array(Tool),
  agents: t.Array(Agent, { description: "The agents the worker runs (ao worker --agent), in its order of preference, with their versions: a task that names an agent is offered only to workers listing it" }),
  providers: t.Array(t.String(), { description: "Names of API-key variables present on the worker, never values" }),
  version: t.Nullable(t.String()),
  capacity: Int(),
  lastSeenAt: t.Nullable(t.String()),
  runningTaskIds: t.Array(t.String()),
  approvedAt: t.Nullable(t.String()),
  revokedAt: t.Nullable(t.String()),
  createdAt: t.String(),
  updatedAt: t.String(),
});

export const WorkerPage = t.Object({ items: t.Array(WorkerRecord), nextCursor: t.Nullable(t.String()) });
export const PageQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 200 })),
  cursor: t.Optional(t.String({ maxLength: 200 })),
});

export const WorkerParams = t.Object({ orgId: Id, workerId: Id });

export const PatchWorkerBody = t.Object(
  { name: t.Optional(Line(100)), labels: t.Optional(Labels), policy: t.Optional(WorkerPolicy) },
  { additionalProperties: false },
);

export const PairingView = t.Object({
  userCode: t.String(),
  status: t.String(),
  name: t.String(),
  hostname: t.String(),
  labels: t.Array(t.String()),
  requestIp: t.Nullable(t.String()),
  createdAt: t.String(),
  expiresAt: t.String(),
});
export const UserCodeBody = t.Object({ userCode: t.String({ minLength: 1, maxLength: 20 }) });
export const ApprovePairingBody = t.Object({ userCode: t.String({ minLength: 1, maxLength: 20 }), orgId: Id });

export const CloneBody = t.Object(
  { workerIds: t.Array(Id, { minItems: 1, maxItems: 100, description: "Workers of this organization to clone the repository to" }) },
  { additionalProperties: false },
);
export const CloneAccepted = t.Object({
  repositoryId: t.String(),
  workers: t.Array(t.Object({ workerId: t.String(), status: t.String(), delivered: t.Boolean({ description: "false: sent when the worker reconnects" }) })),
});
export const CloneStatuses = pageOfSchema(
  t.Object({ workerId: t.String(), status: t.UnionEnum(["cloning", "cloned", "failed"]), path: t.Nullable(t.String()), error: t.Nullable(t.String()), updatedAt: t.String() }),
);
export const RepositoryParams = t.Object({ orgId: Id, projectId: Id, repositoryId: Id });
export const ProjectParams = t.Object({ orgId: Id, projectId: Id });

export const ReadinessBody = t.Object({ workerId: t.Optional(Id) }, { additionalProperties: false });
export const ReadinessAccepted = t.Object({ runId: t.String(), workerId: t.String(), status: t.String() });
export const ReadinessRun = t.Object({
  runId: t.String(),
  projectId: t.String(),
  repositoryId: t.String(),
  workerId: t.String(),
  status: t.UnionEnum(["queued", "running", "completed", "failed"]),
  score: t.Nullable(Int({ description: "0..100, the weighted share of checks passed" })),
  checks: t.Array(t.Object({ id: t.String(), passed: t.Boolean(), detail: t.String() })),
  report: t.Nullable(t.String({ description: "Markdown" })),
  error: t.Nullable(t.String()),
  createdAt: t.String(),
  finishedAt: t.Nullable(t.String()),
});

export const Discovered = t.Object({
  id: t.String(),
  url: t.String(),
  name: t.String(),
  branch: t.Nullable(t.String()),
  workers: t.Array(t.Object({ workerId: t.String(), path: t.String(), seenAt: t.String() })),
  firstSeenAt: t.String(),
  lastSeenAt: t.String(),
});
export const DiscoveredPage = t.Object({ items: t.Array(Discovered), nextCursor: t.Nullable(t.String()) });
export const AcceptBody = t.Object(
  {
    ids: t.Array(Id, { minItems: 1, maxItems: 100 }),
    projectId: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "Add them to this project; absent: one new project per repository" })),
  },
  { additionalProperties: false },
);
export const DismissBody = t.Object({ ids: t.Array(Id, { minItems: 1, maxItems: 100 }) }, { additionalProperties: false });
