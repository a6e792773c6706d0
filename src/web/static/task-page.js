// @ts-check
// The task page's view of one task (SPEC §5, §11): facts, actions, artifacts, the plan and the
// timeline, kept current over the live socket (SPEC §6). Everything from the server is inserted
// as text (textContent), never as HTML.
import { ApiError, api, errorText } from "./app.js";
import { $, busy, el, showError, showOnly, when } from "./ui.js";
import { BUTTON_CLASS, LABELS, allowedActions, clock, eventText, truncate, who } from "./task-model.js";
import { ArtifactList } from "./task-artifacts.js";
import { LiveTask } from "./task-live.js";

/** @typedef {import("./task-model.js").Action} Action */
/** @typedef {import("./task-model.js").Task} Task */
/** @typedef {import("./task-model.js").TaskEvent} TaskEvent */
/** @typedef {import("./task-model.js").Org} Org */

export class TaskPage {
  /**
   * @param {Org} org
   * @param {Task} task
   * @param {string} userId
   */
  constructor(org, task, userId) {
    this.org = org;
    this.task = task;
    this.userId = userId;
    this.path = `/orgs/${encodeURIComponent(org.id)}/tasks/${encodeURIComponent(task.id)}`;
    /** @type {string | null} */
    this.projectName = null;
    this.lastSeq = 0;
    /** Timeline work (fetches and live events) runs one piece at a time, so lines stay in order. */
    this.timeline = Promise.resolve();
    this.acting = false;
    this.actionsKey = "";
    this.artifacts = new ArtifactList(this.path);
    /** @type {Task[] | null} */
    this.children = null;
  }

  start() {
    Object.assign($("task-org"), { textContent: this.org.name, href: `/tasks?org=${encodeURIComponent(this.org.id)}`, title: "The tasks of this organization" });
    $("task-id").textContent = this.task.id;
    this.render();
    showOnly("task");
    const form = /** @type {HTMLFormElement} */ ($("actions-form"));
    form.addEventListener("submit", (event) => event.preventDefault());
    $("plan-apply").addEventListener("click", () => void this.applyPlan());
    void this.loadProject();
    void this.loadChildren();
    this.serial(() => this.fetchEvents());
    this.connect();
  }

  /** A newer record of the task (from an answer, a fetch or the socket); older ones are ignored. */
  /** @param {Task} task */
  apply(task) {
    if (task.id !== this.task.id || task.updatedAt < this.task.updatedAt) return;
    this.task = task;
    this.render();
  }

  render() {
    const t = this.task;
    $("task-title").textContent = t.title;
    document.title = `${t.title} · ao`;
    const status = $("task-status");
    status.textContent = `${t.status}${t.attempt ? ` (attempt ${t.attempt})` : ""}`;
    status.dataset.status = t.status;
    const waiting = t.status === "needs_input" || t.status === "needs_approval";
    const needs = $("task-needs");
    needs.hidden = !t.needs;
    needs.classList.toggle("attention", waiting);
    if (t.needs) {
      const what = t.needs.kind === "input" ? "input" : t.needs.kind === "budget" ? "decision on the budget" : "approval";
      $("task-needs-kind").textContent = waiting ? `Waiting for your ${what}:` : `Asked for ${what}:`;
      $("task-needs-message").textContent = t.needs.message;
    }
    this.renderFacts();
    $("task-summary-group").hidden = !t.summary;
    $("task-summary").textContent = t.summary ?? "";
    $("task-prompt").textContent = t.prompt;
    this.renderActions();
    this.artifacts.render(this.task.artifacts ?? []);
    this.renderPlan();
  }

  renderFacts() {
    const t = this.task;
    /** @type {[string, string | Node][]} */
    const rows = [
      ["Kind", t.kind],
      ["Priority", t.priority],
      ["Project", this.projectName ?? t.projectId],
    ];
    if (t.review) rows.push(["Review", `${t.review.base} → ${t.review.head}`]);
    rows.push(["Worker", t.worker?.name ?? t.workerId ?? "—"]);
    if (t.parentId) rows.push(["Proposed by", taskLink(t.parentId, "the plan")]);
    const by = t.createdBy.type === "user" && t.createdBy.id === this.userId ? "you" : who(t.createdBy);
    rows.push(["Created", `${when(t.createdAt)} by ${by}`]);
    rows.push(["Started", t.startedAt ? when(t.startedAt) : "—"]);
    rows.push(["Finished", t.finishedAt ? when(t.finishedAt) : "—"]);
    rows.push(["Updated", when(t.updatedAt)]);
    $("task-facts").replaceChildren(
      ...rows.flatMap(([k, v]) => {
        const dd = el("dd");
        dd.append(v);
        return [el("dt", null, k), dd];
      }),
    );
  }

  async loadProject() {
    try {
      const project = await api("GET", `/orgs/${encodeURIComponent(this.org.id)}/projects/${encodeURIComponent(this.task.projectId)}`);
      this.projectName = project.name;
      this.renderFacts();
    } catch {
      // The id stays shown: a project this page cannot read is no reason to fail the page.
    }
  }

  renderActions() {
    const allowed = allowedActions(this.task.status);
    const key = allowed.join(",");
    if (key === this.actionsKey) return;
    this.actionsKey = key;
    const buttons = allowed.map((action) => {
      const b = /** @type {HTMLButtonElement} */ (el("button", BUTTON_CLASS[action] ?? null, LABELS[action]));
      b.type = "button";
      b.dataset.action = action;
      b.disabled = this.acting;
      b.addEventListener("click", () => void this.act(action));
      return b;
    });
    $("action-buttons").replaceChildren(...buttons);
    $("action-none").hidden = allowed.length > 0;
    $("action-input-group").hidden = !allowed.includes("input");
  }

