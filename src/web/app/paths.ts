// The addresses of the web app's pages (SPEC §11), shared by the server (which answers the app's
// HTML at each of them and the 404 page anywhere else) and the browser's router. Plain data: the
// server imports this file, so it must not touch the DOM.

/** Every page's path pattern; `:name` is one segment. */
export const APP_PATHS = [
  "/",
  "/setup",
  "/device",
  "/pair",
  "/tasks",
  "/tasks/:taskId",
  "/tasks/:taskId/artifacts/:name",
  "/projects",
  "/projects/:projectId",
  "/workers",
  "/integrations",
  "/github",
  "/settings",
  "/account",
  "/admin",
] as const;

export type AppPath = (typeof APP_PATHS)[number];

/** The pattern a path matches and its parameters (decoded), or null for no page. */
export function matchPath(path: string): { pattern: AppPath; params: Record<string, string> } | null {
  const parts = path.replace(/\/+$/, "").split("/").slice(1);
  for (const pattern of APP_PATHS) {
    const want = pattern.split("/").slice(1).filter((p, i) => p !== "" || i > 0);
    if (pattern === "/" ? parts.length !== 0 : want.length !== parts.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (const [i, w] of want.entries()) {
      if (w.startsWith(":")) {
        try {
          params[w.slice(1)] = decodeURIComponent(parts[i]!);
        } catch {
          ok = false;
        }
      } else if (w !== parts[i]) ok = false;
    }
    if (ok) return { pattern, params };
  }
  return null;
}
