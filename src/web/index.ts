// The web app's pages and assets (SPEC §11), embedded at build time, and how they are answered:
// strict security headers on every file, ETag revalidation instead of long caching (one small
// binary per LAN, no cache-busting names needed).
import { webAssets } from "./assets.macro" with { type: "macro" };
import type { EmbeddedFile } from "./assets.macro";

const embedded = webAssets();

export { APP_PATHS } from "./app/paths";

// Scripts and styles come only from this server, as files (no inline script or style); the pages
// call only this server's API; no other site may frame them (clickjacking the Approve buttons).
// Forms post to this server, and to `formTargets`: the code-hosting service, whose app manifest
// flow is a form the browser posts there (SPEC §10).
export function contentSecurityPolicy(formTargets: readonly string[] = []): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    ["form-action 'self'", ...formTargets].join(" "),
    "frame-ancestors 'none'",
  ].join("; ");
}

export const CONTENT_SECURITY_POLICY = contentSecurityPolicy();

export const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": CONTENT_SECURITY_POLICY,
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "x-content-type-options": "nosniff",
  "cross-origin-opener-policy": "same-origin",
  "cache-control": "no-cache",
};

function answer(file: EmbeddedFile, request: Request, csp = CONTENT_SECURITY_POLICY): Response {
  const headers = { ...SECURITY_HEADERS, "content-security-policy": csp, etag: file.etag, "content-type": file.type };
  if (request.headers.get("if-none-match") === file.etag) return new Response(null, { status: 304, headers });
  return new Response(request.method === "HEAD" ? null : file.body, { headers });
}

/** The app's HTML, the same at every page's path (the browser's router picks the page); `csp` as contentSecurityPolicy() made it. */
export function appResponse(request: Request, csp = CONTENT_SECURITY_POLICY): Response {
  return answer(embedded.pages.app!, request, csp);
}

/** An asset by file name, or null when there is none (the caller answers 404). */
export function assetResponse(name: string, request: Request): Response | null {
  const file = Object.hasOwn(embedded.assets, name) ? embedded.assets[name] : undefined;
  return file ? answer(file, request) : null;
}

/** Whether a path belongs to the API, whose unknown paths answer its JSON error instead of a page. */
export const isApiPath = (path: string) => path === "/api" || path.startsWith("/api/");

/** The 404 page, for a person who followed a wrong link to a path outside the API. */
export function notFoundPage(request: Request): Response {
  const file = embedded.pages["not-found"]!;
  return new Response(request.method === "HEAD" ? null : file.body, { status: 404, headers: { ...SECURITY_HEADERS, "content-type": file.type } });
}
