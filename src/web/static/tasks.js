// @ts-check
// "/tasks": the tasks of one of the person's organizations (SPEC §5, §11): `?org=` picks it (the
// first one otherwise), `status`, `projectId` and `kind` filter the list, all kept in the address
// so that a reload or a shared link shows the same list; a form creates a new task.
import { api } from "./app.js";
import { $, el, requireSignIn, showError, showOnly } from "./ui.js";
import { TaskList } from "./tasks-list.js";
import { NewTaskForm } from "./tasks-form.js";

/** @typedef {import("./task-model.js").Org} Org */
/** @typedef {import("./tasks-form.js").Project} Project */
/** @typedef {import("./tasks-list.js").Filters} Filters */

const STATUSES = ["queued", "running", "paused", "needs_input", "needs_approval", "completed", "failed", "cancelled"];
const KINDS = ["task", "review", "plan"];

/** @param {string} path a list of the API, read to its end */
async function all(path) {
  const items = [];
  let cursor = null;
  do {
    const page = await api("GET", `${path}${path.includes("?") ? "&" : "?"}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && items.length < 2000);
  return items;
}

/**
 * @param {HTMLElement} select
 * @param {[string, string][]} options value, text
 */
function fillSelect(select, options) {
  select.replaceChildren(
    ...options.map(([value, text]) => {
      const option = /** @type {HTMLOptionElement} */ (el("option", null, text));
      option.value = value;
      return option;
    }),
  );
}

const select = (/** @type {string} */ id) => /** @type {HTMLSelectElement} */ ($(id));

async function main() {
  await requireSignIn("Sign in to see the tasks.");
  const params = new URLSearchParams(location.search);
  /** @type {Org[]} */
  let orgs = [];
  try {
    orgs = await all("/orgs");
  } catch (err) {
    showOnly("tasks");
    showError("tasks-error", err);
    $("tasks-body").hidden = true;
    $("new-task").hidden = true;
    return;
  }
  const asked = params.get("org");
  if (!asked && orgs.length === 0) return showOnly("no-orgs");
  const oneOf = (/** @type {string | null} */ v, /** @type {string[]} */ list) => (v && list.includes(v) ? v : "");
  /** @type {Filters} */
  const filters = { status: oneOf(params.get("status"), STATUSES), projectId: params.get("projectId") ?? "", kind: oneOf(params.get("kind"), KINDS) };
  fillSelect(select("filter-status"), [["", "any"], ...STATUSES.map((s) => /** @type {[string, string]} */ ([s, s]))]);
  fillSelect(select("filter-kind"), [["", "any"], ...KINDS.map((k) => /** @type {[string, string]} */ ([k, k]))]);
  const form = new NewTaskForm();
  /** @type {TaskList | null} */
  let list = null;
  let opening = 0;

  const writeAddress = (/** @type {string} */ orgId) => {
    const q = new URLSearchParams({ org: orgId });
    for (const [name, value] of Object.entries(filters)) if (value) q.set(name, value);
    history.replaceState(null, "", `/tasks?${q}`);
  };

  /** @param {string} orgId */
  async function open(orgId) {
    const mine = ++opening;
    list?.stop();
    list = null;
    const org = orgs.find((o) => o.id === orgId);
    // Someone else's organization (a link, say) is asked anyway: the API's answer is shown.
    fillSelect(select("tasks-org"), [...(org ? [] : [/** @type {[string, string]} */ ([orgId, `${orgId} (not one of yours)`])]), ...orgs.map((o) => /** @type {[string, string]} */ ([o.id, o.name]))]);
    select("tasks-org").value = orgId;
    $("tasks-org-group").hidden = orgs.length < 2 && !!org;
    $("tasks-org-name").textContent = org?.name ?? orgId;
    showError("tasks-error", null);
    showOnly("tasks");
    /** @type {Project[]} */
    let projects;
    try {
      projects = await all(`/orgs/${encodeURIComponent(orgId)}/projects?archived=true`);
    } catch (err) {
      if (mine !== opening) return;
      showError("tasks-error", err);
      $("tasks-body").hidden = true;
      $("new-task").hidden = true;
      $("live-state").textContent = "not live";
      return;
    }
    if (mine !== opening) return;
    $("tasks-body").hidden = false;
    $("new-task").hidden = false;
    const live = projects.filter((p) => !p.archived);
    const names = new Map(projects.map((p) => [p.id, p.name]));
    if (filters.projectId && !names.has(filters.projectId)) names.set(filters.projectId, filters.projectId);
    const archived = projects.filter((p) => p.archived && p.id === filters.projectId);
    fillSelect(select("filter-project"), [
      ["", "any"],
      ...live.map((p) => /** @type {[string, string]} */ ([p.id, p.name])),
      ...archived.map((p) => /** @type {[string, string]} */ ([p.id, `${p.name} (archived)`])),
      ...(filters.projectId && !projects.some((p) => p.id === filters.projectId) ? [/** @type {[string, string]} */ ([filters.projectId, filters.projectId])] : []),
    ]);
    select("filter-status").value = filters.status;
    select("filter-project").value = filters.projectId;
    select("filter-kind").value = filters.kind;
    writeAddress(orgId);
    form.show(orgId, live, org?.role ?? null);
    list = new TaskList(orgId, filters, names);
    list.start();
  }

  let current = asked || orgs[0].id;
  select("tasks-org").addEventListener("change", () => {
    current = select("tasks-org").value;
    filters.projectId = "";
    void open(current);
  });
  for (const [id, name] of /** @type {const} */ ([
    ["filter-status", "status"],
    ["filter-project", "projectId"],
    ["filter-kind", "kind"],
  ])) {
    select(id).addEventListener("change", () => {
      filters[name] = select(id).value;
      writeAddress(current);
      // The list shares `filters`: it fetches its first page again, on the same socket.
      list?.reload();
    });
  }
  await open(current);
}

await main();
