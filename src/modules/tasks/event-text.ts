// What a timeline event says, in one line, for people: the command line's `ao task events` and
// the web app's task page both show it (each with its own arrow and size units). Pure: it imports
// only src/lib/money.ts (no imports either), so the browser bundle can take it.
import { usd } from "../../lib/money";

export interface Who {
  type: string;
  id: string;
  name?: string | null;
}

/** An event as the API answers it (the fields the line needs). */
export interface EventLike {
  type: string;
  data?: unknown;
  actor?: Who | null;
}

/** How the caller writes an arrow and a size: "->" and bytes in a terminal, "→" and KiB on a page. */
export interface TextStyle {
  arrow: string;
  size: (bytes: number) => string;
}

/** Who, for people: a person (or their token) by name, a worker or integration by kind and name; the id when unnamed. */
export function who(r: Who): string {
  if (!r.name) return `${r.type} ${r.id}`;
  return r.type === "user" || r.type === "token" ? r.name : `${r.type} ${r.name}`;
}

/** One line of at most `max` characters, whitespace runs folded. */
export function truncate(text: string, max: number): string {
  const one = text.replace(/\s+/g, " ").trim();
  return one.length > max ? one.slice(0, max - 1) + "…" : one;
}

const str = (v: unknown) => (typeof v === "string" ? v : v === undefined || v === null ? "" : JSON.stringify(v));
const objectOf = (v: unknown) => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const dollars = (v: unknown) => (typeof v === "number" ? usd(v) : str(v));

export function eventText(e: EventLike, style: TextStyle): string {
  const d = objectOf(e.data);
  const by = e.actor ? ` by ${who(e.actor)}` : "";
  switch (e.type) {
    case "status": {
      // The question a task waits on is what a person needs to act.
      const needs = str(objectOf(d.needs).message);
      const why = d.reason || d.message ? str(d.reason ?? d.message) : needs || (d.summary ? truncate(str(d.summary), 200) : "");
      return `${d.from ? `${str(d.from)} ${style.arrow} ` : ""}${str(d.to)}${by}${why ? `: ${why}` : ""}`;
    }
    case "action": {
      const budget = objectOf(d.budget);
      const answer = typeof budget.allowanceUsd === "number" ? ` (allowance now ${dollars(budget.allowanceUsd)})` : budget.cancelled ? " (the task stops)" : "";
      return `${str(d.action)}${by}${d.reason ? `: ${str(d.reason)}` : ""}${d.input ? ` (input: ${truncate(str(d.input), 80)})` : ""}${answer}`;
    }
    case "log":
      // stdout is the ordinary case; other streams (stderr, reasoning, agent) are named.
      return `${d.stream && d.stream !== "stdout" ? `[${str(d.stream)}] ` : ""}${str(d.line ?? d.text ?? e.data)}`;
    case "tool": {
      const parts = [str(d.name ?? "tool"), str(d.status)];
      if (d.input !== undefined && d.input !== null) parts.push(truncate(str(d.input), 120));
      if (d.output !== undefined && d.output !== null) parts.push(`${style.arrow} ${truncate(str(d.output), 120)}`);
      return parts.filter(Boolean).join(" ");
    }
    case "edit": {
      const path = str(d.path ?? d.file);
      if (!path) return asItIs(e, d);
      const counts = typeof d.additions === "number" || typeof d.deletions === "number" ? ` +${Number(d.additions ?? 0)} -${Number(d.deletions ?? 0)}` : "";
      return `${path}${counts}`;
    }
    case "decision": {
      // An agent's tool call weighed against the project's policy, or a budget passed.
      if (!d.decision) return asItIs(e, d);
      if (d.kind === "budget") return `${str(d.decision)}: over budget, ${dollars(d.costUsd)} of ${dollars(d.allowanceUsd)}${d.rule ? ` (${str(d.rule)})` : ""}`;
      const subject = d.subject ? ` ${truncate(str(d.subject), 160)}` : "";
      const rule = d.rule ? ` (rule ${str(d.rule)})` : d.by === "default" ? " (built-in rules)" : d.by ? ` (${str(d.by)})` : "";
      return `${str(d.decision)} ${str(d.name ?? d.tool ?? d.kind)}${subject}${rule}${d.reason ? `: ${str(d.reason)}` : ""}${by}`;
    }
    case "pull_request":
    case "review":
      // Written by the code-hosting app: opened / merged / closed / reopened / posted, or backing off and failed with a message.
      return d.message ? `${str(d.action)}: ${str(d.message)}` : `${str(d.action)}${d.number ? ` #${str(d.number)}` : ""}${d.url ? ` ${str(d.url)}` : ""}${d.by ? ` by ${str(d.by)}` : ""}`;
    case "artifact":
      return `${str(d.name)}${typeof d.size === "number" ? ` (${style.size(d.size)})` : ""}`;
    case "plan":
      // apply-plan writes {applied: [task ids]}; any other shape is shown as it is.
      return Array.isArray(d.applied) ? `applied${by}: ${d.applied.length} task${d.applied.length === 1 ? "" : "s"} created (${d.applied.join(", ")})` : asItIs(e, d);
    default:
      return asItIs(e, d);
  }
}

/** An event of a type without its own phrase: its text, or its JSON. */
function asItIs(e: EventLike, d: Record<string, unknown>): string {
  if (typeof e.data === "string") return e.data;
  const text = d.text ?? d.line ?? d.message ?? d.summary;
  if (typeof text === "string") return text;
  return e.data === null || e.data === undefined ? "" : JSON.stringify(e.data);
}
