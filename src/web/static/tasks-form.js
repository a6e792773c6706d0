// @ts-check
// The tasks list's New task form (SPEC §5): project, title, prompt, priority and kind (a review
// also names its base and head). The server judges the input; its messages are shown as they come.
import { api } from "./app.js";
import { $, busy, el, showError } from "./ui.js";

/** @typedef {{ id: string, name: string, archived: boolean }} Project */

export class NewTaskForm {
  constructor() {
    /** @type {string | null} */
    this.orgId = null;
    this.form = /** @type {HTMLFormElement} */ ($("new-task-form"));
    this.kind = /** @type {HTMLSelectElement} */ ($("new-kind"));
    this.kind.addEventListener("change", () => this.showReview());
    this.form.addEventListener("submit", (event) => {
      event.preventDefault();
      void this.submit();
    });
  }

  /**
   * The form for one organization: its live projects to choose from (none: the form is hidden and
   * the page says a project comes first).
   * @param {string} orgId
   * @param {Project[]} projects not archived
   * @param {string | null} role the person's role there, when known
   */
  show(orgId, projects, role) {
    this.orgId = orgId;
    showError("new-task-error", null);
    $("new-project").replaceChildren(
      ...projects.map((p) => {
        const option = /** @type {HTMLOptionElement} */ (el("option", null, p.name));
        option.value = p.id;
        return option;
      }),
    );
    $("new-task-no-projects").hidden = projects.length > 0;
    $("new-task-viewer").hidden = role !== "viewer" || projects.length === 0;
    this.form.hidden = projects.length === 0;
    this.showReview();
  }

  showReview() {
    $("new-review-group").hidden = this.kind.value !== "review";
  }

  async submit() {
    if (!this.orgId) return;
    const value = (/** @type {string} */ id) => /** @type {HTMLInputElement} */ ($(id)).value;
    /** @type {Record<string, unknown>} */
    const body = {
      projectId: value("new-project"),
      title: value("new-title"),
      prompt: value("new-prompt"),
      priority: value("new-priority"),
      kind: this.kind.value,
    };
    if (this.kind.value === "review") body.review = { base: value("new-base").trim(), head: value("new-head").trim() };
    showError("new-task-error", null);
    const orgId = this.orgId;
    await busy(this.form, async () => {
      try {
        const task = await api("POST", `/orgs/${encodeURIComponent(orgId)}/tasks`, body);
        location.assign(`/tasks/${encodeURIComponent(task.id)}`);
      } catch (err) {
        showError("new-task-error", err);
      }
    });
  }
}
