// Credentials are checked before bodies (SPEC §1): a request without a valid credential learns
// nothing about a route's schema. Elysia parses and validates the body and query before the
// resolve hooks of the auth macros run, so every failure on the way there (malformed JSON, a body
// that is not an object, unknown fields, schema errors) reaches the app's error handler first.
// There, refusedCredential runs the route's credential checks and, when one refuses, that answer
// (401, or 403/404 for the wrong organization or role) replaces the body's 400.
//
// Each check runs at most once a request: its outcome is kept, so the route's resolve and the
// error handler share it (no second database read, no second failed attempt counted).
import { ApiError } from "./errors";
import { routeTable, type RouteLike } from "./route-table";

/** What a credential check reads of the request: the raw headers and path parameters. */
export interface CheckContext {
  request: Request;
  headers: Record<string, string | undefined>;
  params: Record<string, string | undefined>;
}

const outcomes = new WeakMap<Request, Map<object, Promise<unknown>>>();
const checks = new WeakSet<object>();

/** A macro's resolve that authenticates: memoised per request and findable by refusedCredential. */
export function credentialCheck<R>(check: (ctx: CheckContext) => Promise<R> | R) {
  // The fields are named: Elysia reads a hook's source to decide what each request must parse, and
  // a whole context would make every authenticated route parse its cookies and query string.
  const resolve = ({ request, headers, params }: CheckContext): Promise<R> => {
    let done = outcomes.get(request);
    if (!done) outcomes.set(request, (done = new Map()));
    let outcome = done.get(resolve) as Promise<R> | undefined;
    if (!outcome) done.set(resolve, (outcome = (async () => check({ request, headers, params }))()));
    return outcome;
  };
  checks.add(resolve);
  return resolve;
}

/** What the error handler knows of the failed request. */
export interface FailedRequest {
  request: Request;
  route?: string;
  headers?: Record<string, string | undefined>;
  params?: Record<string, string | undefined>;
}

/**
 * For the app's error handler: the refusal of the failed request's credential checks, or null when
 * the route has none or they pass. Routes are looked up by method and path pattern (Elysia sets
 * `route` on the context); the checks are the route's resolve hooks made by credentialCheck.
 */
export function credentialRefusal(routes: () => readonly RouteLike[]) {
  const checksOf = routeTable(routes, credentialChecks);
  return async (ctx: FailedRequest): Promise<ApiError | null> => {
    if (!ctx.route) return null;
    const routeChecks = checksOf(ctx.request.method, ctx.route);
    if (!routeChecks) return null;
    const input: CheckContext = {
      request: ctx.request,
      headers: ctx.headers ?? Object.fromEntries(ctx.request.headers),
      params: ctx.params ?? {},
    };
    for (const check of routeChecks) {
      try {
        await check(input);
      } catch (e) {
        if (e instanceof ApiError) return e;
        return null;
      }
    }
    return null;
  };
}

type CheckFn = (ctx: CheckContext) => Promise<unknown>;

/** The route's credential checks (its hooks made by credentialCheck), or null without any. */
function credentialChecks(route: RouteLike): CheckFn[] | null {
  const hooks = route.hooks?.beforeHandle;
  const list = (Array.isArray(hooks) ? hooks : hooks ? [hooks] : []) as { fn?: unknown }[];
  const found = list.map((h) => (typeof h === "function" ? h : h?.fn)).filter((f): f is CheckFn => typeof f === "function" && checks.has(f));
  return found.length ? found : null;
}
