// The address as a signal, and moving between pages without reloading: a click on a link of
// this app (a plain <a href>) is turned into history.pushState; back and forward work as usual.
import { signal } from "@preact/signals";

export interface Address {
  path: string;
  query: URLSearchParams;
}

const read = (): Address => ({ path: location.pathname, query: new URLSearchParams(location.search) });
export const address = signal<Address>(read());

/** Goes to `href` (same origin) without a reload; `replace` keeps the history entry. */
export function navigate(href: string, opts: { replace?: boolean } = {}) {
  const url = new URL(href, location.href);
  if (url.origin !== location.origin) return void location.assign(href);
  const next = url.pathname + url.search + url.hash;
  if (next === location.pathname + location.search + location.hash) return;
  if (opts.replace) history.replaceState(null, "", next);
  else history.pushState(null, "", next);
  const moved = url.pathname !== address.value.path;
  address.value = read();
  if (moved && !opts.replace) window.scrollTo(0, 0);
}

/** Sets query parameters of the current address (empty values removed), replacing the entry. */
export function setQuery(values: Record<string, string | null | undefined>) {
  const q = new URLSearchParams(location.search);
  for (const [k, v] of Object.entries(values)) {
    if (v) q.set(k, v);
    else q.delete(k);
  }
  const s = q.toString();
  navigate(`${location.pathname}${s ? `?${s}` : ""}`, { replace: true });
}

/** Pages of the API and files are not this app's: they load as usual. */
const outside = (path: string) => path === "/api" || path.startsWith("/api/") || path.startsWith("/assets/");

export function startRouter() {
  window.addEventListener("popstate", () => {
    address.value = read();
  });
  document.addEventListener("click", (event) => {
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    const a = (event.target as Element | null)?.closest?.("a");
    if (!a || !a.href || a.target || a.hasAttribute("download")) return;
    const url = new URL(a.href);
    if (url.origin !== location.origin || outside(url.pathname)) return;
    event.preventDefault();
    navigate(url.pathname + url.search + url.hash);
  });
}
