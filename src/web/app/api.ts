// The one API client of the web app (SPEC §4 web mode): every call goes through api() or
// apiResponse(). The access token lives in this module's memory only; the refresh token is the
// HttpOnly ao_refresh cookie, which scripts never see. Refreshes are single-flight in a tab and
// take turns across tabs (refresh tokens rotate on every use; a reused one ends the sign-in).
import type { Page, User } from "./types";

/** An answer of the API that is not 2xx, from its {error: {code, message, details}} body. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
    readonly retryAfterSec: number | null = null,
  ) {
    super(message);
  }
}

let accessToken: string | null = null;
let refreshing: Promise<User | null> | null = null;
/** Told when the session starts or ends (session.ts keeps the signed-in person as a signal). */
let onSession: (user: User | null, ended?: boolean) => void = () => {};
export function watchSession(listener: (user: User | null, ended?: boolean) => void) {
  onSession = listener;
}

async function failure(res: Response): Promise<ApiError> {
  let body: any = null;
  try {
    body = await res.json();
  } catch {}
  const e = body && typeof body === "object" ? body.error : null;
  const retry = Number(res.headers.get("retry-after"));
  return new ApiError(
    res.status,
    typeof e?.code === "string" ? e.code : `http_${res.status}`,
    typeof e?.message === "string" ? e.message : `the server answered ${res.status} ${res.statusText}`.trim(),
    e?.details,
    Number.isFinite(retry) && retry > 0 ? retry : null,
  );
}

async function send(path: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(`/api/v1${path}`, { credentials: "same-origin", ...init });
  } catch {
    throw new ApiError(0, "unreachable", "the server cannot be reached; check your connection and try again");
  }
}

/** Calls the API as the signed-in person and answers its parsed JSON (null for 204). */
export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await apiResponse(method, path, body);
  return (res.status === 204 ? null : await res.json()) as T;
}

