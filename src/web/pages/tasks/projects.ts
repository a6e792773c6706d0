// The organization's projects as the tasks pages name them: read once, and again when a task
// shows up (live or in a page) whose project is not among them, made after the page loaded.
import { computed, signal } from "@preact/signals";
import { listAll } from "../../app/api";
import type { Project, Task } from "../../app/types";

export class OrgProjects {
  /** Archived ones too (their tasks still need a name); null until the first reading. */
  readonly list = signal<Project[] | null>(null);
  /** Why the first reading failed (a later one that fails keeps the names already known). */
  readonly error = signal<unknown>(null);
  readonly names = computed(() => new Map((this.list.value ?? []).map((p) => [p.id, p.name])));
  /** Ids already read again for: one that stays unknown (another org's, say) asks no more. */
  private askedFor = new Set<string>();
  private reading = false;
  private again = false;

  constructor(readonly orgId: string) {}

  /** Reads the projects; calls while a reading is under way make one more after it, not one each. */
  read() {
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    listAll<Project>(`/orgs/${encodeURIComponent(this.orgId)}/projects?archived=true`)
      .then(
        (list) => {
          this.list.value = list;
          this.error.value = null;
        },
        (err) => {
          if (!this.list.value) this.error.value = err;
        },
      )
      .finally(() => {
        this.reading = false;
        if (this.again) {
          this.again = false;
          this.read();
        }
      });
  }

  /** Tasks shown: a project none of the known ones is makes the projects be read again. */
  notice(tasks: readonly Task[]) {
    if (!this.list.value) return;
    const names = this.names.value;
    let unknown = false;
    for (const t of tasks) {
      if (names.has(t.projectId) || this.askedFor.has(t.projectId)) continue;
      this.askedFor.add(t.projectId);
      unknown = true;
    }
    if (unknown) this.read();
  }
}
