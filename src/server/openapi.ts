// The API's OpenAPI document (GET /api/v1/openapi.json), made from the routes' schemas by
// @elysiajs/openapi's generator when first asked for, and kept while the routes stay the same.
// Only the generator is imported: the plugin's index also carries the Scalar and Swagger pages and
// the Zod and Valibot converters (150 kB of the bundle every command loads at start), and ao serves
// its reference page itself (docs.ts).
import { Elysia, type AnyElysia } from "elysia";
import { toOpenAPISchema } from "@elysiajs/openapi/openapi";
import { VERSION } from "../version";

const OPENAPI_VERSION = "3.1.2";

const DOCUMENTATION = {
  info: {
    title: "ao API",
    version: VERSION,
    description:
      "Task orchestration for AI coding agents. Errors: {error: {code, message, details?}}. " +
      "Any write may answer 507 insufficient_storage while the server's disk is full. " +
      "Request bodies are JSON (Content-Type application/json, in any case, parameters allowed) with a Content-Length, at most 1 MiB (artifact uploads and inbound hooks excepted): " +
      "411 length_required without a length, 413 payload_too_large past it, 415 unsupported_media_type for another type; " +
      "a JSON body is UTF-8: other bytes are 400 validation_failed and nothing is written. " +
      "A query parameter an operation does not list is 400 validation_failed naming it and the ones it takes, after the credential check (GitHub's redirects back to ao excepted; /metrics and the WebSocket upgrades, which take none, included; the web app's pages, not in this document, take any and ignore what they do not read); so is a repeated one, and an integer in anything but decimal digits. " +
      "Past the connections one client address may hold: 429 rate_limited.",
  },
  components: {
    securitySchemes: {
      bearer: { type: "http", scheme: "bearer", description: "An access token from sign-in, or a personal API token (aot_...)" },
      worker: { type: "http", scheme: "bearer", description: "A worker credential (aow_...), from pairing" },
      metricsToken: { type: "http", scheme: "bearer", description: "AO_METRICS_TOKEN" },
    },
  },
  security: [{ bearer: [] }],
};

/** The route of the document of `app()`'s routes (the app as composed when the document is asked for). */
export function openapiModule(app: () => AnyElysia) {
  let cached: { routes: number; document: object } | undefined;
  return new Elysia({ name: "openapi" }).get(
    "/api/v1/openapi.json",
    function openAPISchema() {
      const routes = app().routes.length;
      if (cached?.routes !== routes) {
        const { paths, components } = toOpenAPISchema(app(), undefined, undefined, undefined, OPENAPI_VERSION);
        jsonBodiesOnly(paths as Parameters<typeof jsonBodiesOnly>[0]);
        integerParameters(paths as Parameters<typeof integerParameters>[0]);
        const document = {
          ...DOCUMENTATION,
          openapi: OPENAPI_VERSION,
          paths,
          components: { ...DOCUMENTATION.components, schemas: components.schemas },
        };
        cached = { routes, document };
      }
      return cached.document;
    },
    { detail: { hide: true } },
  );
}

/**
 * The generator offers every body as JSON, a form and multipart alike; ao takes JSON only (415
 * otherwise, limits.ts), so the document says that alone.
 */
function jsonBodiesOnly(paths: Record<string, Record<string, { requestBody?: { content?: Record<string, unknown> } } | undefined> | undefined>) {
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations ?? {})) {
      const content = operation?.requestBody?.content;
      if (operation?.requestBody && content?.["application/json"]) operation.requestBody.content = { "application/json": content["application/json"] };
    }
  }
}

type Parameter = { in?: string; schema?: { anyOf?: Record<string, unknown>[] } & Record<string, unknown> };

/**
 * Elysia's t.Integer is a union of a string of format "integer" (default 0) and the integer, so
 * that a query's text can be coerced; the generator documents both, the string with a default of 0.
 * A query's integer is decimal digits only (query.ts): the document says integer alone, with its
 * range and default.
 */
function integerParameters(paths: Record<string, Record<string, { parameters?: Parameter[] } | undefined> | undefined>) {
  for (const operations of Object.values(paths)) {
    for (const operation of Object.values(operations ?? {})) {
      for (const parameter of operation?.parameters ?? []) {
        if (parameter.in !== "query") continue;
        const members = parameter.schema?.anyOf;
        const integer = members?.find((m) => m.type === "integer");
        if (integer && members!.every((m) => m === integer || (m.type === "string" && m.format === "integer"))) parameter.schema = integer;
      }
    }
  }
}
