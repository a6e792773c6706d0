// @ts-check
// What every page shares: the API client and the web session (SPEC §4 web mode); the page
// helpers built on them (sign-in form, code entry, DOM) are in ui.js. The access token lives in
// this module's memory only; the refresh token is the HttpOnly ao_refresh cookie, which page
// scripts never see.

/** @typedef {{ id: string, email: string, name: string, isAdmin: boolean, twoFactorEnabled: boolean, createdAt: string }} User */

/** An answer of the API that is not 2xx, from its {error: {code, message, details}} body. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {string} code
   * @param {string} message
   * @param {unknown} [details]
   * @param {number | null} [retryAfterSec]
   */
  constructor(status, code, message, details, retryAfterSec = null) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
    this.retryAfterSec = retryAfterSec;
  }
}

/** @type {string | null} */
let accessToken = null;
/** @type {User | null} */
let currentUser = null;
/** @type {Promise<User | null> | null} */
let refreshing = null;

/** @param {Response} res */
async function failure(res) {
  /** @type {any} */
  let body = null;
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

/**
 * @param {string} path under /api/v1
 * @param {RequestInit} init
 */
async function send(path, init) {
  try {
    return await fetch(`/api/v1${path}`, { credentials: "same-origin", ...init });
  } catch {
    throw new ApiError(0, "unreachable", "the server cannot be reached; check your connection and try again");
  }
}

/**
 * Calls the API as the signed-in person and answers its parsed JSON (null for 204).
 * @param {string} method
 * @param {string} path under /api/v1, e.g. "/orgs"
 * @param {unknown} [body]
 * @returns {Promise<any>}
 */
export async function api(method, path, body) {
  const res = await apiResponse(method, path, body);
  return res.status === 204 ? null : res.json();
}

/**
 * Calls the API as the signed-in person and answers the successful Response itself (for files);
 * a failure throws its ApiError. An expired access token is renewed once through the refresh
 * cookie, then the call is repeated.
 * @param {string} method
 * @param {string} path under /api/v1
 * @param {unknown} [body]
 * @returns {Promise<Response>}
 */
export async function apiResponse(method, path, body) {
  /** @param {string | null} token */
  const call = (token) => {
    /** @type {Record<string, string>} */
    const headers = {};
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

/**
 * The current access token (memory only), for what cannot go through api(): the live socket's
 * first message. Null when signed out.
 */
export function currentAccessToken() {
  return accessToken;
}

/** The signed-in person as the session knows them (memory only); null when signed out. */
export function signedInUser() {
  return currentUser;
}

/** @param {{ accessToken: string, user: User }} pair */
function signedIn(pair) {
  accessToken = pair.accessToken;
  currentUser = pair.user;
  return pair.user;
}

/**
 * Renews the session from the ao_refresh cookie; null when there is none (or it was revoked).
 * Single-flight: refresh tokens rotate on every use and a reused one revokes the whole sign-in,
 * so parallel callers in a page share one request, and tabs take turns (oneTabAtATime).
 * @returns {Promise<User | null>}
 */
export function refresh() {
  if (!refreshing) {
    refreshing = oneTabAtATime(async () => {
      const res = await send("/auth/refresh", { method: "POST", headers: { "x-client": "web" } });
      if (res.status === 401) {
        accessToken = null;
        currentUser = null;
        return null;
      }
      if (!res.ok) throw await failure(res);
      return signedIn(await res.json());
    }).finally(() => {
      refreshing = null;
    });
  }
  return refreshing;
}

const LOCK = "ao-refresh";
/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `work` while no other tab of this origin runs it. A Web Lock where the browser has one
 * (secure contexts: https or localhost); on plain http (a LAN address, say) a best-effort lock:
 * a short-lived claim in localStorage (no secret, removed afterwards), confirmed after a pause.
 * @template R
 * @param {() => Promise<R>} work
 * @returns {Promise<R>}
 */
async function oneTabAtATime(work) {
  if (navigator.locks) return /** @type {Promise<R>} */ (navigator.locks.request(LOCK, work));
  const me = Math.random().toString(36).slice(2);
  const holder = () => {
    try {
      return JSON.parse(localStorage.getItem(LOCK) ?? "null");
    } catch {
      return null;
    }
  };
  // Tabs opened together would all claim in the same instant: each starts at a random moment, so
  // the first claim has usually reached the others before they look.
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

/** The signed-in person, restoring the session from the cookie on first use. */
export async function restoreSession() {
  return currentUser ?? (await refresh());
}

/**
 * Password sign-in in web mode (the refresh token comes back as the HttpOnly cookie).
 * @param {{ email: string, password: string, code?: string }} input
 */
export async function signIn(input) {
  const res = await send("/auth/login", {
    method: "POST",
    headers: { "content-type": "application/json", "x-client": "web" },
    body: JSON.stringify(input),
  });
  if (!res.ok) throw await failure(res);
  return signedIn(await res.json());
}

export async function signOut() {
  try {
    if (accessToken) await api("POST", "/auth/logout");
  } finally {
    accessToken = null;
    currentUser = null;
  }
}

/**
 * A readable sentence for an error of the API (or anything else thrown).
 * @param {unknown} err
 */
export function errorText(err) {
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
      const fields = Array.isArray(err.details) ? err.details.map((d) => `${d.field}: ${d.message}`) : [];
      return fields.length ? `Please check: ${fields.join("; ")}.` : sentence(err.message);
    }
    default:
      return sentence(err.message);
  }
}

/** @param {string} s */
const sentence = (s) => (s ? s[0].toUpperCase() + s.slice(1) + (/[.!?]$/.test(s) ? "" : ".") : "Something went wrong.");
