// @ts-check
// "/pair?code=XXXX-XXXX": a person approves a worker into one of their organizations, or denies
// it (`ao worker` pairing, SPEC §7).
import { ApiError, api } from "./app.js";
import { $, busy, findByCode, requireSignIn, showError, showOnly, showOutcome, when } from "./ui.js";

/** Roles that may pair a worker into an org (the server checks task.create). */
const CAN_PAIR = new Set(["owner", "admin", "member"]);

await requireSignIn("Sign in to pair the worker.");
const { code, found: pairing } = await findByCode(
  (code) => api("GET", `/pairing/${encodeURIComponent(code)}`),
  "Check it, or restart ao worker for a new one.",
);

$("pairing-code").textContent = pairing.userCode;
$("pairing-name").textContent = pairing.name || "(unnamed)";
$("pairing-hostname").textContent = pairing.hostname || "—";
$("pairing-labels").replaceChildren(...labels(pairing.labels));
$("pairing-ip").textContent = pairing.requestIp || "unknown";
$("pairing-created").textContent = when(pairing.createdAt);
$("pairing-expires").textContent = when(pairing.expiresAt);
showOnly("pairing");

/** @param {string[]} list */
function labels(list) {
  if (!list.length) return ["none"];
  return list.map((label) => {
    const chip = document.createElement("span");
    chip.className = "badge";
    chip.textContent = label;
    return chip;
  });
}

const select = /** @type {HTMLSelectElement} */ ($("pairing-org"));
const approve = /** @type {HTMLButtonElement} */ ($("pairing-approve"));
/** @type {{ id: string, name: string, role: string, requireWorkerApproval: boolean }[]} */
let orgs = [];
try {
  orgs = (await allOrgs()).filter((o) => CAN_PAIR.has(o.role));
  for (const org of orgs) select.append(new Option(`${org.name} (${org.role})`, org.id));
  $("pairing-no-orgs").hidden = orgs.length > 0;
  select.disabled = approve.disabled = orgs.length === 0;
} catch (err) {
  showError("pairing-error", err);
  approve.disabled = true;
}

/** Every org of the caller (pages of 200). */
async function allOrgs() {
  /** @type {typeof orgs} */
  const items = [];
  let cursor = null;
  do {
    const page = await api("GET", `/orgs?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && items.length < 2000);
  return items;
}

const form = /** @type {HTMLFormElement} */ ($("pairing-form"));
/** @param {"approve" | "deny"} decision */
const decide = (decision) =>
  busy(form, async () => {
    showError("pairing-error", null);
    const org = orgs.find((o) => o.id === select.value);
    try {
      if (decision === "approve") await api("POST", "/pairing/approve", { userCode: code, orgId: select.value });
      else await api("POST", "/pairing/deny", { userCode: code });
    } catch (err) {
      const gone = err instanceof ApiError && err.code === "not_found" && /pairing/.test(err.message);
      return showError("pairing-error", gone ? new Error("This request is no longer pending: it expired or was decided elsewhere.") : err);
    }
    const worker = pairing.name || "The worker";
    if (decision === "approve") {
      const next = org?.requireWorkerApproval
        ? `It gets work once an owner or admin of ${org.name} approves it.`
        : "It connects and takes work in a few seconds.";
      showOutcome("Worker paired", `${worker} joins ${org?.name ?? "the organization"}. ${next}`);
    } else showOutcome("Pairing denied", `${worker} was not paired. You can close this page.`);
  });

form.addEventListener("submit", (event) => {
  event.preventDefault();
  void decide("approve");
});
$("pairing-deny").addEventListener("click", () => void decide("deny"));
