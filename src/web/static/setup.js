// @ts-check
// "/setup?token=...": first run (SPEC §2). Creates the first administrator and their
// organization with the one-time token the server printed, then signs them in.
import { ApiError, api, signIn } from "./app.js";
import { $, busy, showError, showOnly } from "./ui.js";

const token = new URLSearchParams(location.search).get("token");

async function start() {
  let state;
  try {
    state = await api("GET", "/setup");
  } catch (err) {
    showOnly("setup");
    showError("setup-error", err);
    return;
  }
  if (!state.required) return showOnly("setup-closed");
  if (!token) return showOnly("setup-no-token");
  showOnly("setup");
  const form = /** @type {HTMLFormElement} */ ($("setup-form"));
  /** @param {string} id */
  const value = (id) => /** @type {HTMLInputElement} */ ($(id)).value;
  $("setup-name").focus();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    showError("setup-error", null);
    const email = value("setup-email").trim();
    const password = value("setup-password");
    const orgName = value("setup-org").trim();
    const name = value("setup-name").trim();
    const problem = !email
      ? "Enter an email address."
      : password.length < 8
        ? "The password needs at least 8 characters."
        : password !== value("setup-password2")
          ? "The two passwords differ."
          : !orgName
            ? "Enter a name for the organization."
            : null;
    if (problem) return showError("setup-error", new Error(problem));
    void busy(form, async () => {
      try {
        await api("POST", "/setup", { token, email, password, orgName, ...(name ? { name } : {}) });
      } catch (err) {
        if (err instanceof ApiError && err.code === "conflict") return showOnly("setup-closed");
        if (err instanceof ApiError && err.status === 401) return showError("setup-error", new Error("This setup link is not valid. Use the link the server printed most recently."));
        return showError("setup-error", err);
      }
      try {
        await signIn({ email, password });
        location.replace("/");
      } catch {
        // Created but not signed in (for instance a rate limit): the sign-in page takes over.
        location.replace("/");
      }
    });
  });
}

await start();
