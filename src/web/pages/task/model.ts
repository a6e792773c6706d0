// What the task page knows without the network: the actions each state allows (the server's own
// state machine table, imported), their labels and keys, and how events, sizes and times read.
import { ACTIONS, allowedActions as allowed, TERMINAL, type Action } from "../../../modules/tasks/machine";
import type { Status, Task, TaskEvent } from "../../app/types";
import { eventText as eventLine, truncate, who } from "../../../modules/tasks/event-text";

export { ACTIONS, TERMINAL, type Action };
export const allowedActions = (status: Status): Action[] => allowed(status);

export const LABELS: Record<Action, string> = { pause: "Pause", resume: "Resume", cancel: "Cancel", retry: "Retry", restart: "Restart", input: "Send input", approve: "Approve", deny: "Deny" };
/** What the status reads while an action is on its way (optimistic: the answer replaces it). */
export const PENDING: Record<Action, string> = { pause: "pausing…", resume: "resuming…", cancel: "cancelling…", retry: "retrying…", restart: "restarting…", input: "sending input…", approve: "approving…", deny: "denying…" };
export const BUTTON_CLASS: Partial<Record<Action, string>> = { approve: "primary", input: "primary", resume: "primary", retry: "primary", cancel: "danger", deny: "danger" };
/** The task page's keyboard shortcuts (p pauses or resumes). */
export const KEYS: Partial<Record<Action, string>> = { approve: "a", deny: "d", pause: "p", resume: "p" };

/** What an action that cannot be undone asks first: the question, the button that confirms and the one that backs out. */
export interface AskFirst {
  question: string;
  yes: string;
  no: string;
}

/**
 * Whether `action` asks first, and how: cancel stops a working agent, restart drops what the last
 * attempt reported (a fresh start, not Retry's going on), and a denied budget question cancels the
 * task (the server's BUDGET_ANSWERS). The other actions are answers the task asked for, or undone by another.
 */
export function askFirst(action: Action, needs: Task["needs"]): AskFirst | null {
  switch (action) {
    case "cancel":
      return { question: "Cancel this task? An agent working on it stops now.", yes: "Yes, cancel", no: "Keep it" };
    case "restart":
      return { question: "Restart this task from the beginning? An agent working on it stops, the summary and changes so far are cleared, and a fresh attempt queues.", yes: "Yes, restart", no: "Keep it" };
    case "deny":
      return needs?.kind === "budget" ? { question: "Deny more budget? That cancels the task.", yes: "Yes, deny and cancel", no: "Go back" } : null;
    default:
      return null;
  }
}

export { truncate, who };

export const dataOf = (e: TaskEvent) => (e.data && typeof e.data === "object" ? (e.data as Record<string, unknown>) : {});

/** What an event says, in one line (the same phrases as the command line's `ao task events`). */
export const eventText = (e: TaskEvent) => eventLine(e, { arrow: "→", size: sizeText });

export function sizeText(n: number): string {
  if (n < 1024) return `${n} byte${n === 1 ? "" : "s"}`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

/** Local "HH:MM:SS". */
export function clock(iso: string): string {
  const t = new Date(iso);
  return Number.isNaN(t.getTime()) ? iso : t.toLocaleTimeString(undefined, { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

export const tokens = (n: number) => (n >= 10_000 ? `${(n / 1000).toFixed(n >= 100_000 ? 0 : 1)}k` : String(n));

/** How long from one moment to another, roughly: "42 s", "3 min", "2 h 5 min", "3 days". */
export function duration(fromIso: string, toIso: string): string {
  const sec = Math.max(0, Math.round((Date.parse(toIso) - Date.parse(fromIso)) / 1000));
  if (sec < 60) return `${sec} s`;
  const min = Math.round(sec / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 48) return min % 60 ? `${h} h ${min % 60} min` : `${h} h`;
  return `${Math.round(h / 24)} days`;
}
