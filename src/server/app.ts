// Composes the feature modules into one Elysia app. No listen here: serve.ts does that.
import { Elysia, ValidationError, type AnyElysia } from "elysia";
import type { Core } from "./core";
import { ApiError, errorResponse, fieldErrors, invalid, invalidRequest, requireJsonObject, storeFailure } from "./errors";
import { credentialRefusal } from "./credentials-first";
import { queryCheck } from "./query";
import { bodyRefusal, canonicalMediaType, isJsonType, mediaTypeRefusal } from "./limits";
import { refuseInvalidUtf8 } from "./utf8";
import { healthModule } from "../modules/health";
import { MODULES } from "./modules";
import { requestNotes } from "./observe";
import { isApiPath, notFoundPage } from "../web";
import { docsModule } from "./docs";
import { openapiModule } from "./openapi";

export function createApp(core: Core) {
  const refusedCredential = credentialRefusal(() => app.routes);
  const refusedQuery = queryCheck(() => app.routes);
  let app = new Elysia({ normalize: true })
    .use(requestNotes())
    // The context's fields are named: Elysia reads hooks' source to decide what every request must
    // parse, and a whole context handed to a function would make each one parse its cookies.
    .onError(async ({ code, error, request, route, headers, params }) => {
      // Credentials before bodies: a route's 401/403/404 wins over its body's or query's 400.
      const refusal = await refusedCredential({ request, route, headers, params } as Parameters<typeof refusedCredential>[0]);
      if (refusal) return errorResponse(refusal);
      if (error instanceof ApiError) return errorResponse(error);
      // Errors thrown while parsing arrive wrapped in Elysia's ParseError.
      if (code === "PARSE" && (error as Error).cause instanceof ApiError) return errorResponse((error as Error).cause as ApiError);
      if (code === "VALIDATION" || error instanceof ValidationError) return errorResponse(validationError(error as ValidationError, request));
      // A body of another type can fail Elysia's parser for that type before the transform sees it.
      if (code === "PARSE") return errorResponse(mediaTypeRefusal(request, core.config) ?? invalid("the body is not valid JSON"));
      if (code === "NOT_FOUND") {
        // A person who follows a wrong link gets a page; a program calling the API gets its JSON error.
        if (!isApiPath(new URL(request.url).pathname)) return notFoundPage(request);
        return errorResponse(new ApiError(404, "not_found", "no such route"));
      }
      if (code === "INVALID_COOKIE_SIGNATURE") return errorResponse(new ApiError(401, "unauthorized", "invalid cookie"));
      return errorResponse(storeFailure(error, (m, f) => core.log.error(m, f), { method: request.method, path: new URL(request.url).pathname }));
    })
    .onTransform({ as: "global" }, ({ body, request, server, route }) => {
      const refusal = mediaTypeRefusal(request, core.config) ?? refusedQuery(request, route);
      if (refusal) throw refusal;
      // Routed, its JSON body read: the handler (or a streamed upload, idle at most this long
      // between chunks) gets longer than the server's idle timeout (serve.ts).
      server?.timeout(request, core.config.connections.requestSec);
      // Every JSON body ao takes is an object. Elysia's normalisation would otherwise turn an array
      // or a bare value into an empty object, and a PATCH would answer 200 having done nothing.
      // An inbound hook's body is its raw bytes, parsed once their signature holds: walked as an
      // object, byte by byte, it cost 0.7 s a MiB before any signature was checked.
      if (body === undefined || body instanceof Uint8Array || !isJsonType(request.headers.get("content-type"))) return;
      requireJsonObject(body);
    })
    .onRequest(({ request }) => {
      // Bodies are refused from their method, path and headers before anything is read (limits.ts).
      // Elysia's own JSON parser then runs (a custom global parser would hide every request body from
      // the OpenAPI document), over a json() that refuses invalid UTF-8 (utf8.ts). The routes that
      // read their raw body never call json().
      const refusal = bodyRefusal(request, core.config);
      if (refusal) throw refusal;
      canonicalMediaType(request);
      refuseInvalidUtf8(request);
    })
    .use(openapiModule((): AnyElysia => app))
    .use(docsModule("ao API"))
    .use(healthModule());
  for (const mod of MODULES) app = app.use(mod(core)) as unknown as typeof app;
  return app;
}

function validationError(error: ValidationError, request: Request): ApiError {
  // Elysia checks coerced query numbers one property at a time ("property") and keeps only the
  // value: name the query parameter that carried it, when exactly one did.
  const propertyField = error.type === "property" ? queryFieldWithValue(request, error.value) : null;
  const details = fieldErrors(error.all as Parameters<typeof fieldErrors>[0], propertyField ?? "(root)");
  return invalidRequest(error.type === "property" ? "query" : error.type, details);
}

function queryFieldWithValue(request: Request, value: unknown): string | null {
  const matches = [...new URL(request.url).searchParams].filter(([, v]) => v === String(value));
  return matches.length === 1 ? matches[0][0] : null;
}

export type App = ReturnType<typeof createApp>;
