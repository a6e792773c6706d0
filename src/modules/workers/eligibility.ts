// Which worker may take which task: same organization, approved and greeted, within the worker's
// policy.projects (when set), carrying every label of the project's policy.workerLabels, and
// running the agent the task names (when it names one). Why a queued task waits, for people: waiting.ts.
import type { Core } from "../../server/core";
import type { TaskRow } from "../tasks/record";
import type { Conn } from "./dispatcher-state";
import { projectCached } from "../projects/cache";
import { get, type Q } from "../../db/query";

const PROJECT_POLICY = "SELECT policy FROM projects WHERE id = ?";

/** The labels a project's tasks need (its policy.workerLabels); `cache` saves re-reading within one pass. A cached project reads nothing. */
export function* requiredLabels(core: Core, projectId: string, cache?: Map<string, string[]>): Q<string[]> {
  const key = `labels:${projectId}`;
  // projectCached with a null load only looks (misses are not cached).
  const cached = cache?.get(projectId) ?? projectCached<string[]>(core, key, () => null);
  if (cached) {
    cache?.set(projectId, cached);
    return cached;
  }
  const row = yield* get<{ policy: string }>(PROJECT_POLICY, projectId);
  let labels: string[] = [];
  if (row) {
    try {
      const policy = JSON.parse(row.policy) as { workerLabels?: unknown };
      if (Array.isArray(policy.workerLabels)) labels = policy.workerLabels.filter((l): l is string => typeof l === "string");
    } catch {}
  }
  projectCached(core, key, () => labels);
  cache?.set(projectId, labels);
  return labels;
}

export function eligible(conn: Conn, task: Pick<TaskRow, "org_id" | "project_id"> & { agent?: string | null }, required: string[]): boolean {
  if (!conn.active || conn.orgId !== task.org_id) return false;
  if (conn.projects && !conn.projects.has(task.project_id)) return false;
  if (task.agent && !conn.agents.has(task.agent)) return false;
  for (const label of required) if (!conn.labels.has(label)) return false;
  return true;
}
