// @ts-check
// The tasks list's rows (SPEC §5, §6, §11): newest first, a page at a time with Load more (keyset
// cursors, so rows never repeat or go missing), kept current over the live socket. Everything from
// the server is inserted as text (textContent), never as HTML.
import { api } from "./app.js";
import { $, busy, el, showError, when } from "./ui.js";
import { LiveTask } from "./task-live.js";

/** @typedef {import("./task-model.js").Task} Task */
/** @typedef {{ status: string, projectId: string, kind: string }} Filters */

export const PAGE_SIZE = 50;

export class TaskList {
  /**
   * @param {string} orgId
   * @param {Filters} filters
   * @param {Map<string, string>} projectNames project id → name
   */
  constructor(orgId, filters, projectNames) {
    this.orgId = orgId;
    this.filters = filters;
    this.projectNames = projectNames;
    /** @type {Task[]} */
    this.tasks = [];
    /** @type {string | null} */
    this.cursor = null;
    /** Bumped by each reload, so that an older answer (or a Load more) arriving late is dropped. */
    this.generation = 0;
    /** @type {Promise<void>} */
    this.loading = Promise.resolve();
    /** @type {Map<string, HTMLTableRowElement>} */
    this.rows = new Map();
    /** @type {LiveTask | null} */
    this.live = null;
    /** @type {Set<Task[]>} what the socket brought during each fetch under way, applied again over its answer */
    this.heard = new Set();
    this.ended = false;
  }

  /** Shows the first page and follows the organization live; after each (re)subscription the
   * first page is fetched again, since updates may have been missed meanwhile. */
  start() {
    $("live-state").textContent = "connecting…";
    $("tasks-rows").replaceChildren();
    $("tasks-empty").hidden = true;
    $("tasks-more-group").hidden = true;
    showError("tasks-list-error", null);
    $("tasks-more").onclick = () => void this.more();
    this.reload();
    this.live = new LiveTask(this.orgId, null, {
      state: (text) => {
        if (!this.ended) $("live-state").textContent = text;
      },
      subscribed: () => {
        if (!this.ended) this.reload();
      },
      task: (task) => {
        if (!this.ended) this.onTask(task);
      },
    });
    this.live.start();
  }

  /** For good: another organization is shown now. */
  stop() {
    this.ended = true;
    this.live?.stop();
  }

  /** @param {string | null} cursor */
  path(cursor) {
    const q = new URLSearchParams({ limit: String(PAGE_SIZE) });
    for (const [name, value] of Object.entries(this.filters)) if (value) q.set(name, value);
    if (cursor) q.set("cursor", cursor);
    return `/orgs/${encodeURIComponent(this.orgId)}/tasks?${q}`;
  }

  /** The first page, replacing what is shown. */
  reload() {
    const generation = ++this.generation;
    $("tasks-rows").setAttribute("aria-busy", "true");
    this.loading = (async () => {
      try {
        const { page, heard } = await this.fetchPage(null);
        if (generation !== this.generation || this.ended) return;
        this.tasks = page.items;
        this.cursor = page.nextCursor;
        showError("tasks-list-error", null);
        this.render();
        for (const task of heard) this.onTask(task);
      } catch (err) {
        if (generation === this.generation && !this.ended) showError("tasks-list-error", err);
      } finally {
        if (generation === this.generation && !this.ended) $("tasks-rows").removeAttribute("aria-busy");
      }
    })();
  }

  /** The next page, after the rows shown (waits for a reload under way, to continue from it). */
  async more() {
    await busy($("tasks-more"), async () => {
      await this.loading;
      const generation = this.generation;
      if (!this.cursor) return;
      try {
        const { page, heard } = await this.fetchPage(this.cursor);
        if (generation !== this.generation || this.ended) return;
        const shown = new Set(this.tasks.map((t) => t.id));
        this.tasks.push(...page.items.filter((/** @type {Task} */ t) => !shown.has(t.id)));
        this.cursor = page.nextCursor;
        showError("tasks-list-error", null);
        this.render();
        for (const task of heard) this.onTask(task);
      } catch (err) {
        showError("tasks-list-error", err);
      }
    });
  }

  /**
   * A page of tasks, and the updates the socket brought while it was asked for. The answer may
   * predate them (the server read it first): they are applied again over it, or they would be lost.
   * @param {string | null} cursor
   * @returns {Promise<{ page: { items: Task[], nextCursor: string | null }, heard: Task[] }>}
   */
  async fetchPage(cursor) {
    /** @type {Task[]} */
    const heard = [];
    this.heard.add(heard);
    try {
      return { page: await api("GET", this.path(cursor)), heard };
    } finally {
      this.heard.delete(heard);
    }
  }

  /** @param {Task} task */
  matches(task) {
    const f = this.filters;
    return task.orgId === this.orgId && (!f.status || task.status === f.status) && (!f.projectId || task.projectId === f.projectId) && (!f.kind || task.kind === f.kind);
  }

  /**
   * A newer record from the socket: a shown row is updated, or removed when it no longer matches
   * the filters; a matching task not shown is put where the order (newest first) places it.
   * @param {Task} task
   */
  onTask(task) {
    if (task.orgId !== this.orgId) return;
    for (const list of this.heard) list.push(task);
    const i = this.tasks.findIndex((t) => t.id === task.id);
    const fits = this.matches(task);
    if (i >= 0) {
      if (task.updatedAt < this.tasks[i].updatedAt) return;
      if (fits) this.tasks[i] = task;
      else this.tasks.splice(i, 1);
    } else {
      const last = this.tasks.at(-1);
      // Older than every row shown while more pages remain: Load more brings it in its place.
      if (!fits || (this.cursor && (!last || task.id < last.id))) return;
      const at = this.tasks.findIndex((t) => t.id < task.id);
      this.tasks.splice(at < 0 ? this.tasks.length : at, 0, task);
    }
    this.render();
  }

  render() {
    const rows = this.tasks.map((t) => {
      let tr = this.rows.get(t.id);
      if (!tr) {
        tr = /** @type {HTMLTableRowElement} */ (el("tr"));
        tr.dataset.id = t.id;
      }
      this.fill(tr, t);
      return tr;
    });
    this.rows = new Map(rows.map((tr) => [/** @type {string} */ (tr.dataset.id), tr]));
    $("tasks-rows").replaceChildren(...rows);
    const filtered = Object.values(this.filters).some(Boolean);
    $("tasks-empty").textContent = filtered
      ? "No task matches these filters. Choose “any” to see more."
      : "No tasks in this organization yet. Create the first one with the form below.";
    $("tasks-empty").hidden = this.tasks.length > 0;
    $("tasks-more-group").hidden = !this.cursor;
  }

  /**
   * @param {HTMLTableRowElement} tr
   * @param {Task} t
   */
  fill(tr, t) {
    const link = /** @type {HTMLAnchorElement} */ (el("a", null, t.title));
    link.href = `/tasks/${encodeURIComponent(t.id)}`;
    const title = el("td", "title");
    title.append(link);
    const status = el("span", "status", t.status);
    status.dataset.status = t.status;
    const statusCell = el("td");
    statusCell.append(status);
    const time = /** @type {HTMLTimeElement} */ (el("time", null, when(t.createdAt)));
    time.dateTime = t.createdAt;
    const created = el("td");
    created.append(time);
    tr.dataset.status = t.status;
    tr.replaceChildren(title, statusCell, el("td", null, t.kind), el("td", null, t.priority), el("td", null, this.projectNames.get(t.projectId) ?? t.projectId), created);
  }
}
