// Human-readable output: aligned columns, short timeline lines, task details.
import type { Task, TaskEvent } from "./types";
import { eventText as eventLine, truncate, who } from "../../modules/tasks/event-text";
import { costText, usd } from "../../lib/money";

/**
 * Text from the server made safe for a terminal: titles, logs and summaries come from people,
 * webhooks and agents, and an escape sequence in them could rewrite the screen, the window
 * title or the clipboard. Control characters other than newline and tab are shown as \xNN.
 */
export function printable(text: string): string {
  return text.replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`);
}

export function table(headers: string[], rows: string[][]): string {
  rows = rows.map((r) => r.map(printable));
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}

const pad2 = (n: number) => String(n).padStart(2, "0");

/** Local "YYYY-MM-DD HH:MM". */
export function dateTime(isoText: string | null | undefined): string {
  if (!isoText) return "-";
  const d = new Date(isoText);
  if (Number.isNaN(d.getTime())) return isoText;
  return `${d.getFullYear()}-${pad2(d.getMonth() + 1)}-${pad2(d.getDate())} ${pad2(d.getHours())}:${pad2(d.getMinutes())}`;
}

/** Local "HH:MM:SS". */
export function clock(isoText: string): string {
  const d = new Date(isoText);
  if (Number.isNaN(d.getTime())) return isoText;
  return `${pad2(d.getHours())}:${pad2(d.getMinutes())}:${pad2(d.getSeconds())}`;
}

export { truncate, who };

/** What an event says, in one line; unknown shapes fall back to their JSON. */
export const eventText = (e: TaskEvent) => eventLine(e, { arrow: "->", size: (n) => `${n} bytes` });

/** `#seq time type text`; continuation lines of a multi-line text are indented. */
export function timelineLine(e: TaskEvent): string {
  return printable(`#${e.seq} ${clock(e.at)} ${e.type} ${eventText(e).replace(/\r?\n/g, "\n    ")}`.trimEnd());
}

export function taskRows(tasks: Task[]): string {
  return table(
    ["ID", "STATUS", "PRIORITY", "KIND", "UPDATED", "TITLE"],
    tasks.map((t) => [t.id, t.status, t.priority, t.kind, dateTime(t.updatedAt), truncate(t.title, 60)]),
  );
}

/** "3 files, +10 -2 on ao/tsk_… (pushed)", or that nothing changed. */
export function changesText(c: NonNullable<Task["changes"]>): string {
  if (!c.branch) return "none (the task changed no file)";
  const where = `${c.branch}${c.commit ? ` at ${c.commit.slice(0, 12)}` : ""}`;
  return `${c.files} file${c.files === 1 ? "" : "s"}, +${c.additions} -${c.deletions} on ${where}${c.pushed ? " (pushed)" : " (not pushed)"}`;
}

export function taskDetails(t: Task): string {
  const rows: [string, string][] = [
    ["status", `${t.status}${t.attempt ? ` (attempt ${t.attempt})` : ""}`],
    // Beside the status it explains, as the task page shows it.
    ...(t.failureReason ? [["reason", t.failureReason] as [string, string]] : []),
    ["project", t.projectId],
    ["priority", t.priority],
    ["kind", t.kind + (t.review ? ` (${t.review.base}...${t.review.head})` : "")],
  ];
  if (t.workerId) rows.push(["worker", t.worker?.name ? `${t.worker.name} (${t.workerId})` : t.workerId]);
  if (t.parentId) rows.push(["parent", t.parentId]);
  rows.push(["created", `${dateTime(t.createdAt)}${t.createdBy ? ` by ${who(t.createdBy)}` : ""}`]);
  rows.push(["updated", dateTime(t.updatedAt)]);
  if (t.startedAt) rows.push(["started", dateTime(t.startedAt)]);
  if (t.finishedAt) rows.push(["finished", dateTime(t.finishedAt)]);
  if (t.agent) rows.push(["agent", t.agent]);
  if (t.waitingReason) rows.push(["waiting", t.waitingReason]);
  if (t.needs) rows.push(["needs", `${t.needs.kind}: ${t.needs.message}`]);
  if (t.usage) rows.push(["usage", usageText(t.usage, t.finishedAt !== null)]);
  if (t.allowanceUsd !== undefined && t.allowanceUsd !== null) rows.push(["budget", `${usd(t.allowanceUsd)} for the task`]);
  if (t.summary) rows.push(["summary", t.summary]);
  if (t.changes) rows.push(["changes", changesText(t.changes)]);
  if (t.pullRequest) {
    const pr = t.pullRequest;
    rows.push(["pull request", `#${pr.number} ${pr.state}${pr.draft ? " (draft)" : ""} ${pr.url}`]);
    if (pr.reviewUrl) rows.push(["review", pr.reviewUrl]);
  }
  for (const a of t.artifacts ?? []) rows.push(["artifact", `${a.name} (${a.contentType}, ${a.size} bytes)`]);
  if (t.plan?.tasks?.length) rows.push(["plan", `${t.plan.tasks.length} proposed task(s)`]);
  const width = Math.max(...rows.map(([k]) => k.length));
  const body = rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join("\n");
  const prompt = t.prompt.split("\n").map((l) => `  ${l}`).join("\n");
  return printable(`${t.id}  ${t.title}\n${body}${proposedText(t)}\nprompt:\n${prompt}`);
}

/** A completed plan's proposals, one a line: "  2. Write the API [HIGH review main...x codex]" (ao task show, create --wait). */
export function proposedText(t: Task): string {
  if (t.kind !== "plan" || !t.plan?.tasks?.length) return "";
  const lines = t.plan.tasks.map((raw, i) => {
    const p = (raw && typeof raw === "object" ? raw : {}) as { title?: unknown; priority?: unknown; kind?: unknown; review?: { base?: unknown; head?: unknown }; agent?: unknown };
    const review = p.kind === "review" && p.review ? `review ${String(p.review.base)}...${String(p.review.head)}` : p.kind;
    const tags = [p.priority, review, p.agent].filter((x) => typeof x === "string" && x !== "task");
    return `  ${i + 1}. ${typeof p.title === "string" ? p.title : "(untitled)"}${tags.length ? ` [${tags.join(" ")}]` : ""}`;
  });
  const how = t.status === "completed" ? ` (ao task apply-plan ${t.id} creates them)` : "";
  return `\nproposed${how}:\n${lines.join("\n")}`;
}

/** Tokens and cost on one line: "$0.42 · 12,000 in, 800 out, 9,000 cache read, 0 cache write · claude-sonnet-4". */
function usageText(u: NonNullable<Task["usage"]>, ended: boolean): string {
  const n = (x: number) => x.toLocaleString("en-US");
  const tokens = `${n(u.inputTokens)} in, ${n(u.outputTokens)} out, ${n(u.cacheReadTokens)} cache read, ${n(u.cacheWriteTokens)} cache write`;
  // As the task page writes it; the budget row is to the cent, as messages are (src/lib/money.ts).
  const cost = costText(u, ended);
  return [cost.startsWith("$") ? cost : `cost ${cost}`, tokens, ...(u.model ? [u.model] : [])].join(" · ");
}

/** What to do next when a task waits for a person. */
export function attentionHint(t: Task): string {
  return printable(attentionText(t));
}

function attentionText(t: Task): string {
  if (t.status === "needs_input") return `task ${t.id} needs input${t.needs?.message ? `: ${t.needs.message}` : ""}\n  answer with: ao task input ${t.id} --input TEXT`;
  if (t.needs?.kind === "budget") return `task ${t.id} is ${t.needs.message}\n  decide with: ao task approve ${t.id} (raises its allowance)  or  ao task deny ${t.id} (cancels it)`;
  return `task ${t.id} needs approval${t.needs?.message ? `: ${t.needs.message}` : ""}\n  decide with: ao task approve ${t.id}  or  ao task deny ${t.id} --reason R`;
}
