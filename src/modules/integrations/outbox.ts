// The outbox: when a task completes, fails or comes to need a person, one row per callback target
// is written inside the transaction of that change (core.taskHooks), so the change and its
// callbacks commit together or not at all. The relay sends them after the commit.
import type { Core } from "../../server/core";
import type { TaskStatus } from "../../db/schema";
import type { TaskChange } from "../tasks/store";
import type { TaskRow } from "../tasks/record";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { get, run, type Q } from "../../db/query";

export type CallbackEvent = "completed" | "failed" | "needs_attention";

const EVENT_OF: Partial<Record<TaskStatus, CallbackEvent>> = {
  completed: "completed",
  failed: "failed",
  needs_input: "needs_attention",
  needs_approval: "needs_attention",
};

/**
 * The callback event a change causes, if any: a change of status into one of the trigger states.
 * needs_attention is sent once per question or approval: from paused the only way into needs_* is resume, which goes
 * back to the question already announced when the worker asked it.
 */
export function callbackEventOf(change: TaskChange): CallbackEvent | null {
  const before = change.before?.status;
  if (before === change.after.status) return null;
  const event = EVENT_OF[change.after.status] ?? null;
  return event === "needs_attention" && before === "paused" ? null : event;
}

export interface CallbackPayload {
  taskId: string;
  status: TaskStatus;
  title: string;
  summary: string | null;
  url: string;
  ref: string | null;
  event: CallbackEvent;
}

/** The sender's reference: signed JSON's `ref`, or the link of the issue or comment the task came from. */
function refOf(task: TaskRow): string | null {
  if (!task.source) return null;
  try {
    const source = JSON.parse(task.source) as { ref?: unknown; item?: { url?: unknown } };
    if (typeof source.ref === "string") return source.ref;
    if (typeof source.item?.url === "string") return source.item.url;
  } catch {}
  return null;
}

export function callbackPayload(core: Core, task: TaskRow, event: CallbackEvent): CallbackPayload {
  return {
    taskId: task.id,
    status: task.status,
    title: task.title,
    summary: task.summary,
    url: `${core.config.publicUrl}/tasks/${task.id}`,
    ref: refOf(task),
    event,
  };
}

interface IntegrationTarget {
  kind: string;
  enabled: number;
  callback_url: string | null;
  callback_disabled_at: string | null;
}

const INTEGRATION = "SELECT kind, enabled, callback_url, callback_disabled_at FROM integrations WHERE id = ?";
const PLUGIN = "SELECT id, project_id, enabled FROM plugins WHERE org_id = ? AND kind = 'completion_webhook'";
const INSERT = `INSERT INTO deliveries (id, org_id, target_type, target_id, task_id, event, payload, status, attempts, round_attempts, next_attempt_at, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', 0, 0, ?, ?, ?)`;

/** Who should hear of this task: the signed JSON integration that created it, and the org's plugin. */
function* targetsOf(task: TaskRow): Q<{ type: "integration" | "plugin"; id: string }[]> {
  const targets: { type: "integration" | "plugin"; id: string }[] = [];
  if (task.created_by_type === "integration") {
    const integration = yield* get<IntegrationTarget>(INTEGRATION, task.created_by_id);
    if (integration && integration.kind === "signed_json" && integration.enabled && integration.callback_url && !integration.callback_disabled_at) {
      targets.push({ type: "integration", id: task.created_by_id });
    }
  }
  const plugin = yield* get<{ id: string; project_id: string | null; enabled: number }>(PLUGIN, task.org_id);
  if (plugin && plugin.enabled && (plugin.project_id === null || plugin.project_id === task.project_id)) targets.push({ type: "plugin", id: plugin.id });
  return targets;
}

/** The task hook: runs inside the change's transaction. Returns how many outbox rows it wrote. */
export function* writeOutbox(core: Core, change: TaskChange): Q<number> {
  const event = callbackEventOf(change);
  if (!event) return 0;
  const targets = yield* targetsOf(change.after);
  if (targets.length === 0) return 0;
  const payload = JSON.stringify(callbackPayload(core, change.after, event));
  const now = iso();
  const due = Date.now();
  for (const target of targets) {
    yield* run(INSERT, newId("dlv"), change.after.org_id, target.type, target.id, change.after.id, event, payload, due, now, now);
  }
  return targets.length;
}
