// The SPEC's error format: {"error": {"code", "message", "details"?}} on every non-2xx answer.
import { t } from "elysia";
import { fieldMessage } from "../lib/field-messages";
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
 * as a dotted path, and what it accepts in words (lib/field-messages.ts).
 */
export function fieldError(e: { path?: string; message?: string; schema?: unknown; type?: number; value?: unknown }, fallbackField = "(root)") {
  return {
    field: e.path ? e.path.replace(/^\//, "").replaceAll("/", ".") || "(root)" : fallbackField,
    message: fieldMessage(e),
  };
}

/** The details of schema errors, one per field: TypeBox reports each failed keyword ("" fails minLength and format alike). */
export function fieldErrors(errors: Iterable<Parameters<typeof fieldError>[0]>, fallbackField = "(root)") {
  const seen = new Set<string>();
  const out: ReturnType<typeof fieldError>[] = [];
  for (const e of errors) {
    const d = fieldError(e, fallbackField);
    if (seen.has(d.field)) continue;
    seen.add(d.field);
    out.push(d);
  }
  return out;
}

/** validation_failed for a request's body, query or params (`where`), naming the fields that failed. */
export function invalidRequest(where: string, details: ReturnType<typeof fieldErrors>): ApiError {
  // The message alone (what the web app shows) says what to fix when there is little to say.
  const said = details.length <= 3 ? `: ${details.map((d) => `${d.field} ${d.message}`).join("; ")}` : ` (${details.map((d) => d.field).join(", ")})`;
  return invalid(`the request ${where} is invalid${said}`, details);
}

/** Every JSON body ao takes is an object: an array, a string or null is refused as a whole. */
const notAnObject = () => invalid("the body must be a JSON object", [{ field: "(root)", message: "Expected object" }]);

/** Throws notAnObject() unless the parsed JSON body is an object (not an array, a bare value or null). */
export function requireJsonObject(body: unknown): asserts body is Record<string, unknown> {
  if (typeof body !== "object" || body === null || Array.isArray(body)) throw notAnObject();
  if (nestsTooDeep(body)) throw tooDeep();
}

/**
 * How deep a JSON body's objects and arrays may nest. Far more than any of ao's bodies need (a
 * policy, an event's data); JSON.parse takes any depth, but writing a value 100,000 levels deep
 * back out overflows the stack.
 */
export const MAX_JSON_DEPTH = 64;

export const tooDeep = () => invalid(`the body nests objects and arrays more than ${MAX_JSON_DEPTH} levels deep`);

/**
 * Whether a parsed JSON value nests objects and arrays more than MAX_JSON_DEPTH levels deep. It
 * recurses at most that deep, and allocates nothing (it runs on every worker message).
 */
export function nestsTooDeep(value: object, depth = 1): boolean {
  if (depth > MAX_JSON_DEPTH) return true;
  if (Array.isArray(value)) {
    for (const child of value) if (child !== null && typeof child === "object" && nestsTooDeep(child, depth + 1)) return true;
  } else {
    for (const key in value) {
      const child = (value as Record<string, unknown>)[key];
      if (child !== null && typeof child === "object" && nestsTooDeep(child, depth + 1)) return true;
    }
  }
  return false;
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

export const insufficientStorage = (what = "the server's disk is full") =>
  new ApiError(507, "insufficient_storage", `${what}; try again once space is freed`);

/**
 * True for a write that failed because the disk (or the database file's quota) is full: ENOSPC or
 * EDQUOT from the file system, SQLITE_FULL from SQLite (which maps the same errnos to it).
 */
export function isStorageFull(err: unknown): boolean {
  const e = err as { code?: unknown; errno?: unknown; message?: unknown } | null;
  if (!e || typeof e !== "object") return false;
  if (e.code === "ENOSPC" || e.code === "EDQUOT" || e.code === "SQLITE_FULL") return true;
  return typeof e.message === "string" && /database or disk is full|no space left on device/i.test(e.message);
}

/**
 * True for a write PostgreSQL refused for a NUL character (U+0000) in a text value (SQLSTATE 22021;
 * SQLite stores one). The request's schemas refuse NULs where they know the field; this is the net
 * for any they miss: the request's to fix, not a 500.
 */
export function isUnstorableText(err: unknown): boolean {
  const e = err as { errno?: unknown } | null;
  return !!e && typeof e === "object" && e.errno === "22021";
}

/**
 * True when PostgreSQL cannot be reached or is going away: Bun's client could not connect or lost
 * its connection, or the server is shutting down, starting or out of connections (SQLSTATE class
 * 08 and 57P01-57P03, 53300). The operator's to fix or wait out, not a bug: 503, not 500.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = err as { name?: unknown; code?: unknown; errno?: unknown } | null;
  if (!e || typeof e !== "object") return false;
  if (typeof e.code === "string" && /^ERR_POSTGRES_(CONNECTION_|IDLE_TIMEOUT|LIFETIME_TIMEOUT|CONNECTION_TIMEOUT)/.test(e.code)) return true;
  return typeof e.errno === "string" && /^(08...|57P0[123]|53300)$/.test(e.errno);
}

export const databaseUnavailable = () =>
  new ApiError(503, "unavailable", "the database cannot be reached; try again shortly", undefined, { "Retry-After": "5" });

export const unstorableText = () => invalid("a text of the request holds a NUL character (U+0000), which cannot be stored");

type ErrorLog = (message: string, fields: Record<string, unknown>) => void;

/**
 * The answer to an error the store threw, the same on HTTP and on the worker socket: a NUL it cannot
 * hold (400), a full disk (507) and an unreachable database (503) are the operator's or the
 * caller's, not bugs; each logs one line under one cause, so an outage or a full disk writes a line
 * a minute (log.ts). Anything else is a 500 whose stack is logged. `where` names the request.
 */
export function storeFailure(error: unknown, logError: ErrorLog, where: Record<string, unknown>): ApiError {
  if (isUnstorableText(error)) return unstorableText();
  if (isStorageFull(error)) {
    logError("a write failed: the disk is full", { cause: String((error as { code?: string }).code ?? "ENOSPC"), ...where });
    return insufficientStorage();
  }
  if (isDatabaseUnavailable(error)) {
    const e = error as { code?: string; errno?: string; message?: string };
    logError("the database cannot be reached", { cause: "database_unavailable", error: `${e.code ?? e.errno}: ${e.message ?? error}` });
    return databaseUnavailable();
  }
  logError("unhandled error", { ...where, error: String((error as Error)?.stack ?? error) });
  return new ApiError(500, "internal", "internal server error");
}

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
