// @ts-check
// "/device?code=XXXX-XXXX": a person approves or denies a device sign-in (`ao login`, SPEC §4).
import { ApiError, api } from "./app.js";
import { $, busy, findByCode, requireSignIn, showError, showOnly, showOutcome, when } from "./ui.js";

await requireSignIn("Sign in to approve the device sign-in.");
const { code, found: grant } = await findByCode(
  (code) => api("GET", `/auth/device/${encodeURIComponent(code)}`),
  "Check it, or run ao login again for a new one.",
);

$("grant-code").textContent = grant.userCode;
$("grant-client").textContent = grant.clientName || "(unnamed program)";
$("grant-created").textContent = when(grant.createdAt);
$("grant-ip").textContent = grant.requestIp || "unknown";
$("grant-expires").textContent = when(grant.expiresAt);
showOnly("grant");

/** @param {"approve" | "deny"} decision */
const decide = (decision) =>
  busy($("grant"), async () => {
    showError("grant-error", null);
    try {
      await api("POST", `/auth/device/${decision}`, { userCode: code });
    } catch (err) {
      const gone = err instanceof ApiError && err.code === "not_found";
      return showError("grant-error", gone ? new Error("This request is no longer pending: it expired or was decided elsewhere.") : err);
    }
    if (decision === "approve") showOutcome("Device signed in", "The program is now signed in as you. You can close this page.");
    else showOutcome("Sign-in denied", "The program was not signed in. You can close this page.");
  });

$("grant-approve").addEventListener("click", () => void decide("approve"));
$("grant-deny").addEventListener("click", () => void decide("deny"));
