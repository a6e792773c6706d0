// GET /api/v1/ws: the client live-updates socket (SPEC §6), on Bun's native WebSocket server.
// The protocol is in service.ts; this file wires it to the socket's life cycle.
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import type { Socket } from "../../server/sockets";
import { relayAccessChanges } from "../auth/principal";
import { outdated, relayTaskChanges } from "../tasks/store";
import { authenticate, handle, isFailure, newState, queuedRecords, refuse, revalidate, sendError, MAX_MESSAGE_BYTES, type LiveState } from "./service";

export const LIVE_PATH = "/api/v1/ws";

const stateOf = (ws: Socket) => ws.data.live as LiveState;

function refusal(status: number, code: string, message: string) {
  return new Response(JSON.stringify({ error: { code, message } }), { status, headers: { "content-type": "application/json; charset=utf-8" } });
}

function parse(raw: string | Buffer): Record<string, unknown> | string {
  if (typeof raw !== "string") return "messages must be JSON text, not binary";
  if (raw.length > MAX_MESSAGE_BYTES) return `messages are limited to ${MAX_MESSAGE_BYTES} bytes`;
  let msg: unknown;
  try {
    msg = JSON.parse(raw);
  } catch {
    return "the message is not valid JSON";
  }
  if (!msg || typeof msg !== "object" || Array.isArray(msg) || typeof (msg as { type?: unknown }).type !== "string") {
    return 'a message is a JSON object with a string "type"';
  }
  return msg as Record<string, unknown>;
}

export default (core: Core) => {
  const open = new Set<Socket>();
  // In the socket's queue, after the message being handled; a failure is logged, never thrown.
  const recheck = (ws: Socket) => {
    const state = stateOf(ws);
    state.queue = state.queue
      .then(() => revalidate(core, ws, state))
      .catch((err) => core.log.error("live socket re-check failed", { error: String((err as Error)?.stack ?? err) }));
  };
  const timer = setInterval(() => {
    for (const ws of open) recheck(ws);
  }, core.config.liveTimeouts.recheckMs);
  core.onClose.push(() => clearInterval(timer));
  // Revocation reaches the sockets in the same moment (the periodic re-check is a safety net only),
  // on every server: the other servers' revocations arrive on the bus.
  core.events.on("access.changed", ({ userId }) => {
    for (const ws of open) if (stateOf(ws).principal?.userId === userId) recheck(ws);
  });
  relayAccessChanges(core);
  // A queued task followed here is sent again when why it waits may have changed, to each socket
  // that follows it, whether through its topic or its org's (an org's subscribers hear
  // worker.updated as well, and read their queued tasks again if they show why).
  const waitingMayChange = ({ orgId }: { orgId: string }) => {
    const followers = new Map<string, Socket[]>();
    for (const ws of open) for (const id of stateOf(ws).orgs.get(orgId)?.tasks ?? []) followers.set(id, [...(followers.get(id) ?? []), ws]);
    if (followers.size === 0) return;
    core.store
      .read(queuedRecords(core, orgId, followers.keys()))
      .then((queued) => {
        for (const { row, message } of queued) {
          // Its claim (say) was published while it was read: that newer record stands.
          if (outdated(core, row)) continue;
          for (const ws of followers.get(row.id)!) if (ws.readyState === 1) ws.send(message);
        }
      })
      .catch((err) => core.log.error("sending queued tasks again failed", { orgId, error: String((err as Error)?.stack ?? err) }));
  };
  core.events.on("workers.changed", waitingMayChange);
  core.events.on("project.policyChanged", waitingMayChange);
  core.events.on("project.budgetReached", waitingMayChange);
  // Several servers: the task changes made on the others reach this server's subscribers.
  relayTaskChanges(core);

  core.sockets.register(LIVE_PATH, {
    async upgrade(request) {
      const header = request.headers.get("authorization");
      if (!header) return { live: newState(null, null) };
      const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
      if (!m) return refusal(401, "unauthorized", "the Authorization header must be 'Bearer <token>'");
      const result = await authenticate(core, m[1]);
      if (isFailure(result)) return refusal(result.code === "forbidden" ? 403 : 401, result.code, result.message);
      return { live: newState(result, result.kind === "token" ? m[1] : null) };
    },
    open(ws) {
      open.add(ws);
      const state = stateOf(ws);
      // Access revoked between the upgrade's check and now found no socket to close: check again.
      if (state.principal) recheck(ws);
      else {
        state.authTimer = setTimeout(() => {
          if (!state.principal && !state.closed) refuse(ws, state, `authenticate within ${core.config.liveTimeouts.authMs / 1000} s`);
        }, core.config.liveTimeouts.authMs);
      }
    },
    message(ws, raw) {
      const state = stateOf(ws);
      const msg = parse(raw);
      if (typeof msg === "string") return sendError(ws, "validation_failed", msg);
      state.queue = state.queue
        .then(() => (state.closed ? undefined : handle(core, ws, state, msg)))
        .catch((err) => {
          core.log.error("live socket message failed", { error: String((err as Error)?.stack ?? err) });
          sendError(ws, "internal", "the message could not be handled");
        });
    },
    close(ws) {
      open.delete(ws);
      const state = stateOf(ws);
      state.closed = true;
      if (state.authTimer) clearTimeout(state.authTimer);
    },
  });

  // Upgrades never reach Elysia (serve.ts hands them to core.sockets); this route documents the
  // socket in the OpenAPI document.
  return new Elysia({ name: "live", seed: core.instanceId, prefix: "/api/v1" }).get(
    "/ws",
    () => refusal(400, "validation_failed", "expected a WebSocket upgrade"),
    {
      detail: {
        summary: "Live updates (WebSocket)",
        tags: ["live"],
        description: [
          "Upgrade to a WebSocket. Authenticate with Authorization: Bearer, or send {\"type\":\"auth\",\"token\":\"...\"} within 10 s.",
          "Client: {type: subscribe|unsubscribe, orgId, taskId?, id?}, {type: ping}. Server: {type: subscribed|unsubscribed, orgId, taskId?, id?},",
          "{type: task.updated, orgId, task}, {type: task.event, orgId, taskId, event}, {type: error, code, message}.",
          "An org's subscribers also get {type: worker.updated, orgId, worker} when one of its workers is paired, connects, goes or is changed; a queued task's",
          "subscribers get its task.updated again then (its waitingReason may have changed).",
          "Codes: validation_failed, unauthorized (the socket is closed with 4401), forbidden, not_found.",
          "The upgrade takes no query parameter (a token goes in the header or the first message, never in the address): one is 400 validation_failed naming it,",
          "after the Authorization header's check when it has one.",
        ].join(" "),
        responses: {
          101: { description: "Switching protocols" },
          400: { description: "Not a WebSocket upgrade, or a query parameter" },
          401: { description: "Bad credential" },
          403: { description: "A worker credential" },
        },
      },
    },
  );
};
