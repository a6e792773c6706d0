// A live page of an organization's tasks (SPEC §5, §6): newest first, a page at a time (keyset
// cursors, so rows never repeat or go missing), kept current by the socket's task records.
// The list shows one feed; the board one per status column.
import { signal } from "@preact/signals";
import { api } from "../../app/api";
import { HeardMeanwhile } from "../../app/live";
import type { Page, Task } from "../../app/types";

export interface Filters {
  status: string;
  projectId: string;
  kind: string;
}

export class TaskFeed {
  readonly tasks = signal<Task[] | null>(null);
  readonly error = signal<unknown>(null);
  readonly more = signal(false);
  readonly busy = signal(false);
  private cursor: string | null = null;
  /** Bumped by each reload, so that an older answer (or a Load more) arriving late is dropped. */
  private generation = 0;
  private loading: Promise<void> = Promise.resolve();
  /** What the socket brought during each fetch under way, applied again over its answer. */
  private meanwhile = new HeardMeanwhile<Task>();

  constructor(
    readonly orgId: string,
    readonly filters: Filters,
    readonly pageSize = 50,
  ) {}

  private path(cursor: string | null) {
    const q = new URLSearchParams({ limit: String(this.pageSize) });
    for (const [name, value] of Object.entries(this.filters)) if (value) q.set(name, value);
    if (cursor) q.set("cursor", cursor);
    return `/orgs/${encodeURIComponent(this.orgId)}/tasks?${q}`;
  }

  /** The first page, replacing what is shown (at the start and after each (re)subscription). */
  reload() {
    const generation = ++this.generation;
    this.busy.value = true;
    this.loading = (async () => {
      try {
        const { page, heard } = await this.fetchPage(null);
        if (generation !== this.generation) return;
        this.cursor = page.nextCursor;
        this.tasks.value = page.items;
        this.more.value = !!page.nextCursor;
        this.error.value = null;
        for (const task of heard) this.onTask(task);
      } catch (err) {
        if (generation === this.generation) this.error.value = err;
      } finally {
        if (generation === this.generation) this.busy.value = false;
      }
    })();
  }

  /**
   * The first page again, merged into the rows shown (those loaded after it stay): for what changes
   * a record without a task change, such as why a queued task waits when the workers change.
   */
  async refresh() {
    await this.loading;
    try {
      const { page } = await this.fetchPage(null);
      for (const task of page.items) this.onTask(task);
    } catch (err) {
      this.error.value = err;
    }
  }

  /** The next page, after the rows shown (waits for a reload under way, to continue from it). */
  async loadMore() {
    await this.loading;
    const generation = this.generation;
    if (!this.cursor) return;
    try {
      const { page, heard } = await this.fetchPage(this.cursor);
      if (generation !== this.generation) return;
      const shown = new Set((this.tasks.value ?? []).map((t) => t.id));
      this.tasks.value = [...(this.tasks.value ?? []), ...page.items.filter((t) => !shown.has(t.id))];
      this.cursor = page.nextCursor;
      this.more.value = !!page.nextCursor;
      this.error.value = null;
      for (const task of heard) this.onTask(task);
    } catch (err) {
      this.error.value = err;
    }
  }

  /** A page of tasks, and the updates the socket brought while it was asked for (the answer may predate them). */
  private async fetchPage(cursor: string | null): Promise<{ page: Page<Task>; heard: Task[] }> {
    const { answer, heard } = await this.meanwhile.read(() => api<Page<Task>>("GET", this.path(cursor)));
    return { page: answer, heard };
  }

  matches(task: Task) {
    const f = this.filters;
    return task.orgId === this.orgId && (!f.status || task.status === f.status) && (!f.projectId || task.projectId === f.projectId) && (!f.kind || task.kind === f.kind);
  }

  /**
   * A newer record (from the socket, or an answer of ours): a shown row is updated, or removed
   * when it no longer matches; a matching task not shown is put where the order places it.
   */
  onTask(task: Task) {
    if (task.orgId !== this.orgId) return;
    this.meanwhile.hear(task);
    const tasks = this.tasks.value;
    if (!tasks) return;
    const i = tasks.findIndex((t) => t.id === task.id);
    const fits = this.matches(task);
    const next = [...tasks];
    if (i >= 0) {
      if (task.updatedAt < tasks[i]!.updatedAt) return;
      if (fits) next[i] = task;
      else next.splice(i, 1);
    } else {
      const last = tasks.at(-1);
      // Older than every row shown while more pages remain: Load more brings it in its place.
      if (!fits || (this.cursor && (!last || task.id < last.id))) return;
      const at = tasks.findIndex((t) => t.id < task.id);
      next.splice(at < 0 ? tasks.length : at, 0, task);
    }
    this.tasks.value = next;
  }
}