  /** @param {Action} action */
  async act(action) {
    const reason = /** @type {HTMLTextAreaElement} */ ($("action-reason"));
    const input = /** @type {HTMLTextAreaElement} */ ($("action-input"));
    showError("action-error", null);
    $("action-done").hidden = true;
    if (action === "input" && !input.value.trim()) {
      showError("action-error", new Error("Write the answer to hand to the agent first."));
      input.focus();
      return;
    }
    const body = { action, ...(reason.value.trim() ? { reason: reason.value } : {}), ...(action === "input" ? { input: input.value } : {}) };
    this.acting = true;
    try {
      await busy($("actions-form"), async () => {
        try {
          const task = await api("POST", `${this.path}/actions`, body);
          reason.value = "";
          if (action === "input") input.value = "";
          $("action-done").textContent = `${LABELS[action]}: done. The task is now ${task.status}.`;
          $("action-done").hidden = false;
          this.apply(task);
        } catch (err) {
          if (err instanceof ApiError && err.code === "invalid_transition") {
            showError("action-error", new Error(`${errorText(err)} The task changed meanwhile; the buttons now show what it allows.`));
            await this.reload();
          } else showError("action-error", err);
        }
      });
    } finally {
      this.acting = false;
      this.actionsKey = "";
      this.renderActions();
    }
  }

  async reload() {
    try {
      this.apply(await api("GET", this.path));
    } catch (err) {
      showError("action-error", err);
    }
  }

  renderPlan() {
    const t = this.task;
    const proposed = t.kind === "plan" && t.plan && Array.isArray(t.plan.tasks) ? t.plan.tasks : null;
    /** @type {Task[]} */
    const children = this.children ?? [];
    $("plan-card").hidden = !proposed && children.length === 0;
    $("plan-tasks").replaceChildren(
      ...(proposed ?? []).map((p) => {
        const item = /** @type {Record<string, unknown>} */ (p && typeof p === "object" ? p : {});
        const li = el("li");
        li.append(el("strong", null, typeof item.title === "string" ? item.title : "(untitled)"));
        for (const extra of [item.priority, item.kind]) if (typeof extra === "string") li.append(" ", el("span", "badge", extra));
        if (typeof item.prompt === "string") li.append(el("p", "muted pre", truncate(item.prompt, 300)));
        return li;
      }),
    );
    $("plan-actions").hidden = !(proposed && t.status === "completed" && children.length === 0);
    $("plan-children-group").hidden = children.length === 0;
    $("plan-children").replaceChildren(
      ...children.map((c) => {
        const li = el("li");
        li.append(taskLink(c.id, c.title), " ", el("span", "badge", c.status));
        return li;
      }),
    );
  }

  /** The tasks an applied plan made (none for other kinds). */
  async loadChildren() {
    if (this.task.kind !== "plan") return;
    try {
      const page = await api("GET", `/orgs/${encodeURIComponent(this.org.id)}/tasks?parentId=${encodeURIComponent(this.task.id)}&limit=200`);
      // Newest first from the API; the plan's own order is the order they were made in.
      this.children = [...page.items].reverse();
      this.renderPlan();
    } catch (err) {
      showError("plan-error", err);
    }
  }

  async applyPlan() {
    showError("plan-error", null);
    await busy($("plan-card"), async () => {
      try {
        const answer = await api("POST", `${this.path}/apply-plan`);
        this.children = answer.tasks;
        this.renderPlan();
      } catch (err) {
        showError("plan-error", err);
      }
    });
  }

  /** @param {() => Promise<void> | void} work */
  serial(work) {
    this.timeline = this.timeline
      .then(work)
      .then(() => showError("timeline-error", null))
      .catch((err) => showError("timeline-error", err));
  }

  /** Every event after the last one shown, page by page. */
  async fetchEvents() {
    for (;;) {
      const page = await api("GET", `${this.path}/events?after=${this.lastSeq}&limit=200`);
      for (const e of page.items) this.append(e);
      if (!page.nextCursor || page.items.length === 0) return;
    }
  }

  /** @param {TaskEvent} e */
  onEvent(e) {
    this.serial(async () => {
      if (e.seq <= this.lastSeq) return;
      if (e.seq === this.lastSeq + 1) this.append(e);
      // A gap: some were missed (a slow socket, say): fetch them in order.
      else await this.fetchEvents();
    });
  }

  /** @param {TaskEvent} e */
  append(e) {
    if (e.seq <= this.lastSeq) return;
    this.lastSeq = e.seq;
    const li = el("li");
    li.dataset.seq = String(e.seq);
    li.dataset.type = e.type;
    const time = /** @type {HTMLTimeElement} */ (el("time", null, clock(e.at)));
    time.dateTime = e.at;
    time.title = when(e.at);
    li.append(el("span", "seq", `#${e.seq}`), " ", time, " ", el("span", "type", e.type), " ", el("span", "text", eventText(e)));
    $("timeline").append(li);
    $("timeline-empty").hidden = true;
  }

  /** Follows the task over the live socket; after each (re)subscription, catches up on what was missed. */
  connect() {
    const liveState = $("live-state");
    new LiveTask(this.org.id, this.task.id, {
      state: (text) => {
        liveState.textContent = text;
      },
      subscribed: () =>
        this.serial(async () => {
          await this.fetchEvents();
          this.apply(await api("GET", this.path));
        }),
      task: (task) => this.apply(task),
      event: (e) => this.onEvent(e),
    }).start();
  }
}

/**
 * @param {string} id
 * @param {string} text
 */
function taskLink(id, text) {
  const a = /** @type {HTMLAnchorElement} */ (el("a", null, text));
  a.href = `/tasks/${encodeURIComponent(id)}`;
  return a;
}
