// @ts-check
// What the task page knows without the page or the network: the task's types, the actions each
// state allows (the buttons), and how events, sizes and times read. A bun test imports it to
// compare the action table with the server's.

/** @typedef {"queued" | "running" | "paused" | "needs_input" | "needs_approval" | "completed" | "failed" | "cancelled"} Status */
/** @typedef {"pause" | "resume" | "cancel" | "retry" | "restart" | "input" | "approve" | "deny"} Action */
/** @typedef {{ name: string, contentType: string, size: number, createdAt: string }} Artifact */
/**
 * @typedef {{ id: string, orgId: string, projectId: string, title: string, prompt: string, priority: string, kind: string,
 *   review: { base: string, head: string } | null, status: Status, attempt: number, workerId: string | null,
 *   worker?: { id: string, name: string | null } | null, parentId: string | null,
 *   createdBy: Who, summary: string | null, needs: { kind: string, message: string } | null,
 *   plan: { tasks: unknown[] } | null, artifacts: Artifact[], createdAt: string, updatedAt: string,
 *   startedAt: string | null, finishedAt: string | null }} Task
 */
/** @typedef {{ type: string, id: string, name?: string | null }} Who */
/** @typedef {{ seq: number, type: string, at: string, actor?: Who, data: unknown }} TaskEvent */
/** @typedef {{ id: string, name: string, role: string }} Org */

/** The actions in the server's order. */
export const ACTIONS = /** @type {const} */ (["pause", "resume", "cancel", "retry", "restart", "input", "approve", "deny"]);

const NON_TERMINAL = /** @type {Status[]} */ (["queued", "running", "paused", "needs_input", "needs_approval"]);

/**
 * Where each action is allowed from: a copy of ACTION_TABLE in src/modules/tasks/machine.ts (the
 * browser cannot import server code; test/web/task.test.ts checks that the two are equal).
 * @type {Record<Action, readonly Status[]>}
 */
export const ACTION_FROM = {
  pause: ["queued", "running", "needs_input", "needs_approval"],
  resume: ["paused"],
  cancel: NON_TERMINAL,
  retry: ["failed", "cancelled"],
  restart: ["running", "paused", "needs_input", "needs_approval", "completed", "failed", "cancelled"],
  input: ["needs_input", "running"],
  approve: ["needs_approval"],
  deny: ["needs_approval"],
};

/** @param {Status} status */
export function allowedActions(status) {
  return ACTIONS.filter((a) => ACTION_FROM[a].includes(status));
}

/** @type {Record<Action, string>} */
export const LABELS = { pause: "Pause", resume: "Resume", cancel: "Cancel", retry: "Retry", restart: "Restart", input: "Send input", approve: "Approve", deny: "Deny" };
/** @type {Partial<Record<Action, string>>} */
export const BUTTON_CLASS = { approve: "primary", input: "primary", resume: "primary", retry: "primary", cancel: "danger", deny: "danger" };

/** @param {string} text @param {number} max */
export const truncate = (text, max) => {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? one.slice(0, max - 1) + "…" : one;
};

/**
 * Who, for people (as the command line's `who`): a person (or their token) by name, a worker or
 * integration by kind and name; the id when the server named none.
 * @param {Who} r
 */
export function who(r) {
  if (!r.name) return `${r.type} ${r.id}`;
  return r.type === "user" || r.type === "token" ? r.name : `${r.type} ${r.name}`;
}

/**
 * What an event says, in one line (the browser's version of the command line's eventText in
 * src/cli/client/format.ts); unknown shapes fall back to their JSON.
 * @param {TaskEvent} e
 */
export function eventText(e) {
  const d = /** @type {Record<string, unknown>} */ (e.data && typeof e.data === "object" ? e.data : {});
  /** @param {unknown} v */
  const s = (v) => (typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v));
  const by = e.actor ? ` by ${who(e.actor)}` : "";
  switch (e.type) {
    case "status":
      return `${d.from ? `${s(d.from)} → ` : ""}${s(d.to)}${by}${d.reason || d.message ? `: ${s(d.reason ?? d.message)}` : d.summary ? `: ${truncate(s(d.summary), 200)}` : ""}`;
    case "action":
      return `${s(d.action)}${by}${d.reason ? `: ${s(d.reason)}` : ""}${d.input ? ` (input: ${truncate(s(d.input), 80)})` : ""}`;
    case "log":
      // stdout is the ordinary case; other streams (stderr, reasoning, agent) are named.
      return `${d.stream && d.stream !== "stdout" ? `[${s(d.stream)}] ` : ""}${s(d.line ?? d.text ?? e.data)}`;
    case "tool": {
      const parts = [s(d.name ?? "tool"), s(d.status)];
      if (d.input !== undefined && d.input !== null) parts.push(truncate(s(d.input), 120));
      if (d.output !== undefined && d.output !== null) parts.push(`→ ${truncate(s(d.output), 120)}`);
      return parts.filter(Boolean).join(" ");
    }
    case "artifact":
      return `${s(d.name)}${typeof d.size === "number" ? ` (${sizeText(d.size)})` : ""}`;
    case "plan":
      // apply-plan writes {applied: [task ids]}; any other shape is shown as it is.
      return Array.isArray(d.applied) ? `applied${by}: ${d.applied.length} task${d.applied.length === 1 ? "" : "s"} created (${d.applied.join(", ")})` : asItIs(e, d);
    default:
      return asItIs(e, d);
  }
}

/**
 * An event of a type without its own phrase: its text, or its JSON.
 * @param {TaskEvent} e
 * @param {Record<string, unknown>} d
 */
function asItIs(e, d) {
  if (typeof e.data === "string") return e.data;
  const text = d.text ?? d.line ?? d.message ?? d.summary;
  if (typeof text === "string") return text;
  return e.data === null || e.data === undefined ? "" : JSON.stringify(e.data);
}

/** @param {number} n bytes */
export function sizeText(n) {
  if (n < 1024) return `${n} byte${n === 1 ? "" : "s"}`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** @param {string} iso local "HH:MM:SS" */
export function clock(iso) {
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? iso : t.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}
