// The worker protocol's WebSocket messages (internal, versioned with the server). The worker
// runtime and the server both import these; neither imports the other.
//
//   worker -> server   hello, heartbeat, decline, request
//   server -> worker   welcome, offer, control, clone, readiness, reply, error
import { Type as T, type Static } from "@sinclair/typebox";

/** Bumped when a message changes incompatibly; the server refuses other versions at hello. */
export const PROTOCOL_VERSION = 1;

/** Close codes the server uses on the worker socket. */
export const CLOSE = {
  /** The credential was revoked: do not reconnect. */
  revoked: 4001,
  /** The worker speaks another protocol version: do not reconnect without upgrading. */
  unsupportedVersion: 4002,
  /** Another connection of the same worker replaced this one. */
  replaced: 4003,
  /** Nothing heard for the offline timeout. */
  silent: 4004,
  /** Too many malformed messages. */
  garbage: 4005,
} as const;

export const ToolInfo = T.Object({ name: T.String({ minLength: 1, maxLength: 100 }), version: T.Union([T.String({ maxLength: 200 }), T.Null()]) });
export type ToolInfo = Static<typeof ToolInfo>;

/**
 * An agent the worker can run: a coding agent found on PATH with its version, or `exec` with the
 * program its --exec command line starts (the program's name only: the arguments may hold secrets).
 * `version` stays present (null for exec) so the shape is a ToolInfo with one more field.
 */
export const AgentInfo = T.Object({
  name: T.String({ minLength: 1, maxLength: 100 }),
  version: T.Union([T.String({ maxLength: 200 }), T.Null()]),
  command: T.Optional(T.String({ minLength: 1, maxLength: 200 })),
});
export type AgentInfo = Static<typeof AgentInfo>;

export const RunningAttempt = T.Object({ taskId: T.String({ maxLength: 100 }), attempt: T.Integer({ minimum: 1 }) });
export type RunningAttempt = Static<typeof RunningAttempt>;

const Running = T.Array(RunningAttempt, { maxItems: 256 });

export const Hello = T.Object({
  type: T.Literal("hello"),
  protocol: T.Integer(),
  /** The ao version of the worker. */
  version: T.String({ maxLength: 100 }),
  tools: T.Array(ToolInfo, { maxItems: 100 }),
  agents: T.Array(AgentInfo, { maxItems: 100 }),
  /** Names of the API-key environment variables present, never their values. */
  providers: T.Array(T.String({ maxLength: 100 }), { maxItems: 100 }),
  capacity: T.Integer({ minimum: 1, maximum: 64 }),
  /** What it still runs after a reconnect: matching leases continue, the rest is resolved. */
  running: T.Optional(Running),
});
export type Hello = Static<typeof Hello>;

export const Heartbeat = T.Object({ type: T.Literal("heartbeat"), running: Running });
export type Heartbeat = Static<typeof Heartbeat>;

/** The worker cannot take an offer after all (no free slot): the task is offered elsewhere at once. */
export const Decline = T.Object({ type: T.Literal("decline"), offerId: T.String({ maxLength: 100 }) });
export type Decline = Static<typeof Decline>;

/**
 * The worker requests the socket also carries, with the bodies and answers of their HTTP routes
 * (`POST /worker/tasks/:taskId/<op>`): one message each way instead of an HTTP request. The
 * welcome lists them; a worker sends one only when its server listed it, and anything larger than
 * SOCKET_REQUEST_BYTES goes over HTTP.
 */
export const SOCKET_REQUEST_OPS = ["claim", "events", "transition"] as const;
export type SocketRequestOp = (typeof SOCKET_REQUEST_OPS)[number];
/** The largest request message a worker sends; the server refuses messages past 256 KiB. */
export const SOCKET_REQUEST_BYTES = 240 * 1024;

export const SocketRequest = T.Object({
  type: T.Literal("request"),
  /** The worker's number for the request, echoed by its reply. */
  id: T.Integer({ minimum: 1, maximum: 2 ** 53 - 1 }),
  op: T.Union(SOCKET_REQUEST_OPS.map((op) => T.Literal(op))),
  taskId: T.String({ minLength: 1, maxLength: 64 }),
  body: T.Unknown(),
});
export type SocketRequest = Static<typeof SocketRequest>;

export const WorkerMessage = T.Union([Hello, Heartbeat, Decline, SocketRequest]);
export type WorkerMessage = Static<typeof WorkerMessage>;

export interface Welcome {
  type: "welcome";
  protocol: number;
  workerId: string;
  orgId: string;
  /** pending_approval: connected but offered no work until a person approves it. */
  status: "active" | "pending_approval";
  heartbeatMs: number;
  /** The requests this server answers on the socket (SOCKET_REQUEST_OPS); absent: none, use HTTP. */
  requests?: SocketRequestOp[];
}

export interface Offer {
  type: "offer";
  offerId: string;
  taskId: string;
  /** The attempt a successful claim starts. */
  attempt: number;
  expiresAt: string;
}

export const CONTROL_ACTIONS = ["pause", "resume", "cancel", "input", "approve", "deny"] as const;
export type ControlAction = (typeof CONTROL_ACTIONS)[number];

export interface Control {
  type: "control";
  taskId: string;
  attempt: number;
  action: ControlAction;
  input?: string;
  reason?: string;
}

/** Clone a repository into the workspace (or update the clone there) and report it. */
export interface CloneRequest {
  type: "clone";
  repositoryId: string;
  projectId: string;
  url: string;
  branch: string;
  name: string;
  /** An installation access token for this repository, as in RepositoryInfo.token. */
  token?: string;
}

/** Run the readiness checks on the worker's clone of a project's primary repository. */
export interface ReadinessRequest {
  type: "readiness";
  runId: string;
  projectId: string;
  repositoryId: string;
  url: string;
  branch: string;
  name: string;
  /** How long the repository's test command may run. */
  testTimeoutMs: number;
}

/** The answer to a request: the HTTP route's status and body (the SPEC's error format below 2xx). */
export interface Reply {
  type: "reply";
  id: number;
  status: number;
  body: unknown;
}

export interface ProtocolError {
  type: "error";
  code: string;
  message: string;
}

export type ServerMessage = Welcome | Offer | Control | CloneRequest | ReadinessRequest | Reply | ProtocolError;
