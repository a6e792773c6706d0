// Codex's approval requests in the policy's terms (src/worker/policy.ts): which tool calls an ask
// is about, and the question a person reads when the policy leaves it to them.
import { isAbsolute, join, resolve } from "node:path";
import type { ToolCall, ToolDecision } from "../policy";
import { changedFiles, unwrapShell } from "./codex-items";

export interface Asked {
  calls: ToolCall[];
  /** The question for a person: `Codex asks to run: …`, `Codex asks to edit …`. */
  what: string;
}

/** The strictest of several decisions (a patch over several files). */
export function strictest(decisions: ToolDecision[]): ToolDecision {
  for (const d of ["deny", "ask", "allow"] as const) {
    const hit = decisions.find((x) => x.decision === d);
    if (hit) return hit;
  }
  return { decision: "ask", rule: null, by: "default" };
}

/** An exec approval request as the policy's calls (a read, a search, a shell command, a network access) and the question for a person. */
export function commandCalls(params: any, workdir: string): Asked {
  const network = params.networkApprovalContext;
  if (network?.host) {
    const subject = String(network.host);
    return { calls: [{ kind: "network", name: "exec_command", subject }], what: `Codex asks for network access to ${subject} (${network.protocol ?? "?"})` };
  }
  const command = unwrapShell(String(params.command ?? ""));
  const cwd = params.cwd ? resolve(workdir, String(params.cwd)) : workdir;
  const where = cwd !== resolve(workdir) ? ` in ${params.cwd}` : "";
  const what = `Codex asks to run: ${command}${where}`;
  // A command Codex parsed as only reading or searching files (cat, ls, grep, rg...) is a read or
  // a search of those paths, which the policy may let run; anything else is a shell command.
  const actions: any[] = Array.isArray(params.commandActions) ? params.commandActions : [];
  if (actions.length > 0 && actions.every((a) => a?.type === "read" || a?.type === "listFiles" || a?.type === "search")) {
    const calls = actions.map((a): ToolCall => {
      const path = typeof a.path === "string" && a.path ? resolve(cwd, a.path) : cwd;
      return a.type === "read" ? { kind: "read", name: "exec_command", subject: path, path } : { kind: "search", name: "exec_command", subject: a.type === "search" && a.query ? String(a.query) : path, path };
    });
    return { calls, what };
  }
  return { calls: [{ kind: "shell", name: "exec_command", subject: command }], what };
}

/** An apply-patch approval request (its fileChange item, started before it) as edits of each file, and the question. */
export function fileCalls(params: any, workdir: string, item: any): Asked {
  const files = item ? changedFiles(item, workdir) : [];
  const calls: ToolCall[] = files.map((f) => ({ kind: "edit", name: "apply_patch", subject: f.path, path: isAbsolute(f.path) ? f.path : join(workdir, f.path) }));
  // Write access beyond the checkout for the rest of the session: an edit of that root.
  if (typeof params.grantRoot === "string" && params.grantRoot) calls.push({ kind: "edit", name: "apply_patch", subject: params.grantRoot, path: params.grantRoot });
  if (calls.length === 0) calls.push({ kind: "edit", name: "apply_patch" });
  const listed = files.map((f) => `${f.path} (${f.kind})`).join(", ") || "files";
  return { calls, what: `Codex asks to edit ${listed}${params.grantRoot ? ` and to write under ${params.grantRoot}` : ""}` };
}
