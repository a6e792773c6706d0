// Claim, events and transition on the worker's socket (protocol/messages.ts, SocketRequest): the
// operations of the HTTP routes in protocol-routes.ts, with the same checks in the same order
// (the credential, then the body) and the same answers, as one message each way. What it saves
// per request is the HTTP work around the operation: parsing, routing, the response schema and
// the request's log line.
import { Value } from "@sinclair/typebox/value";
import type { Core } from "../../server/core";
import { ApiError, fieldErrors, invalidRequest, requireJsonObject, storeFailure } from "../../server/errors";
import type { Reply, SocketRequest, SocketRequestOp } from "../../protocol/messages";
import { ClaimRequest, EventsRequest, TransitionRequest } from "../../protocol/requests";
import { withRepositoryTokens } from "../codehost/claims";
import { appendEvents, claimTask, transitionTask } from "./leases";
import { workerByCredentialHash } from "./registry";
import { compiledOnFirstUse } from "../../lib/checks";

const schemas = { claim: ClaimRequest, events: EventsRequest, transition: TransitionRequest } satisfies Record<SocketRequestOp, unknown>;
const bodies = {
  claim: compiledOnFirstUse(ClaimRequest),
  events: compiledOnFirstUse(EventsRequest),
  transition: compiledOnFirstUse(TransitionRequest),
} satisfies Record<SocketRequestOp, unknown>;

/**
 * Answers one request of the worker whose credential hashes to `credentialHash`. The credential is
 * looked up again for each request, as an HTTP request's would be: a revoked worker is refused even
 * before its socket has been closed.
 */
export async function answerSocketRequest(core: Core, credentialHash: string, m: SocketRequest): Promise<Reply> {
  const started = performance.now();
  let status = 200;
  let body: unknown;
  let workerId: string | undefined;
  try {
    const worker = await core.store.read(workerByCredentialHash(core, credentialHash));
    workerId = worker.id;
    const check = bodies[m.op]();
    requireJsonObject(m.body);
    if (!check.Check(m.body)) throw invalidRequest("body", fieldErrors(check.Errors(m.body)));
    // Fields the schema does not name are dropped, as the HTTP routes' normalisation drops them.
    Value.Clean(schemas[m.op], m.body);
    switch (m.op) {
      case "claim":
        body = await withRepositoryTokens(core, worker.org_id, await claimTask(core, worker, m.taskId, (m.body as { offerId: string }).offerId));
        break;
      case "events":
        body = await appendEvents(core, worker, m.taskId, m.body as EventsRequest);
        break;
      case "transition":
        body = await transitionTask(core, worker, m.taskId, m.body as TransitionRequest);
        break;
    }
  } catch (err) {
    const e = err instanceof ApiError ? err : storeFailure(err, (m, f) => core.log.error(m, f), { op: `worker socket ${m.op}` });
    status = e.status;
    body = e.toBody();
    // Refusals get a line like an HTTP request's; answered requests none (the task's timeline has them).
    core.log.info("worker request", {
      op: m.op,
      taskId: m.taskId,
      status,
      code: e.code,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
      ...(workerId ? { principalType: "worker", principalId: workerId } : {}),
    });
  }
  core.metrics.socketRequests.inc({ op: m.op, status });
  return { type: "reply", id: m.id, status, body };
}
