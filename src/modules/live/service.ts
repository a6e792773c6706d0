// The client live-updates protocol (SPEC §6), independent of the socket plumbing:
//   -> {"type":"auth","token"}                      (when the upgrade had no Authorization header)
//   -> {"type":"subscribe","orgId","taskId"?}       <- {"type":"subscribed","orgId","taskId"?}
//   -> {"type":"unsubscribe","orgId","taskId"?}     <- {"type":"unsubscribed","orgId","taskId"?}
//   -> {"type":"ping"}                              <- {"type":"pong"}
//   <- {"type":"task.updated","orgId","task"} and {"type":"task.event","orgId","taskId","event"}
//   <- {"type":"worker.updated","orgId","worker"}   (to an org's subscribers: a worker paired, connected, went or was changed)
//   <- {"type":"error","code","message"}            (validation_failed, unauthorized, forbidden, not_found)
// A message may carry an "id", echoed in the answer. Topics: org:<orgId> and task:<taskId>; a socket
// subscribed to an org is never also subscribed to that org's task topics, so nothing arrives twice.
import type { Core } from "../../server/core";
import type { Socket } from "../../server/sockets";
import { verifyAccessToken } from "../../server/auth";
import { principalFromApiToken, principalFromClaims, roleIn, type Principal } from "../auth/principal";
import { findTask } from "../tasks/store";
import type { TaskRow } from "../tasks/record";
import { recordsOf } from "../tasks/list";
import type { Q } from "../../db/query";

export const MAX_MESSAGE_BYTES = 16 * 1024;
export const MAX_SUBSCRIPTIONS = 1000;

export interface LiveState {
  principal: Principal | null;
  /** The credential, kept in memory only, to re-check an API token (sessions are re-checked by id). */
  credential: string | null;
  orgs: Map<string, { whole: boolean; tasks: Set<string> }>;
  authTimer: ReturnType<typeof setTimeout> | null;
  /** Messages are handled one after another (auth is async; a subscribe right after it must wait). */
  queue: Promise<void>;
  closed: boolean;
}

export type Failure = { code: "unauthorized" | "forbidden"; message: string };

/** Resolves a bearer value (aot_ token or access JWT) to a principal, or says why not. */
export async function authenticate(core: Core, value: string): Promise<Principal | Failure> {
  if (value.startsWith("aot_")) {
    return (await core.store.read(principalFromApiToken(core, value))) ?? { code: "unauthorized", message: "the API token is invalid, expired or revoked" };
  }
  if (value.startsWith("aow_")) return { code: "forbidden", message: "a worker credential cannot be used here" };
  const claims = await verifyAccessToken(core, value);
  if (!claims) return { code: "unauthorized", message: "the access token is invalid or expired" };
  return (await core.store.read(principalFromClaims(core, claims))) ?? { code: "unauthorized", message: "the session was revoked" };
}

/** The principal as it stands now (session not revoked, token not revoked or expired), or null. */
function* recheck(core: Core, state: LiveState): Q<Principal | null> {
  const p = state.principal;
  if (!p) return null;
  if (p.kind === "user") return yield* principalFromClaims(core, { sub: p.userId, sid: p.sessionId });
  return state.credential ? yield* principalFromApiToken(core, state.credential) : null;
}

/** The principal as it stands now and whether it may see the org (and the task). */
function* standing(core: Core, state: LiveState, orgId: string, taskId: string | undefined) {
  const principal = yield* recheck(core, state);
  if (!principal) return { principal, member: false, taskFound: false };
  const member = (yield* roleIn(core, principal, orgId)) !== null;
  const taskFound = member && (!taskId || !!(yield* findTask(core, orgId, taskId)));
  return { principal, member, taskFound };
}

export const isFailure = (v: Principal | Failure): v is Failure => "code" in v;

export function newState(principal: Principal | null, credential: string | null): LiveState {
  return { principal, credential, orgs: new Map(), authTimer: null, queue: Promise.resolve(), closed: false };
}

const send = (ws: Socket, message: Record<string, unknown>) => {
  if (ws.readyState === 1) ws.send(JSON.stringify(message));
};

export function sendError(ws: Socket, code: string, message: string, extra: Record<string, unknown> = {}) {
  send(ws, { type: "error", code, message, ...extra });
}

/** Closes the socket after telling why (4401: not or no longer authenticated). */
export function refuse(ws: Socket, state: LiveState, message: string) {
  sendError(ws, "unauthorized", message);
  state.closed = true;
  ws.close(4401, "unauthorized");
}

const text = (v: unknown, max = 64): v is string => typeof v === "string" && v.length > 0 && v.length <= max;

function subscriptionCount(state: LiveState): number {
  let n = 0;
  for (const o of state.orgs.values()) n += (o.whole ? 1 : 0) + o.tasks.size;
  return n;
}

