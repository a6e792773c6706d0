// The tool calls an attempt started and never finished, closed on its timeline when the attempt
// ends with them open: a person cancels or restarts the task, its worker is lost or revoked (the
// lease is gone, so a result it would report is refused), or the worker reports the attempt over
// (its agent died mid-call: nothing will report them). Without this they read as running for good.
import { all, type Q } from "../../db/query";
import type { TaskRow } from "./record";
import type { EventInput } from "./store";

const TOOL_EVENTS = "SELECT data FROM task_events WHERE task_id = ? AND attempt = ? AND type = 'tool' ORDER BY seq";

/** A tool event (status interrupted, `why` as its output) for each call of the row's attempt that has no result. */
export function* interruptedCalls(row: TaskRow, why: string): Q<EventInput[]> {
  const open = new Map<string, Record<string, unknown>>();
  for (const e of yield* all<{ data: string | null }>(TOOL_EVENTS, row.id, row.attempt)) {
    const d = e.data ? (JSON.parse(e.data) as Record<string, unknown> | null) : null;
    // A call is paired with its result by id (the agents' own call ids); one without cannot be.
    if (!d || typeof d.id !== "string") continue;
    if (d.status === "started") open.set(d.id, d);
    else open.delete(d.id);
  }
  return [...open.values()].map((d) => ({
    type: "tool",
    attempt: row.attempt,
    data: { id: d.id, name: d.name ?? "tool", input: d.input ?? null, output: why, status: "interrupted" },
  }));
}
