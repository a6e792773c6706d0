// How the stand-in's API answers: GitHub's headers (the rate-limit ones count the requests so
// far), its error bodies and messages, and paging with a Link header. Also the HTML header of
// the web side and request bodies, JSON or form-encoded.
import { randomUUID } from "node:crypto";
import type { Json, World } from "./world";

const DOCS = "https://docs.github.com/rest";

export const HTML = { "content-type": "text/html; charset=utf-8" };

/** The API's answers for `w`: their headers carry its request count and links its host. */
export function answers(w: Pick<World, "used" | "apiUrl">) {
  // ---- answers -------------------------------------------------------------------------

  function apiHeaders(extra: Record<string, string> = {}): Record<string, string> {
    const reset = Math.floor(Date.now() / 1000) + 3600;
    return {
      "content-type": "application/json; charset=utf-8",
      "x-github-media-type": "github.v3; format=json",
      "x-github-request-id": randomUUID().toUpperCase().slice(0, 23),
      "x-ratelimit-limit": "5000",
      "x-ratelimit-remaining": String(Math.max(0, 5000 - w.used)),
      "x-ratelimit-used": String(w.used),
      "x-ratelimit-reset": String(reset),
      "x-ratelimit-resource": "core",
      ...extra,
    };
  }

  const json = (status: number, body: Json, extra: Record<string, string> = {}) =>
    new Response(status === 204 ? null : JSON.stringify(body), { status, headers: apiHeaders(extra) });
  const error = (status: number, message: string, more: Json = {}) =>
    json(status, { message, documentation_url: DOCS, status: String(status), ...more });
  const badCredentials = () => error(401, "Bad credentials");
  const notFound = () => error(404, "Not Found");
  const notAccessible = () => error(403, "Resource not accessible by integration");
  const validation = (errors: Json[], message = "Validation Failed") => error(422, message, { errors });

  /** Pages `items` as GitHub does: per_page (max 100, default 30), page, and a Link header. */
  function paged(req: Request, items: Json[], wrap?: (page: Json[]) => Json): Response {
    const u = new URL(req.url);
    const perPage = Math.min(100, Math.max(1, parseInt(u.searchParams.get("per_page") ?? "30", 10) || 30));
    const page = Math.max(1, parseInt(u.searchParams.get("page") ?? "1", 10) || 1);
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const slice = items.slice((page - 1) * perPage, page * perPage);
    const link = (p: number, rel: string) => {
      const v = new URL(u.pathname, w.apiUrl.replace(/\/api\/v3$/, ""));
      for (const [k, val] of u.searchParams) v.searchParams.set(k, val);
      v.searchParams.set("per_page", String(perPage));
      v.searchParams.set("page", String(p));
      return `<${v}>; rel="${rel}"`;
    };
    const links: string[] = [];
    if (page > 1) links.push(link(page - 1, "prev"));
    if (page < last) links.push(link(page + 1, "next"), link(last, "last"));
    if (page > 1) links.push(link(1, "first"));
    return json(200, wrap ? wrap(slice) : slice, links.length ? { link: links.join(", ") } : {});
  }

  return { apiHeaders, json, error, badCredentials, notFound, notAccessible, validation, paged };
}

export async function body(req: Request): Promise<Json> {
  const text = await req.text();
  if (!text) return {};
  const type = req.headers.get("content-type") ?? "";
  if (type.includes("application/x-www-form-urlencoded")) return Object.fromEntries(new URLSearchParams(text));
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}