/** Handles one parsed message of an authenticated or unauthenticated socket. */
export async function handle(core: Core, ws: Socket, state: LiveState, msg: Record<string, unknown>) {
  const echo = typeof msg.id === "string" || typeof msg.id === "number" ? { id: msg.id } : {};
  if (msg.type === "ping") return send(ws, { type: "pong", ...echo });
  if (msg.type === "auth") {
    if (!text(msg.token, 4096)) return sendError(ws, "validation_failed", "auth needs a token", { field: "token", ...echo });
    const result = await authenticate(core, msg.token);
    if (isFailure(result)) return refuse(ws, state, result.message);
    if (state.principal && state.principal.userId !== result.userId) {
      return sendError(ws, "forbidden", "a socket cannot change who it belongs to; open a new one", echo);
    }
    if (state.authTimer) clearTimeout(state.authTimer);
    state.authTimer = null;
    state.principal = result;
    state.credential = result.kind === "token" ? msg.token : null;
    return send(ws, { type: "authenticated", userId: result.userId, ...echo });
  }
  if (msg.type !== "subscribe" && msg.type !== "unsubscribe") {
    return sendError(ws, "validation_failed", "type must be auth, subscribe, unsubscribe or ping", { field: "type", ...echo });
  }
  if (!state.principal) return sendError(ws, "unauthorized", 'authenticate first: {"type":"auth","token":"..."}', echo);
  if (!text(msg.orgId)) return sendError(ws, "validation_failed", "orgId is required", { field: "orgId", ...echo });
  if (msg.taskId !== undefined && !text(msg.taskId)) return sendError(ws, "validation_failed", "taskId must be a task id", { field: "taskId", ...echo });
  const orgId = msg.orgId;
  const taskId = msg.taskId as string | undefined;
  const target = { orgId, ...(taskId ? { taskId } : {}), ...echo };
  if (msg.type === "unsubscribe") {
    unsubscribe(ws, state, orgId, taskId);
    return send(ws, { type: "unsubscribed", ...target });
  }
  const { principal, member, taskFound } = await core.store.read(standing(core, state, orgId, taskId));
  if (state.closed) return;
  if (!principal) return refuse(ws, state, "the session or token is no longer valid");
  state.principal = principal;
  if (!member) return sendError(ws, "forbidden", "you are not a member of this organization", target);
  if (!taskFound) return sendError(ws, "not_found", "task not found", target);
  if (subscriptionCount(state) >= MAX_SUBSCRIPTIONS) {
    return sendError(ws, "validation_failed", `at most ${MAX_SUBSCRIPTIONS} subscriptions per socket`, target);
  }
  subscribe(ws, state, orgId, taskId);
  send(ws, { type: "subscribed", ...target });
}

function subscribe(ws: Socket, state: LiveState, orgId: string, taskId?: string) {
  let org = state.orgs.get(orgId);
  if (!org) state.orgs.set(orgId, (org = { whole: false, tasks: new Set() }));
  if (taskId) {
    org.tasks.add(taskId);
    if (!org.whole) ws.subscribe(`task:${taskId}`);
    return;
  }
  org.whole = true;
  ws.subscribe(`org:${orgId}`);
  for (const t of org.tasks) ws.unsubscribe(`task:${t}`);
}

/** Undoes the matching subscribe only: {orgId} leaves task subscriptions of that org in place. */
function unsubscribe(ws: Socket, state: LiveState, orgId: string, taskId?: string) {
  const org = state.orgs.get(orgId);
  if (!org) return;
  if (taskId) {
    if (org.tasks.delete(taskId) && !org.whole) ws.unsubscribe(`task:${taskId}`);
  } else if (org.whole) {
    org.whole = false;
    ws.unsubscribe(`org:${orgId}`);
    for (const t of org.tasks) ws.subscribe(`task:${t}`);
  }
  if (!org.whole && org.tasks.size === 0) state.orgs.delete(orgId);
}

/**
 * Each of these tasks that is queued, with its task.updated message: why a queued task waits (its
 * waitingReason) changes with the org's workers and its project's policy, which change no task,
 * so its followers are sent its record again then.
 */
export function* queuedRecords(core: Core, orgId: string, taskIds: Iterable<string>): Q<{ row: TaskRow; message: string }[]> {
  const rows: TaskRow[] = [];
  for (const id of taskIds) {
    const row = yield* findTask(core, orgId, id);
    if (row?.status === "queued") rows.push(row);
  }
  // The org's online workers are read once for them all (on PostgreSQL a query), not once a task.
  const record = yield* recordsOf(core, rows);
  return rows.map((row) => ({ row, message: JSON.stringify({ type: "task.updated", orgId, task: record(row) }) }));
}

/** The principal as it stands now, and the subscribed orgs it may no longer see. */
function* lostAccess(core: Core, state: LiveState): Q<{ principal: Principal | null; lost: string[] }> {
  const principal = yield* recheck(core, state);
  const lost: string[] = [];
  if (principal) for (const orgId of [...state.orgs.keys()]) if (!(yield* roleIn(core, principal, orgId))) lost.push(orgId);
  return { principal, lost };
}

/**
 * Periodic re-check: a revoked credential closes the socket; a lost membership drops that org.
 * Run it in the socket's queue (after the message being handled), so a subscribe checked before
 * a revocation is not added after the re-check that should have dropped it.
 */
export async function revalidate(core: Core, ws: Socket, state: LiveState) {
  if (!state.principal || state.closed) return;
  const { principal, lost } = await core.store.read(lostAccess(core, state));
  if (state.closed) return;
  if (!principal) return refuse(ws, state, "the session or token is no longer valid");
  state.principal = principal;
  for (const orgId of lost) {
    const org = state.orgs.get(orgId);
    if (!org) continue;
    if (org.whole) ws.unsubscribe(`org:${orgId}`);
    for (const t of org.tasks) ws.unsubscribe(`task:${t}`);
    state.orgs.delete(orgId);
    sendError(ws, "forbidden", "you are no longer a member of this organization", { orgId });
  }
}
