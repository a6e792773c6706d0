// Query strings read strictly, for every route that declares its query. Elysia reads an integer
// parameter with Number(): "1e1", "10.0", "+10", "0x10" and " 10" were all taken as a number. And
// it keeps the last of a repeated parameter: ?limit=1&limit=2 listed 2, ?status=a&status=b filtered
// on b alone. Here, before the route's schema: an integer parameter is plain decimal digits (what
// the OpenAPI document says it is), and a parameter that is not a list is given at most once.
// Either is 400 validation_failed naming the parameters. Undeclared parameters stay ignored.
import { ValueErrorType } from "@sinclair/typebox/errors";
import { ApiError, invalidRequest } from "./errors";
import { fieldMessage } from "./field-messages";
import { routeTable, type RouteLike } from "./route-table";

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

/** Why this URL's query is refused under a route's query schema, or null. */
export function queryRefusal(url: string, schema: Schema, kinds: Record<string, QueryKind>): ApiError | null {
  const start = url.indexOf("?");
  if (start === -1) return null;
  const seen = new Set<string>();
  const faults = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(url.slice(start + 1))) {
    const kind = kinds[name];
    if (kind === undefined || kind === "list" || faults.has(name)) continue;
    if (seen.has(name)) faults.set(name, "must be given once: it is not a list");
    else if (kind === "integer" && !DIGITS.test(value)) {
      const integer = integerOf(schema.properties[name])!;
      faults.set(name, `${fieldMessage({ type: ValueErrorType.Integer, schema: integer, value })}, in decimal digits only`);
    }
    seen.add(name);
  }
  if (faults.size === 0) return null;
  return invalidRequest("query", [...faults].map(([field, message]) => ({ field, message })));
}

/**
 * For a global transform hook: the refusal of a routed request's query, or null. Routes are looked
 * up by method and path pattern (Elysia's `route`); their query schemas are read once, at the first
 * request, when every route is mounted.
 */
export function queryCheck(routes: () => readonly RouteLike[]) {
  const queryOf = routeTable(routes, (r) => {
    const kinds = queryKinds(r.hooks?.query);
    return kinds && { schema: r.hooks!.query as Schema, kinds };
  });
  return (request: Request, route: string | undefined): ApiError | null => {
    if (!route || request.url.indexOf("?") === -1) return null;
    const found = queryOf(request.method, route);
    return found ? queryRefusal(request.url, found.schema, found.kinds) : null;
  };
}
