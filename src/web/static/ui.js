// @ts-check
// The page helpers every page script shares: finding and showing parts of the page, errors as
// sentences, busy buttons, times, the sign-in form, the one-time code form and the final word of a
// decision page. The session itself (tokens, the API client) is in app.js.
import { ApiError, errorText, restoreSession, signIn, signOut, signedInUser } from "./app.js";

/** @typedef {import("./app.js").User} User */

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
 * A new element, with its text set as text (never parsed as HTML).
 * @param {string} tag
 * @param {string | null} [className]
 * @param {string} [text]
 */
export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
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
  const currentUser = signedInUser();
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