/** Every item of a list of the API (pages of 200, at most `max`). */
export async function listAll<T>(path: string, max = 2000): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const page: Page<T> = await api("GET", `${path}${sep}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && items.length < max);
  return items;
}

/**
 * Calls the API and answers the successful Response itself (for files); a failure throws its
 * ApiError. An expired access token is renewed once through the refresh cookie, then the call
 * is repeated.
 */
export async function apiResponse(method: string, path: string, body?: unknown): Promise<Response> {
  const call = (token: string | null) => {
    const headers: Record<string, string> = {};
    if (token) headers.authorization = `Bearer ${token}`;
    if (body !== undefined) headers["content-type"] = "application/json";
    return send(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  };
  const used = accessToken;
  let res = await call(used);
  if (res.status === 401 && used) {
    // Another call may have renewed the token meanwhile; otherwise renew it now.
    if (accessToken === used && !(await refresh())) {
      throw new ApiError(401, "unauthorized", "your sign-in has ended; reload the page to sign in again");
    }
    res = await call(accessToken);
  }
  if (!res.ok) throw await failure(res);
  return res;
}

/** The current access token, for what cannot go through api(): the live socket's first message. */
export function currentAccessToken(): string | null {
  return accessToken;
}

/** The answer of a sign-in or a refresh. */
type SignedIn = { accessToken: string; user: User };

function signedIn(pair: SignedIn): User {
  accessToken = pair.accessToken;
  onSession(pair.user);
  return pair.user;
}

/** `ended`: the server ended the sign-in (revoked, expired), not the person. */
function signedOut(ended = false) {
  const had = accessToken !== null;
  accessToken = null;
  onSession(null, ended && had);
}

/** Renews the session from the ao_refresh cookie; null when there is none (or it was revoked). */
export function refresh(): Promise<User | null> {
  if (!refreshing) {
    refreshing = oneTabAtATime(async () => {
      const res = await send("/auth/refresh", { method: "POST", headers: { "x-client": "web" } });
      if (res.status === 401) {
        signedOut(true);
        return null;
      }
      if (!res.ok) throw await failure(res);
      return signedIn((await res.json()) as SignedIn);
    }).finally(() => {
      refreshing = null;
    });
  }
  return refreshing;
}

const LOCK = "ao-refresh";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `work` while no other tab of this origin runs it. A Web Lock where the browser has one
 * (secure contexts: https or localhost); on plain http (a LAN address, say) a best-effort lock:
 * a short-lived claim in localStorage (no secret, removed afterwards), confirmed after a pause.
 */
async function oneTabAtATime<R>(work: () => Promise<R>): Promise<R> {
  if (navigator.locks) return navigator.locks.request(LOCK, work) as Promise<R>;
  const me = Math.random().toString(36).slice(2);
  const holder = () => {
    try {
      return JSON.parse(localStorage.getItem(LOCK) ?? "null");
    } catch {
      return null;
    }
  };
  // Tabs opened together would all claim in the same instant: each starts at a random moment.
  await sleep(Math.random() * 60);
  // After 10 s (a tab closed while holding it) go ahead regardless.
  for (const giveUp = Date.now() + 10_000; Date.now() < giveUp; await sleep(40 + Math.random() * 60)) {
    const held = holder();
    if (held && held.until > Date.now()) continue;
    try {
      localStorage.setItem(LOCK, JSON.stringify({ me, until: Date.now() + 5_000 }));
    } catch {
      break; // storage refused (a private window, say): go ahead unlocked
    }
    // Another tab's claim reaches this one through the browser's storage, which under load took
    // longer than 30 ms (two tabs both refreshed, and the second revoked the sign-in as a reuse).
    await sleep(150);
    if (holder()?.me === me) break;
  }
  try {
    return await work();
  } finally {
    if (holder()?.me === me) localStorage.removeItem(LOCK);
  }
}

/** Password sign-in in web mode (the refresh token comes back as the HttpOnly cookie). */
export async function signIn(input: { email: string; password: string; code?: string }): Promise<User> {
  const res = await send("/auth/login", {
    method: "POST",
    headers: { "content-type": "application/json", "x-client": "web" },
    body: JSON.stringify(input),
  });
  if (!res.ok) throw await failure(res);
  return signedIn((await res.json()) as SignedIn);
}

export async function signOut(): Promise<void> {
  try {
    if (accessToken) await api("POST", "/auth/logout");
  } finally {
    signedOut();
  }
}

/**
 * Forgets this tab's sign-in without telling the server, which has already ended it (signing out
 * everywhere): a sign-out call with its token would only be refused (401).
 */
export function forgetSignIn() {
  signedOut();
}

/** The API's complaints about single fields of a refused body (validation_failed), by field. */
export function fieldErrors(err: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (err instanceof ApiError && err.code === "validation_failed" && Array.isArray(err.details)) {
    for (const d of err.details as { field?: unknown; message?: unknown }[]) {
      if (typeof d.field === "string" && typeof d.message === "string") out[d.field] ??= d.message;
    }
  }
  return out;
}

/**
 * A refusal's complaints about fields, split by whether the form shows the field: `fields` (by the
 * form's name for it, `fieldOf` mapping the API's) go beside their controls; `rest` names the
 * others in one sentence ("Please check: scopes: unknown field; ..."), or is null when there are
 * none. A conflict that names its field (details.field) counts as a complaint about it.
 */
export function complaints(err: unknown, shown: readonly string[], fieldOf: (apiField: string) => string = (f) => f): { fields: Record<string, string>; rest: string | null } {
  const fields: Record<string, string> = {};
  const others: string[] = [];
  for (const [f, m] of Object.entries(fieldErrors(err))) {
    const mine = fieldOf(f);
    if (shown.includes(mine)) fields[mine] ??= m;
    else others.push(`${f === "(root)" ? "the request" : f}: ${m}`);
  }
  const named = err instanceof ApiError && err.details && typeof (err.details as { field?: unknown }).field === "string" ? (err.details as { field: string }).field : null;
  let rest = others.length ? `Please check: ${others.join("; ")}${/[.!?]$/.test(others.at(-1)!) ? "" : "."}` : null;
  if (named) {
    if (shown.includes(fieldOf(named))) fields[fieldOf(named)] ??= errorText(err);
    // Its message says what is wrong with it ("a project with this name already exists").
    else rest ??= errorText(err);
  }
  return { fields, rest };
}

/** A readable sentence for an error of the API (or anything else thrown). */
export function errorText(err: unknown): string {
  if (!(err instanceof ApiError)) return err instanceof Error ? err.message : String(err);
  switch (err.code) {
    case "invalid_credentials":
      return "Wrong email or password.";
    case "invalid_two_factor_code":
      return "That two-factor code is not valid (each code works once). Try the next one.";
    case "rate_limited": {
      const minutes = err.retryAfterSec ? Math.ceil(err.retryAfterSec / 60) : null;
      return `Too many failed attempts. Try again ${minutes ? `in ${minutes} minute${minutes === 1 ? "" : "s"}` : "later"}.`;
    }
    case "validation_failed": {
      const fields = Object.entries(fieldErrors(err)).map(([f, m]) => `${f}: ${m}`);
      return fields.length ? `Please check: ${fields.join("; ")}.` : sentence(err.message);
    }
    default:
      return sentence(err.message);
  }
}

const sentence = (s: string) => (s ? s[0]!.toUpperCase() + s.slice(1) + (/[.!?]$/.test(s) ? "" : ".") : "Something went wrong.");
