// The API reference page (/api/v1/docs): Scalar's viewer, served from this executable with a
// strict Content-Security-Policy. It sits on the web app's origin, where the refresh cookie
// lives, so it may load nothing from elsewhere: no CDN script, no web fonts, none of Scalar's
// cloud features (its AI agent, MCP generator, developer tools with "Deploy", telemetry).
import { Elysia, t } from "elysia";
import { CONTENT_SECURITY_POLICY, SECURITY_HEADERS } from "../web";
import scalarScript from "../../vendor/scalar/scalar.standalone.js" with { type: "file" };

/** The vendored version (see vendor/scalar/README.md). */
const SCALAR_VERSION = "1.72.1";
const SCALAR_SCRIPT_PATH = `/api/v1/docs/scalar.js?v=${SCALAR_VERSION}`;
const SCALAR_HEADERS = { "content-type": "text/javascript; charset=utf-8", "cache-control": "public, max-age=31536000, immutable" };

// Run before Scalar: its copy of zod probes whether eval is allowed (Function("")), which the
// policy forbids and reports as a violation; "jitless" tells zod not to compile and not to probe.
const SETUP_SCRIPT = "globalThis.__zod_globalConfig = { jitless: true };\n";

const CONFIGURATION = {
  url: "/api/v1/openapi.json",
  withDefaultFonts: false,
  hideClientButton: true,
  showDeveloperTools: "never",
  agent: { disabled: true },
  mcp: { disabled: true },
  telemetry: false,
};

/**
 * As the web app's policy, except for inline styles: Scalar's components add <style> elements and
 * style attributes of their own (a nonce covers only its main stylesheet). Scripts stay files of
 * this server, without eval.
 */
export const DOCS_POLICY = CONTENT_SECURITY_POLICY.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'") + "; font-src 'self'";

const escapeAttribute = (s: string) => s.replace(/&/g, "&amp;").replace(/'/g, "&#39;").replace(/</g, "&lt;");

function page(title: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeAttribute(title)}</title>
<link rel="icon" href="/assets/icon.svg" type="image/svg+xml">
</head>
<body>
<script id="api-reference" type="application/json" data-configuration='${escapeAttribute(JSON.stringify(CONFIGURATION))}'></script>
<script src="/api/v1/docs/setup.js"></script>
<script src="${SCALAR_SCRIPT_PATH}"></script>
</body>
</html>
`;
}

const PAGE_HEADERS = { ...SECURITY_HEADERS, "content-security-policy": DOCS_POLICY, "content-type": "text/html; charset=utf-8" };

export function docsModule(title: string) {
  const html = page(title);
  return new Elysia({ name: "docs" })
    .get(
      "/api/v1/docs",
      ({ request }) => new Response(request.method === "HEAD" ? null : html, { headers: PAGE_HEADERS }),
      { detail: { hide: true } },
    )
    .get("/api/v1/docs/setup.js", () => new Response(SETUP_SCRIPT, { headers: { ...SECURITY_HEADERS, "content-type": "text/javascript; charset=utf-8" } }), { detail: { hide: true } })
    // ?v= is the page's cache buster (SCALAR_SCRIPT_PATH): the script is cached for a year.
    .get("/api/v1/docs/scalar.js", () => new Response(Bun.file(scalarScript), { headers: SCALAR_HEADERS }), { query: t.Object({ v: t.Optional(t.String()) }), detail: { hide: true } });
}
