// What a request may carry, decided from its method, path and headers before any body byte is read.
import type { Config } from "./core";
import { ApiError, payloadTooLarge } from "./errors";

/** The request's path, whatever its Host header made of the URL's authority. */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const q = url.indexOf("?", start);
  return q === -1 ? url.slice(start) : url.slice(start, q);
}

// Routes that read their raw body themselves, in a stream, and stop at their own limit; every
// other route takes JSON only, parsed whole by Elysia.
const ARTIFACT_UPLOAD = /^\/api\/v1\/worker\/tasks\/[^/]+\/artifacts\/[^/]+$/;
const INBOUND_HOOK = /^\/api\/v1\/hooks\/[^/]+$/;
// JSON in any case, with or without parameters: media types are case-insensitive (RFC 9110 §8.3.1).
const JSON_TYPE = /^application\/json[ \t]*(?=;|$)/i;

/** Whether a Content-Type header names JSON (application/json, any case, any parameters). */
export const isJsonType = (value: string | null | undefined): boolean => JSON_TYPE.test(value ?? "");

/**
 * Spells a JSON request's media type in lower case, its parameters kept: Elysia picks its JSON
 * parser by the lower-case spelling alone, and a body it does not parse would reach the route as
 * nothing (415 before this). Runs before routing, so every route and hook reads the one spelling.
 */
export function canonicalMediaType(request: Request): void {
  const type = request.headers.get("content-type");
  const media = type === null ? null : JSON_TYPE.exec(type);
  if (!media) return;
  const canonical = "application/json" + type!.slice(media[0].length);
  if (canonical !== type) request.headers.set("content-type", canonical);
}

/** The route that reads this request's raw body itself, with that route's limit, or null. */
function rawRoute(request: Request, config: Config): number | null {
  const path = pathOf(request.url);
  if (request.method === "PUT" && ARTIFACT_UPLOAD.test(path)) return config.artifactLimitBytes;
  if (request.method === "POST" && INBOUND_HOOK.test(path)) return config.jsonLimitBytes;
  return null;
}

/** Why this request's body is refused unread (from its declared length and framing), or null. */
export function bodyRefusal(request: Request, config: Config): ApiError | null {
  const length = request.headers.get("content-length");
  const raw = rawRoute(request, config);
  const limit = raw ?? config.jsonLimitBytes;
  if (length !== null && Number(length) > limit) return unread(payloadTooLarge(limit));
  if (raw === null && length === null && request.headers.get("transfer-encoding") !== null) {
    return unread(new ApiError(411, "length_required", "request bodies must declare their Content-Length"));
  }
  return null;
}

// The body was not read: closing the connection spares reading (and discarding) the rest of it.
const unread = (e: ApiError) => new ApiError(e.status, e.code, e.message, e.details, { ...e.headers, connection: "close" });

/**
 * Why a routed request's body is refused for its type, or null. Checked once the route is known (an
 * unknown path stays 404); the body, if read, was within the JSON limit.
 */
export function mediaTypeRefusal(request: Request, config: Config): ApiError | null {
  const length = request.headers.get("content-length");
  if (length === null || Number(length) === 0 || rawRoute(request, config) !== null) return null;
  if (isJsonType(request.headers.get("content-type"))) return null;
  return new ApiError(415, "unsupported_media_type", "request bodies must be JSON (Content-Type: application/json)");
}
