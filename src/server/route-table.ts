// What a global hook needs of each route, found by the request's method and the route's path
// pattern (Elysia sets `route` on the context). Read from app.routes once, at the first request,
// when every route is mounted. Used by credentials-first.ts and query.ts.

/** The parts of an Elysia route (app.routes) the global hooks read. */
export interface RouteLike {
  method: string;
  path: string;
  hooks?: Record<string, unknown>;
}

/**
 * A lookup of what `derive` makes of each route (routes it answers null for are left out). A HEAD
 * request is answered by its GET route (Elysia's), so it finds that route's value.
 */
export function routeTable<T>(routes: () => readonly RouteLike[], derive: (route: RouteLike) => T | null) {
  let index: Map<string, T> | null = null;
  return (method: string, route: string): T | undefined => {
    if (!index) {
      index = new Map();
      for (const r of routes()) {
        const value = derive(r);
        if (value !== null) index.set(`${r.method} ${r.path}`, value);
      }
    }
    return index.get(`${method} ${route}`) ?? (method === "HEAD" ? index.get(`GET ${route}`) : undefined);
  };
}
