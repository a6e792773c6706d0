// What an inbound delivery means, independent of who sent it: a task to create, a ping, or
// nothing of interest. The vendor files (github.ts, gitlab.ts, signed-json.ts) produce these.
import { invalid } from "../../server/errors";
import type { Priority, TaskKind } from "../../db/schema";
import { oneLine, withoutNul } from "../../lib/text";
import { MAX_REF_LENGTH, refNameProblem } from "../../lib/refname";

export interface TaskRequest {
  title: string;
  prompt: string;
  priority?: Priority;
  kind?: TaskKind;
  review?: { base: string; head: string };
  /** The item the task came from (issue, comment, merge request), recorded as the task's source. */
  item?: { type: string; id: string | number; url?: string; number?: number };
  /** The sender's own reference (signed JSON), echoed in callbacks. */
  ref?: string;
  /** Dedupe keys of the item (the delivery id's key is added by the caller). */
  itemKeys: string[];
}

export type Interpretation = { kind: "pong" } | { kind: "ignored"; reason: string } | { kind: "task"; task: TaskRequest };

export const ignored = (reason: string): Interpretation => ({ kind: "ignored", reason });

/** Defaults of an integration's config. */
export const DEFAULT_LABEL = "ao";
export const DEFAULT_COMMAND = "/ao";

export const TITLE_MAX = 200;
export const PROMPT_MAX = 100_000;

export function clip(text: string, max: number): string {
  return text.length <= max ? text : text.slice(0, max - 1) + "…";
}

/** A task title from a webhook's text: one line (src/lib/text.ts), cut to `max`. */
export const titleOf = (text: string, max: number): string => clip(oneLine(text), max) || "(untitled)";

/** Reads a nested field of an untyped payload. */
export function field(obj: unknown, path: string): unknown {
  let cur: unknown = obj;
  for (const key of path.split(".")) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string, unknown>)[key];
  }
  return cur;
}

/** A required string (or number, as text) of the payload, or 400 naming the field. */
export function need(obj: unknown, path: string): string {
  const v = field(obj, path);
  if (typeof v === "string") return v;
  if (typeof v === "number") return String(v);
  throw invalid(`the payload lacks ${path}`, [{ field: path, message: "required" }]);
}

/**
 * A branch name the payload must carry, as git accepts it: it travels to a worker's git command line
 * (a review's base and head), so the API's rule for them holds for deliveries too.
 */
export function needRef(obj: unknown, path: string): string {
  const ref = need(obj, path);
  const problem = ref.length > MAX_REF_LENGTH ? `must be at most ${MAX_REF_LENGTH} characters` : refNameProblem(ref);
  if (problem) throw invalid(`${path} is not a branch name git accepts`, [{ field: path, message: problem }]);
  return ref;
}

export function optionalText(obj: unknown, path: string): string {
  const v = field(obj, path);
  return typeof v === "string" ? v : "";
}

/** The text after a leading command, or null when the comment does not start with it. */
export function afterCommand(body: string, command: string): string | null {
  const text = body.trimStart();
  if (!text.startsWith(command)) return null;
  const rest = text.slice(command.length);
  // "/ao" must not match "/aox": the command ends at whitespace or the end of the comment.
  if (rest !== "" && !/^\s/.test(rest)) return null;
  return rest.trim();
}

export function sameLabel(a: string, b: string): boolean {
  return a.localeCompare(b, undefined, { sensitivity: "accent" }) === 0;
}

/** A prompt from an issue's or comment's texts; a NUL in them (anyone may comment) would not store on PostgreSQL. */
export function joinPrompt(...parts: (string | null | undefined)[]): string {
  return clip(withoutNul(parts.filter((p) => p && p.trim() !== "").join("\n\n")), PROMPT_MAX);
}
