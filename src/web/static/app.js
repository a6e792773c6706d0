// @ts-check
// What every page shares: the API client, the web session (SPEC §4 web mode), the sign-in form
// and small DOM helpers. The access token lives in this module's memory only; the refresh token
// is the HttpOnly ao_refresh cookie, which page scripts never see.

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
 * Calls the API as the signed-in person. An expired access token is renewed once through the
 * refresh cookie, then the call is repeated.
 * @param {string} method
 * @param {string} path under /api/v1, e.g. "/orgs"
 * @param {unknown} [body]
 * @returns {Promise<any>}
 */
export async function api(method, path, body) {
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
  return res.status === 204 ? null : res.json();
}

/**
 * The current access token (memory only), for what cannot go through api(): the live socket's
 * first message and artifact downloads. Null when signed out.
 */
export function currentAccessToken() {
  return accessToken;
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
  // After 10 s (a tab closed while holding it) go ahead regardless.
  for (const giveUp = Date.now() + 10_000; Date.now() < giveUp; await sleep(40 + Math.random() * 60)) {
    const held = holder();
    if (held && held.until > Date.now()) continue;
    try {
      localStorage.setItem(LOCK, JSON.stringify({ me, until: Date.now() + 5_000 }));
    } catch {
      break; // storage refused (a private window, say): go ahead unlocked
    }
    await sleep(30);
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

/**
 * @template {HTMLElement} T
 * @param {string} id
 * @returns {T}
 */
export function $(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing from the page`);
  return /** @type {T} */ (el);
}

/**
 * Shows exactly one of the page's main sections (and hides the loading line).
 * @param {string} id
 */
export function showOnly(id) {
  for (const el of document.querySelectorAll("main > section, #loading")) {
    /** @type {HTMLElement} */ (el).hidden = el.id !== id;
  }
  const shown = $(id);
  const heading = shown.querySelector("h1");
  if (heading) document.title = `${heading.textContent} · ao`;
}

/**
 * @param {string} id of an error paragraph
 * @param {unknown} err null hides it
 */
export function showError(id, err) {
  const el = $(id);
  el.textContent = err == null ? "" : errorText(err);
  el.hidden = err == null;
}

/**
 * Disables the buttons of a form (or one button) while `work` runs.
 * @template R
 * @param {HTMLElement} scope
 * @param {() => Promise<R>} work
 * @returns {Promise<R>}
 */
export async function busy(scope, work) {
  const buttons = scope instanceof HTMLButtonElement ? [scope] : [...scope.querySelectorAll("button")];
  for (const b of buttons) b.disabled = true;
  scope.setAttribute("aria-busy", "true");
  try {
    return await work();
  } finally {
    for (const b of buttons) b.disabled = false;
    scope.removeAttribute("aria-busy");
  }
}

const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

/**
 * "14:03 (2 minutes ago)": local time and how long ago or until.
 * @param {string} iso
 */
export function when(iso) {
  const t = new Date(iso);
  if (Number.isNaN(t.getTime())) return iso;
  const sec = Math.round((t.getTime() - Date.now()) / 1000);
  const abs = Math.abs(sec);
  const rel =
    abs < 45 ? relative.format(0, "second") : abs < 3600 ? relative.format(Math.round(sec / 60), "minute") : relative.format(Math.round(sec / 3600), "hour");
  return `${t.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" })} (${rel})`;
}

/** Shows who is signed in, with a sign-out button, in the page's header. */
export function showWho() {
  const who = $("who");
  if (!currentUser) {
    who.hidden = true;
    return;
  }
  $("who-name").textContent = currentUser.name ? `${currentUser.name} (${currentUser.email})` : currentUser.email;
  who.hidden = false;
  const button = /** @type {HTMLButtonElement} */ ($("sign-out"));
  button.onclick = () =>
    busy(button, async () => {
      try {
        await signOut();
      } finally {
        location.reload();
      }
    });
}

/**
 * Resolves with the signed-in person: at once when the session cookie restores one, else after
 * the person signs in with the page's sign-in form (asking for a two-factor code when needed).
 * @param {string} [why] a line above the form saying why signing in is needed here
 * @returns {Promise<User>}
 */
export async function requireSignIn(why) {
  let user = null;
  try {
    user = await restoreSession();
  } catch (err) {
    // The server is unreachable or failing: say so above the form rather than nothing at all.
    showError("signin-error", err);
  }
  if (user) {
    showWho();
    return user;
  }
  if (why) {
    $("signin-why").textContent = why;
    $("signin-why").hidden = false;
  }
  showOnly("signin");
  const form = /** @type {HTMLFormElement} */ ($("signin-form"));
  const email = /** @type {HTMLInputElement} */ ($("signin-email"));
  const password = /** @type {HTMLInputElement} */ ($("signin-password"));
  const code = /** @type {HTMLInputElement} */ ($("signin-code"));
  const codeGroup = $("signin-code-group");
  email.focus();
  return new Promise((resolve) => {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      showError("signin-error", null);
      if (!email.value.trim() || !password.value) {
        showError("signin-error", new Error("Enter your email and password."));
        return;
      }
      if (!codeGroup.hidden && !code.value.trim()) {
        showError("signin-error", new Error("Enter your two-factor code."));
        code.focus();
        return;
      }
      void busy(form, async () => {
        try {
          const input = { email: email.value.trim(), password: password.value };
          const user = await signIn(codeGroup.hidden ? input : { ...input, code: code.value.replace(/\s+/g, "") });
          showWho();
          resolve(user);
        } catch (err) {
          if (err instanceof ApiError && err.code === "two_factor_required") {
            codeGroup.hidden = false;
            code.required = true;
            code.focus();
            return;
          }
          if (err instanceof ApiError && err.code === "invalid_two_factor_code") {
            code.value = "";
            code.focus();
          } else if (err instanceof ApiError && err.code === "invalid_credentials") {
            password.value = "";
            password.focus();
          }
          showError("signin-error", err);
        }
      });
    });
  });
}

/**
 * The one-time code of the page's address (?code=...) or one the person types in, and what
 * `lookUp` finds for it. An unknown code (or any other failure) asks again, saying why.
 * @template T
 * @param {(code: string) => Promise<T>} lookUp
 * @param {string} unknownText what to say when the code is unknown, expired or used
 * @returns {Promise<{ code: string, found: T }>}
 */
export async function findByCode(lookUp, unknownText) {
  const given = new URLSearchParams(location.search).get("code")?.trim();
  let code = given || (await askForCode());
  for (;;) {
    try {
      return { code, found: await lookUp(code) };
    } catch (err) {
      const unknown = err instanceof ApiError && (err.code === "not_found" || err.code === "validation_failed");
      showError("code-error", unknown ? new Error(`The code ${code} is unknown, expired or already used. ${unknownText}`) : err);
      /** @type {HTMLInputElement} */ ($("code-input")).value = code;
      code = await askForCode();
    }
  }
}

/**
 * Shows the code form; resolves with what the person typed (also put in the address bar).
 * @returns {Promise<string>}
 */
function askForCode() {
  showOnly("code-entry");
  const form = /** @type {HTMLFormElement} */ ($("code-form"));
  const input = /** @type {HTMLInputElement} */ ($("code-input"));
  input.focus();
  return new Promise((resolve) => {
    form.onsubmit = (event) => {
      event.preventDefault();
      const code = input.value.trim();
      if (!code) {
        showError("code-error", new Error("Enter the code."));
        return;
      }
      showError("code-error", null);
      form.onsubmit = null;
      history.replaceState(null, "", `${location.pathname}?code=${encodeURIComponent(code)}`);
      resolve(code);
    };
  });
}

/**
 * The final word of a decision page.
 * @param {string} title
 * @param {string} text
 */
export function showOutcome(title, text) {
  $("outcome-title").textContent = title;
  $("outcome-text").textContent = text;
  showOnly("outcome");
  $("outcome").focus();
}
