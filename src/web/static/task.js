// @ts-check
// "/tasks/:taskId": one task (SPEC §5, §11), the page the callbacks' `url` links to. The address
// has no organization, so the task is looked for in each of the person's organizations; then
// task-page.js shows it and keeps it current.
import { ApiError, api } from "./app.js";
import { requireSignIn, showError, showOnly } from "./ui.js";
import { TaskPage } from "./task-page.js";

/** @typedef {import("./task-model.js").Task} Task */
/** @typedef {import("./task-model.js").Org} Org */

async function main() {
  const user = await requireSignIn("Sign in to see the task.");
  const taskId = taskIdOfAddress();
  let found = null;
  try {
    found = taskId ? await findTask(taskId) : null;
  } catch (err) {
    showError("missing-error", err);
  }
  if (!found) {
    showOnly("missing");
    return;
  }
  new TaskPage(found.org, found.task, user.id).start();
}

/** The task id of the address, or null when it cannot be one. */
function taskIdOfAddress() {
  try {
    const id = decodeURIComponent(location.pathname.replace(/^\/tasks\//, "").replace(/\/$/, ""));
    return /^[A-Za-z0-9_-]{1,64}$/.test(id) ? id : null;
  } catch {
    return null;
  }
}

/**
 * The task in whichever of the person's organizations holds it (the API answers 404 for every
 * other one, as it does for another organization's task).
 * @param {string} taskId
 * @returns {Promise<{ org: Org, task: Task } | null>}
 */
async function findTask(taskId) {
  /** @type {Org[]} */
  const orgs = [];
  let cursor = null;
  do {
    const page = await api("GET", `/orgs?limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
    orgs.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor && orgs.length < 2000);
  /** @type {unknown} */
  let failure = null;
  // A few organizations at a time: most people have one or two.
  for (let i = 0; i < orgs.length; i += 6) {
    const batch = orgs.slice(i, i + 6);
    const results = await Promise.allSettled(batch.map((o) => api("GET", `/orgs/${encodeURIComponent(o.id)}/tasks/${encodeURIComponent(taskId)}`)));
    for (const [j, r] of results.entries()) {
      if (r.status === "fulfilled") return { org: batch[j], task: r.value };
      if (!(r.reason instanceof ApiError && r.reason.status === 404)) failure ??= r.reason;
    }
  }
  if (failure) throw failure;
  return null;
}

await main();
