// Query strings read strictly, on every route. Elysia reads an integer parameter with
// Number(): "1e1", "10.0", "+10", "0x10" and " 10" were all taken as a number. It keeps the last of a
// repeated parameter: ?limit=1&limit=2 listed 2, ?status=a&status=b filtered on b alone. And it drops
// a parameter the route does not declare: ?status=failed on a delivery log listed every delivery, and
// the caller believed it had filtered. Here, before the route's schema: an integer parameter is plain
// decimal digits (what the OpenAPI document says it is), a parameter that is not a list is given at
// most once, and a parameter the route does not declare is refused (a route without a query schema
// declares none). Each is 400 validation_failed naming the parameters; an unknown one's message names
// those the route takes. Left alone: a route whose query schema is open (additionalProperties: true:
// GitHub's browser redirects, where GitHub picks the parameters, and the web app's pages, whose
// router reads what it knows and ignores the rest, as any page does), and one that checks its query
// itself after a credential this check cannot see (checkedByRoute: an inbound hook's signature, the
// metrics token). The WebSocket upgrades never reach the routes: sockets.ts refuses their query.
import { ValueErrorType } from "@sinclair/typebox/errors";
import { ApiError, invalidRequest } from "./errors";
import { fieldMessage } from "../lib/field-messages";
import { routeTable, type RouteLike } from "./route-table";
import type { TObject } from "@sinclair/typebox";

/** How one declared parameter is read: an integer in digits, a list (may repeat), or one value. */
export type QueryKind = "integer" | "list" | "value";

type Schema = Record<string, any>;

/** The integer schema of a parameter: t.Integer itself, or Elysia's coercing union of a string and one. */
function integerOf(schema: Schema): Schema | null {
  if (schema.type === "integer") return schema;
  return (schema.anyOf as Schema[] | undefined)?.find((m) => m.type === "integer") ?? null;
}

const isList = (schema: Schema) => schema.type === "array" || (schema.anyOf as Schema[] | undefined)?.some((m) => m.type === "array") === true;

/** The kind of each parameter of a route's query schema (an object's properties), or null without one. */
export function queryKinds(schema: unknown): Record<string, QueryKind> | null {
  const properties = (schema as Schema | undefined)?.properties as Record<string, Schema> | undefined;
  if (!properties || Object.keys(properties).length === 0) return null;
  return Object.fromEntries(Object.entries(properties).map(([name, s]) => [name, integerOf(s) ? "integer" : isList(s) ? "list" : "value"]));
}

const DIGITS = /^[0-9]+$/;

/** What a route's query may hold: its parameters of each kind, and whether others are let through. */
export interface QueryRule {
  schema: Schema | null;
  kinds: Record<string, QueryKind>;
  open: boolean;
}

/** The rule of a route's query schema (none: no parameter at all). */
export function queryRule(schema: unknown): QueryRule {
  const s = (schema as Schema | undefined) ?? null;
  return { schema: s, kinds: queryKinds(s) ?? {}, open: s?.additionalProperties === true };
}

const ownChecks = new WeakSet<object>();

/**
 * Marks a route's query schema as checked by the route itself (ownQueryRefusal), after a credential
 * only the route can check: the global check would answer 400 before it, and tell a caller without
 * the credential what the route takes.
 */
export function checkedByRoute<T extends TObject>(schema: T): T {
  ownChecks.add(schema);
  return schema;
}

/** Why this URL's query is refused under a route's rule, or null. */
export function queryRefusal(url: string, rule: QueryRule): ApiError | null {
  const start = url.indexOf("?");
  if (start === -1) return null;
  const seen = new Set<string>();
  const faults = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(url.slice(start + 1))) {
    const kind = rule.kinds[name];
    if (faults.has(name)) continue;
    if (kind === undefined) {
      if (!rule.open) faults.set(name, unknownParameter(rule));
      continue;
    }
    if (kind === "list") continue;
    if (seen.has(name)) faults.set(name, "must be given once: it is not a list");
    else if (kind === "integer" && !DIGITS.test(value)) {
      const integer = integerOf(rule.schema!.properties[name])!;
      faults.set(name, `${fieldMessage({ type: ValueErrorType.Integer, schema: integer, value })}, in decimal digits only`);
    }
    seen.add(name);
  }
  if (faults.size === 0) return null;
  return invalidRequest("query", [...faults].map(([field, message]) => ({ field, message })));
}

function unknownParameter(rule: QueryRule): string {
  const names = Object.keys(rule.kinds);
  return names.length ? `is not a parameter of this route, which takes ${names.join(", ")}` : "is not a parameter of this route, which takes none";
}

/** For a route that checks its own query (checkedByRoute): the refusal of this request's, or null. */
export const ownQueryRefusal = (request: Request, schema: TObject): ApiError | null => queryRefusal(request.url, queryRule(schema));

/** The refusal of any query parameter at all, for what takes none and has no route (a WebSocket upgrade), or null. */
export const anyQueryRefusal = (request: Request): ApiError | null => queryRefusal(request.url, queryRule(undefined));

/** The routes whose query is checked here: all but those that check their own (checkedByRoute). */
const isChecked = (route: RouteLike) => !ownChecks.has(route.hooks?.query as object);

/**
 * For a global transform hook: the refusal of a routed request's query, or null. Routes are looked
 * up by method and path pattern (Elysia's `route`); their query schemas are read once, at the first
 * request, when every route is mounted.
 */
export function queryCheck(routes: () => readonly RouteLike[]) {
  const ruleOf = routeTable(routes, (r) => (isChecked(r) ? queryRule(r.hooks?.query) : null));
  return (request: Request, route: string | undefined): ApiError | null => {
    if (!route || request.url.indexOf("?") === -1) return null;
    const rule = ruleOf(request.method, route);
    return rule ? queryRefusal(request.url, rule) : null;
  };
}
