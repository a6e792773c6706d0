// Shared by the adapters of agents that stream JSON lines (Claude Code, Codex): run the command
// line in a process group, hand each parsed line to a mapper, keep non-JSON lines as logs.
import { spawnGroup } from "../process";
import type { AgentContext, AgentRun } from "./types";

export type Emit = Pick<AgentContext, "emit" | "summary">;

export function runJsonl(ctx: AgentContext, command: string, args: string[], map: (event: Record<string, unknown>, out: Emit) => void): AgentRun {
  const proc = spawnGroup(command, args, {
    cwd: ctx.workdir,
    env: ctx.env,
    onStdout: (line) => feedJsonLine(line, ctx, map),
    onStderr: (line) => ctx.emit("log", { stream: "stderr", line }),
  });
  return {
    pid: proc.pid,
    exited: proc.exited,
    pause: () => proc.signal("SIGSTOP"),
    resume: () => proc.signal("SIGCONT"),
    cancel: (graceMs) => proc.terminate(graceMs),
    // These agents run headless: an answer becomes a log line for the record, nothing more.
    answer: (a) => ctx.emit("log", { stream: "stdin", line: a.kind === "input" ? a.text : a.kind === "deny" ? `deny ${a.reason}` : "approve" }),
  };
}

/** Parses one output line; a line that is not a JSON object is kept as a log line. */
export function feedJsonLine(line: string, out: Pick<AgentContext, "emit" | "summary">, map: (event: Record<string, unknown>, out: Emit) => void) {
  const trimmed = line.trim();
  if (!trimmed) return;
  let event: unknown;
  try {
    event = JSON.parse(trimmed);
  } catch {
    return out.emit("log", { stream: "stdout", line });
  }
  if (!event || typeof event !== "object" || Array.isArray(event)) return out.emit("log", { stream: "stdout", line });
  map(event as Record<string, unknown>, out);
}

/** Long tool outputs are cut for the timeline; the agent keeps the whole. */
export function clip(text: unknown, max = 4000): string {
  const s = typeof text === "string" ? text : JSON.stringify(text ?? "");
  return s.length > max ? `${s.slice(0, max)}… (${s.length - max} more characters)` : s;
}
