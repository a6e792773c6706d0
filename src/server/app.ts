// Composes the feature modules into one Elysia app. No listen here: serve.ts does that.
import { Elysia, ValidationError } from "elysia";
import { openapi } from "@elysiajs/openapi";
import type { Core } from "./core";
import { ApiError, errorResponse, invalid, payloadTooLarge } from "./errors";
import { VERSION } from "../version";
import { healthModule } from "../modules/health";
import { MODULES } from "./modules";

export function createApp(core: Core) {
  const limit = core.config.jsonLimitBytes;
  let app = new Elysia({ normalize: true })
    .onError(({ code, error, request }) => {
      if (error instanceof ApiError) return errorResponse(error);
      // Errors thrown while parsing arrive wrapped in Elysia's ParseError.
      if (code === "PARSE" && (error as Error).cause instanceof ApiError) return errorResponse((error as Error).cause as ApiError);
      if (code === "VALIDATION" || error instanceof ValidationError) return errorResponse(validationError(error as ValidationError));
      if (code === "PARSE") return errorResponse(invalid("the body is not valid JSON"));
      if (code === "NOT_FOUND") return errorResponse(new ApiError(404, "not_found", "no such route"));
      if (code === "INVALID_COOKIE_SIGNATURE") return errorResponse(new ApiError(401, "unauthorized", "invalid cookie"));
      core.log.error("unhandled error", { method: request.method, path: new URL(request.url).pathname, error: String((error as Error)?.stack ?? error) });
      return errorResponse(new ApiError(500, "internal", "internal server error"));
    })
    .onParse(async ({ request, contentType, route }) => {
      // Inbound webhooks verify a signature over the exact bytes first: that route reads its raw body itself.
      if (route === "/api/v1/hooks/:id") return;
      // JSON bodies are read here so the size limit and malformed JSON get the SPEC's errors.
      if (!contentType?.startsWith("application/json")) return;
      const declared = Number(request.headers.get("content-length") ?? "0");
      if (declared > limit) throw payloadTooLarge(limit);
      const text = await request.text();
      if (text.length > limit && Buffer.byteLength(text) > limit) throw payloadTooLarge(limit);
      if (text.trim() === "") return {};
      try {
        return JSON.parse(text);
      } catch {
        throw invalid("the body is not valid JSON");
      }
    })
    .use(
      openapi({
        path: "/api/v1/docs",
        specPath: "/api/v1/openapi.json",
        documentation: {
          info: { title: "ao API", version: VERSION, description: "Task orchestration for AI coding agents. Errors: {error: {code, message, details?}}." },
          components: { securitySchemes: { bearer: { type: "http", scheme: "bearer" } } },
          security: [{ bearer: [] }],
        },
      }),
    )
    .use(healthModule());
  for (const mod of MODULES) app = app.use(mod(core)) as unknown as typeof app;
  return app;
}

function validationError(error: ValidationError): ApiError {
  const details = error.all.map((e) => ({
    field: "path" in e && e.path ? e.path.replace(/^\//, "").replaceAll("/", ".") || "(root)" : "(root)",
    message: "message" in e ? e.message : "invalid value",
  }));
  const where = error.type === "body" ? "body" : error.type;
  return invalid(`the request ${where} is invalid`, details);
}

export type App = ReturnType<typeof createApp>;
