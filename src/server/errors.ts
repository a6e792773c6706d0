// The SPEC's error format: {"error": {"code", "message", "details"?}} on every non-2xx answer.
import { t } from "elysia";
import { LINE_MESSAGE } from "../lib/text";
import { REF_MESSAGE } from "../lib/refname";
export class ApiError extends Error {
  constructor(
    public readonly status: number,
    public readonly code: string,
    message: string,
    public readonly details?: unknown,
    public readonly headers?: Record<string, string>,
  ) {
    super(message);
  }

  toBody() {
    return { error: { code: this.code, message: this.message, ...(this.details === undefined ? {} : { details: this.details }) } };
  }
}

/**
 * A detail of validation_failed from a schema error (TypeBox's, also inside Elysia's): the field
 * as a dotted path, the reason in words.
 */
export function fieldError(e: { path?: string; message?: string; schema?: unknown }, fallbackField = "(root)") {
  const format = (e.schema as { format?: unknown } | undefined)?.format;
  return {
    field: e.path ? e.path.replace(/^\//, "").replaceAll("/", ".") || "(root)" : fallbackField,
    message: format === "line" ? LINE_MESSAGE : format === "git-ref" ? REF_MESSAGE : (e.message ?? "invalid value"),
  };
}

export const notFound = (what = "resource") => new ApiError(404, "not_found", `${what} not found`);
export const forbidden = (message = "you do not have permission to do this") => new ApiError(403, "forbidden", message);
export const unauthorized = (message = "missing or invalid credentials") => new ApiError(401, "unauthorized", message);
export const conflict = (message: string, details?: unknown) => new ApiError(409, "conflict", message, details);
export const invalid = (message: string, details?: unknown) => new ApiError(400, "validation_failed", message, details);
export const rateLimited = (retryAfterSec: number) =>
  new ApiError(429, "rate_limited", "too many failed attempts; try again later", { retryAfterSec }, { "Retry-After": String(retryAfterSec) });
export const payloadTooLarge = (limit: number) =>
  new ApiError(413, "payload_too_large", `body is larger than the limit of ${limit} bytes`, { limit });

export function errorResponse(err: ApiError): Response {
  return new Response(JSON.stringify(err.toBody()), {
    status: err.status,
    headers: { "content-type": "application/json; charset=utf-8", ...err.headers },
  });
}

// The error format as a schema, for the OpenAPI document. Routes list the statuses they answer
// with; the list documents, it does not validate (errors are thrown, never returned).
export const ErrorBody = t.Object(
  { error: t.Object({ code: t.String(), message: t.String(), details: t.Optional(t.Unknown()) }) },
  { description: "The error format of every non-2xx answer" },
);

/** `{401: ErrorBody, ...}` for a route's `response` map. */
export const errorAnswers = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, ErrorBody])) as Record<number, typeof ErrorBody>;

/** detail.responses of a route that answers 204 with no body, and its error statuses. */
export const noContentDoc = (description: string, ...statuses: number[]) => ({
  204: { description },
  ...Object.fromEntries(statuses.map((s) => [s, { description: `error (${s})`, content: { "application/json": { schema: ErrorBody } } }])),
});
