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
// Lower case only: Elysia parses no other spelling, and a body it does not parse would reach the
// route as nothing.
const JSON_TYPE = /^application\/json\s*(;|$)/;

/** Why this request's body is refused unread, or null when it may be read. */
export function bodyRefusal(request: Request, config: Config): ApiError | null {
  const length = request.headers.get("content-length");
  const chunked = length === null && request.headers.get("transfer-encoding") !== null;
  const path = pathOf(request.url);
  const raw =
    request.method === "PUT" && ARTIFACT_UPLOAD.test(path)
      ? config.artifactLimitBytes
      : request.method === "POST" && INBOUND_HOOK.test(path)
        ? config.jsonLimitBytes
        : null;
  if (raw !== null) return length !== null && Number(length) > raw ? payloadTooLarge(raw) : null;
  if (chunked) return new ApiError(411, "length_required", "request bodies must declare their Content-Length");
  if (length === null || Number(length) === 0) return null;
  if (Number(length) > config.jsonLimitBytes) return payloadTooLarge(config.jsonLimitBytes);
  if (!JSON_TYPE.test(request.headers.get("content-type") ?? "")) {
    return new ApiError(415, "unsupported_media_type", "request bodies must be JSON (Content-Type: application/json)");
  }
  return null;
}
