// Per HTTP request: an id (X-Request-Id, taken from a proxy when it sent a sane one), one log line
// and the request metrics. The answer's status is only final once Elysia's error mapping has run,
// so the line is written around app.fetch (observeRequests); the route pattern and the caller are
// known only inside Elysia, where requestNotes() writes them down.
import { Elysia } from "elysia";
import type { Core } from "./core";
import { ApiError, errorResponse } from "./errors";

interface Note {
  route?: string;
  orgId?: string;
  principalType?: "user" | "token" | "worker";
  principalId?: string;
}

const notes = new WeakMap<Request, Note>();

const SANE_REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);

/** The incoming X-Request-Id when it is a short token, else a new one (a header is no place for arbitrary text in our logs). */
export function requestIdFor(incoming: string | null): string {
  return incoming !== null && SANE_REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
}

type Ctx = {
  request: Request;
  route?: string;
  orgId?: unknown;
  principal?: { kind: "user" | "token"; userId: string; tokenId?: string; orgId?: string };
  worker?: { id: string; org_id: string };
};

function note(ctx: Ctx) {
  const n: Note = { route: ctx.route || undefined };
  if (ctx.principal) {
    n.principalType = ctx.principal.kind;
    // A token names itself (its owner is one lookup away); never its value.
    n.principalId = ctx.principal.kind === "token" ? ctx.principal.tokenId : ctx.principal.userId;
    if (ctx.principal.kind === "token") n.orgId = ctx.principal.orgId;
  } else if (ctx.worker) {
    n.principalType = "worker";
    n.principalId = ctx.worker.id;
    n.orgId = ctx.worker.org_id;
  }
  if (typeof ctx.orgId === "string") n.orgId = ctx.orgId;
  notes.set(ctx.request, n);
}

/** Elysia side: mounted first in app.ts, so its hooks see every route; they return nothing and change no answer. */
export function requestNotes() {
  return new Elysia({ name: "ao-request-notes" })
    // The fields are named, not the whole context passed on: Elysia reads a hook's source to decide
    // what each request must parse, and a context handed to a function makes it parse every
    // request's cookies (3% of the server's time in bench/workers-dispatch.ts).
    .onAfterHandle({ as: "global" }, ({ request, route, orgId, principal, worker }: any) => void note({ request, route, orgId, principal, worker }))
    .onError({ as: "global" }, ({ request, route, orgId, principal, worker }: any) => void note({ request, route, orgId, principal, worker }));
}

/** Wraps the app's fetch: the request id on every answer, errors included, and one log line per request. */
export function observeRequests(core: Core, handle: (request: Request) => Response | Promise<Response>) {
  return async (request: Request): Promise<Response> => {
    const started = performance.now();
    const requestId = requestIdFor(request.headers.get("x-request-id"));
    let response: Response;
    try {
      response = await handle(request);
    } catch (error) {
      core.log.error("unhandled error", { requestId, error: String((error as Error)?.stack ?? error) });
      response = errorResponse(new ApiError(500, "internal", "internal server error"));
    }
    try {
      response.headers.set("x-request-id", requestId);
    } catch {
      // Some answers carry immutable headers; a copy shares the body stream.
      response = new Response(response.body, response);
      response.headers.set("x-request-id", requestId);
    }
    const seconds = (performance.now() - started) / 1000;
    const n = notes.get(request) ?? {};
    const route = n.route ?? "(unmatched)";
    const method = METHODS.has(request.method) ? request.method : "OTHER";
    core.metrics.requests.inc({ method, route, status: response.status });
    core.metrics.latency.observe({ method, route }, seconds);
    const fields = {
      requestId,
      method,
      route,
      status: response.status,
      durationMs: Math.round(seconds * 10_000) / 10,
      ...(n.orgId ? { orgId: n.orgId } : {}),
      ...(n.principalId ? { principalType: n.principalType, principalId: n.principalId } : {}),
    };
    if (response.status >= 500) core.log.error("request", fields);
    else core.log.info("request", fields);
    return response;
  };
}
