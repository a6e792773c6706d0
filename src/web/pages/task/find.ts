// Finding a task from an address that names no organization ("/tasks/:taskId" and its artifacts'
// pages): it is looked for in the person's organizations, the one in use first, and its
// organization becomes the one in use, as a teammate's link opens where the task is.
import { useSignal, type Signal } from "@preact/signals";
import { useEffect } from "preact/hooks";
import { findInMyOrgs, orgId as orgInUse, orgs, useOrg } from "../../app/session";
import type { Org, Task } from "../../app/types";

export interface FoundTask {
  /** undefined while it is looked for; null when none of the person's organizations has it (or the lookup failed: `error`). */
  found: Signal<{ org: Org; task: Task } | null | undefined>;
  /** Why the lookup failed, other than every organization answering 404. */
  error: Signal<unknown>;
}

export function useTaskInMyOrgs(taskId: string): FoundTask {
  const found = useSignal<{ org: Org; task: Task } | null | undefined>(undefined);
  const error = useSignal<unknown>(null);
  const mine = orgs.value;
  useEffect(() => {
    if (!mine) return;
    found.value = undefined;
    error.value = null;
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(taskId)) return void (found.value = null);
    findInMyOrgs<Task>(mine, orgInUse.value, (org) => `/orgs/${org}/tasks/${encodeURIComponent(taskId)}`).then(
      (f) => {
        found.value = f && { org: f.org, task: f.item };
        if (f) useOrg(f.org.id);
      },
      (err) => {
        found.value = null;
        error.value = err;
      },
    );
  }, [taskId, mine]);
  return { found, error };
}
