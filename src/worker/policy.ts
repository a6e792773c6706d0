// Applies a project's agent policy (src/protocol/policy.ts) to one tool call an agent wants to make.
// Adapters describe the call in these terms; the decision and what made it go on the timeline.
import { realpathSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import type { AgentPolicy, ToolKind } from "../protocol/policy";

export interface ToolCall {
  kind: ToolKind;
  /** The agent's own name for the tool (Bash, Edit, exec_command, apply_patch…). */
  name: string;
  /** What the call is about: the command line, the path, the URL. */
  subject?: string;
  /** For reads and edits: the absolute path, so the worker can tell whether it is inside the checkout. */
  path?: string;
}

export interface ToolDecision {
  decision: "allow" | "ask" | "deny";
  /** The rule that decided, or null for the built-in rules. */
  rule: string | null;
  /** The project's policy, or the built-in rules (decidedBy names them for the timeline). */
  by: "policy" | "default";
  /** Why, when the rules alone do not say it (a refusal of an unreadable file); told to the agent. */
  reason?: string;
}

/** Why a file tool may not touch an unreadable path, as the agent and the timeline read it. */
export const UNREADABLE_REASON = "it is or holds the worker's credential, which no agent may read";

/** Who decided, as the timeline's decision events name it: "policy" or "built-in rules". */
export function decidedBy(d: ToolDecision): "policy" | "built-in rules" {
  return d.by === "policy" ? "policy" : "built-in rules";
}

/** `*` matches any run of characters; everything else is literal. */
function wildcard(pattern: string, text: string): boolean {
  const re = new RegExp(`^${pattern.split("*").map((p) => p.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join("[\\s\\S]*")}$`);
  return re.test(text);
}

function matches(rule: string, call: ToolCall): boolean {
  const colon = rule.indexOf(":");
  const head = colon < 0 ? rule : rule.slice(0, colon);
  const pattern = colon < 0 ? null : rule.slice(colon + 1);
  if (head === "tool") return pattern !== null && wildcard(pattern, call.name);
  if (head !== call.kind) return false;
  return pattern === null || (call.subject !== undefined && wildcard(pattern, call.subject.trim()));
}

/** Where a path leads once its links are followed; the path itself when it does not exist (yet). */
export function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

export function insideDir(dir: string, path: string): boolean {
  const rel = relative(resolve(dir), resolve(dir, path));
  return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
}

/** The built-in rules: reading and searching run; editing inside the checkout runs; everything else asks. */
function builtIn(call: ToolCall, workdir: string): ToolDecision["decision"] {
  if (call.kind === "read" || call.kind === "search") return "allow";
  if (call.kind === "edit") return call.path !== undefined && insideDir(workdir, call.path) ? "allow" : "ask";
  return "ask";
}

/**
 * `unreadable`: files no file tool may touch whatever the policy says (the worker's credential,
 * AgentContext.unreadable): a read, search or edit of one of them, or a search or listing of a
 * directory holding one, is refused by the built-in rules.
 */
export function decideTool(policy: AgentPolicy | undefined, workdir: string, call: ToolCall, unreadable: readonly string[] = []): ToolDecision {
  if (unreadable.length > 0 && call.path !== undefined && (call.kind === "read" || call.kind === "search" || call.kind === "edit")) {
    // Both as named and where they lead: a link in the checkout to the credential is the
    // credential, and so is the credential's real path when its own path runs through a link.
    const paths = [call.path, realPath(call.path)];
    const targets = unreadable.flatMap((u) => [u, realPath(u)]);
    if (targets.some((u) => paths.some((p) => insideDir(u, p) || insideDir(p, u)))) return { decision: "deny", rule: null, by: "default", reason: UNREADABLE_REASON };
  }
  for (const decision of ["deny", "ask", "allow"] as const) {
    const rule = policy?.[decision]?.find((r) => matches(r, call));
    if (rule !== undefined) return { decision, rule, by: "policy" };
  }
  if (policy?.default) return { decision: policy.default, rule: null, by: "policy" };
  return { decision: builtIn(call, workdir), rule: null, by: "default" };
}

/** The project's agent policy from the claim's `project.policy`, or undefined when it has none. */
export function agentPolicyOf(projectPolicy: Record<string, unknown>): AgentPolicy | undefined {
  const agent = projectPolicy.agent;
  return agent && typeof agent === "object" && !Array.isArray(agent) ? (agent as AgentPolicy) : undefined;
}
