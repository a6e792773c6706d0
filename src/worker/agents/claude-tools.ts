// Claude Code's tools in ao's terms: the ToolCall the project's policy decides on, the message a
// person reads when asked to approve one, the question of its AskUserQuestion tool and the answer
// it expects back, and the short diff of an edit for the timeline.
import { isAbsolute, resolve } from "node:path";
import type { ToolCall } from "../policy";
import { clip } from "./jsonl";

type Input = Record<string, unknown>;

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);
const abs = (workdir: string, p: string | undefined) => (p === undefined ? undefined : isAbsolute(p) ? p : resolve(workdir, p));

const READ = new Set(["Read", "LS"]);
const SEARCH = new Set(["Glob", "Grep"]);
const EDIT = new Set(["Edit", "Write", "MultiEdit", "NotebookEdit"]);
const NETWORK = new Set(["WebFetch", "WebSearch"]);
/**
 * The agent's own bookkeeping (its to-do list, sub-agents whose every tool call comes through
 * here again, deferred tool loading): they touch nothing outside the agent, so the built-in rules
 * let them run; a project rule naming them (`tool:TodoWrite`) still decides.
 */
export const BOOKKEEPING = new Set(["TodoWrite", "Task", "Agent", "TaskCreate", "TaskGet", "TaskList", "TaskUpdate", "TaskOutput", "TaskStop", "ToolSearch"]);
/** The tool Claude Code asks the person a question with; its answer comes back as `answers`. */
export const QUESTION_TOOL = "AskUserQuestion";

/** One tool call as the policy sees it: kind, the agent's name for the tool, its subject and path. */
export function toolCallOf(name: string, input: Input, workdir: string): ToolCall {
  if (READ.has(name)) {
    const path = abs(workdir, str(input.file_path) ?? str(input.path)) ?? workdir;
    return { kind: "read", name, subject: path, path };
  }
  if (SEARCH.has(name)) {
    const path = abs(workdir, str(input.path)) ?? workdir;
    return { kind: "search", name, subject: path, path };
  }
  if (EDIT.has(name)) {
    const path = abs(workdir, str(input.file_path) ?? str(input.notebook_path));
    return { kind: "edit", name, ...(path ? { subject: path, path } : {}) };
  }
  if (name === "Bash") return { kind: "shell", name, subject: str(input.command) ?? "" };
  if (NETWORK.has(name)) return { kind: "network", name, subject: str(input.url) ?? str(input.query) ?? "" };
  return { kind: "other", name };
}

const DOING: Record<ToolCall["kind"], string> = {
  read: "read",
  search: "search in",
  edit: "change the file",
  shell: "run a shell command",
  network: "reach the network",
  other: "use the tool",
};

/** What a person reads before approving or denying one call: the tool, the command or file, and why the agent wants it. */
export function approvalMessage(call: ToolCall, input: Input, why: { rule: string | null; by: string; reason?: string }): string {
  const what = call.kind === "other" ? `${DOING.other} ${call.name}` : `${DOING[call.kind]} (${call.name})`;
  const lines = [`Claude Code wants to ${what}:`];
  if (call.subject) lines.push(`  ${clip(call.subject, 2000)}`);
  else if (call.kind === "other") lines.push(`  ${clip(JSON.stringify(input), 2000)}`);
  const reason = str(input.description) ?? str(input.prompt) ?? why.reason;
  if (reason) lines.push(`Its reason: ${clip(reason, 1000)}`);
  lines.push(why.rule ? `Asked because of the ${why.by} rule "${why.rule}".` : `Asked by the ${why.by}.`);
  return lines.join("\n");
}

interface Question {
  question?: string;
  header?: string;
  options?: { label?: string; description?: string }[];
  multiSelect?: boolean;
}

function questionsOf(input: Input): Question[] {
  return Array.isArray(input.questions) ? (input.questions as Question[]).filter((q) => q && typeof q === "object") : [];
}

/** The agent's question(s) for the person, with the choices it offers. */
export function questionText(input: Input): string {
  const qs = questionsOf(input);
  if (qs.length === 0) return "Claude Code asks for your input.";
  return qs
    .map((q) => {
      const opts = (q.options ?? []).map((o) => `  - ${o.label ?? ""}${o.description ? `: ${o.description}` : ""}`);
      return [`${q.header ? `[${q.header}] ` : ""}${q.question ?? ""}${q.multiSelect ? " (several may be chosen)" : ""}`, ...opts].join("\n");
    })
    .join("\n\n")
    .concat("\n\nAnswer with input; your text is the answer (to every question, when there are several).");
}

/** The tool input that answers every question with the person's text, as AskUserQuestion reads it. */
export function answeredInput(input: Input, text: string): Input {
  const answers: Record<string, string> = {};
  for (const q of questionsOf(input)) if (q.question) answers[q.question] = text;
  return { ...input, answers };
}

const excerpt = (text: unknown, max = 1500) => (typeof text === "string" ? clip(text, max) : "");
const lines = (prefix: string, text: string) => (text === "" ? [] : text.split("\n").map((l) => prefix + l));

/** The edit event of a file change the agent made: path and a short diff (removed -, added +). */
export function editOf(name: string, input: Input, workdir: string): { path: string; tool: string; diff: string } | null {
  const path = abs(workdir, str(input.file_path) ?? str(input.notebook_path));
  if (!path) return null;
  const hunks: string[] = [];
  if (name === "Edit") hunks.push([...lines("-", excerpt(input.old_string)), ...lines("+", excerpt(input.new_string))].join("\n"));
  else if (name === "MultiEdit" && Array.isArray(input.edits)) {
    for (const e of (input.edits as Input[]).slice(0, 10)) hunks.push([...lines("-", excerpt(e.old_string, 500)), ...lines("+", excerpt(e.new_string, 500))].join("\n"));
  } else if (name === "Write") hunks.push(lines("+", excerpt(input.content)).join("\n"));
  else if (name === "NotebookEdit") hunks.push(lines("+", excerpt(input.new_source)).join("\n"));
  else return null;
  return { path, tool: name, diff: [`--- ${path}`, `+++ ${path}`, ...hunks.map((h) => `@@\n${h}`)].join("\n") };
}
