// Composes the feature modules into one Elysia app. No listen here: serve.ts does that.
import { Elysia, ValidationError } from "elysia";
import { openapi } from "@elysiajs/openapi";
import type { Core } from "./core";
import { ApiError, errorResponse, fieldError, invalid, payloadTooLarge } from "./errors";
import { VERSION } from "../version";
import { healthModule } from "../modules/health";
import { MODULES } from "./modules";
import { isApiPath, notFoundPage } from "../web";
import { docsModule } from "./docs";

/** Routes that take large raw bodies; they enforce their own limit. */
const RAW_UPLOAD = /\/api\/v1\/worker\/tasks\/[^/]+\/artifacts\//;

export function createApp(core: Core) {
  const limit = core.config.jsonLimitBytes;
  let app = new Elysia({ normalize: true })
    .onError(({ code, error, request }) => {
      if (error instanceof ApiError) return errorResponse(error);
      // Errors thrown while parsing arrive wrapped in Elysia's ParseError.
      if (code === "PARSE" && (error as Error).cause instanceof ApiError) return errorResponse((error as Error).cause as ApiError);
      if (code === "VALIDATION" || error instanceof ValidationError) return errorResponse(validationError(error as ValidationError, request));
      if (code === "PARSE") return errorResponse(invalid("the body is not valid JSON"));
      if (code === "NOT_FOUND") {
        // A person who follows a wrong link gets a page; a program calling the API gets its JSON error.
        if (!isApiPath(new URL(request.url).pathname)) return notFoundPage(request);
        return errorResponse(new ApiError(404, "not_found", "no such route"));
      }
      if (code === "INVALID_COOKIE_SIGNATURE") return errorResponse(new ApiError(401, "unauthorized", "invalid cookie"));
      core.log.error("unhandled error", { method: request.method, path: new URL(request.url).pathname, error: String((error as Error)?.stack ?? error) });
      return errorResponse(new ApiError(500, "internal", "internal server error"));
    })
    .onTransform({ as: "global" }, ({ body, request }) => {
      // Every JSON body ao takes is an object. Elysia's normalisation would otherwise turn an array
      // or a bare value into an empty object, and a PATCH would answer 200 having done nothing.
      if (body === undefined || !request.headers.get("content-type")?.startsWith("application/json")) return;
      if (typeof body !== "object" || body === null || Array.isArray(body)) {
        throw invalid("the body must be a JSON object", [{ field: "(root)", message: "Expected object" }]);
      }
    })
    .onRequest(({ request }) => {
      // Body size is checked from the declared length before anything is read. Elysia's own JSON
      // parser then runs (a custom global parser would hide every request body from the OpenAPI document).
      const length = request.headers.get("content-length");
      if (length !== null) {
        if (Number(length) > limit && !RAW_UPLOAD.test(request.url)) throw payloadTooLarge(limit);
      } else if (request.headers.get("transfer-encoding") && request.headers.get("content-type")?.startsWith("application/json")) {
        throw new ApiError(411, "length_required", "JSON bodies must declare their Content-Length");
      }
    })
    .use(
      openapi({
        path: "/api/v1/docs",
        specPath: "/api/v1/openapi.json",
        // The reference page is docsModule's, with its own security policy.
        provider: null,
        documentation: {
          info: { title: "ao API", version: VERSION, description: "Task orchestration for AI coding agents. Errors: {error: {code, message, details?}}." },
          components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
          security: [{ bearer: [] }],
        },
      }),
    )
    .use(docsModule("ao API"))
    .use(healthModule());
  for (const mod of MODULES) app = app.use(mod(core)) as unknown as typeof app;
  return app;
}

function validationError(error: ValidationError, request: Request): ApiError {
  // Elysia checks coerced query numbers one property at a time ("property") and keeps only the
  // value: name the query parameter that carried it, when exactly one did.
  const propertyField = error.type === "property" ? queryFieldWithValue(request, error.value) : null;
  const details = error.all.map((e) => fieldError(e as Parameters<typeof fieldError>[0], propertyField ?? "(root)"));
  const where = error.type === "property" ? "query" : error.type;
  return invalid(`the request ${where} is invalid`, details);
}

function queryFieldWithValue(request: Request, value: unknown): string | null {
  const matches = [...new URL(request.url).searchParams].filter(([, v]) => v === String(value));
  return matches.length === 1 ? matches[0][0] : null;
}

export type App = ReturnType<typeof createApp>;
