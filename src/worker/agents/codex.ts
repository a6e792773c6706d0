// Codex, headless: `codex exec --json PROMPT`. Its stdout is JSON Lines of thread events
// (thread.started, turn.started/completed/failed, item.started/updated/completed, error); items
// are agent_message, reasoning, command_execution, file_change, mcp_tool_call, web_search,
// todo_list and error.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { clip, runJsonl, type Emit } from "./jsonl";
import type { Agent, AgentContext } from "./types";

type Item = { id?: string; type?: string; [k: string]: unknown };

function mapItem(phase: "started" | "completed", item: Item, out: Emit) {
  const id = item.id ?? null;
  switch (item.type) {
    case "agent_message":
      if (phase === "completed" && typeof item.text === "string") {
        out.emit("message", { role: "assistant", text: item.text });
        out.summary(item.text); // the last message of the turn is the answer
      }
      return;
    case "reasoning":
      if (phase === "completed" && typeof item.text === "string") out.emit("log", { stream: "reasoning", line: item.text });
      return;
    case "command_execution":
      if (phase === "started") out.emit("tool", { id, name: "shell", input: { command: item.command }, status: "started" });
      else out.emit("tool", { id, name: "shell", input: { command: item.command }, output: clip(item.aggregated_output), exitCode: item.exit_code ?? null, status: item.status ?? "completed" });
      return;
    case "file_change":
      if (phase === "completed") out.emit("tool", { id, name: "file_change", input: { changes: item.changes }, status: item.status ?? "completed" });
      return;
    case "mcp_tool_call":
      if (phase === "started") out.emit("tool", { id, name: `${item.server}.${item.tool}`, input: item.arguments ?? null, status: "started" });
      else out.emit("tool", { id, name: `${item.server}.${item.tool}`, output: clip(item.result ?? item.error ?? null), status: item.status ?? "completed" });
      return;
    case "web_search":
      if (phase === "completed") out.emit("tool", { id, name: "web_search", input: { query: item.query }, status: "completed" });
      return;
    case "todo_list":
      if (phase === "completed" && Array.isArray(item.items)) {
        const lines = (item.items as { text?: string; completed?: boolean }[]).map((t) => `${t.completed ? "[x]" : "[ ]"} ${t.text ?? ""}`);
        out.emit("log", { stream: "agent", line: `plan:\n${lines.join("\n")}` });
      }
      return;
    case "error":
      if (phase === "completed") out.emit("error", { message: String(item.message ?? "codex reported an error") });
      return;
  }
}

/** Maps one `codex exec --json` line to timeline events. Exported for the parser tests. */
export function mapCodexEvent(event: Record<string, unknown>, out: Emit) {
  switch (event.type) {
    case "thread.started":
      return out.emit("log", { stream: "agent", line: `codex thread ${event.thread_id ?? "?"} started` });
    case "item.started":
    case "item.completed":
      if (event.item && typeof event.item === "object") mapItem(event.type === "item.started" ? "started" : "completed", event.item as Item, out);
      return;
    case "turn.completed": {
      const u = (event.usage ?? {}) as Record<string, unknown>;
      return out.emit("log", { stream: "agent", line: `codex turn completed: ${u.input_tokens ?? "?"} input tokens, ${u.output_tokens ?? "?"} output tokens` });
    }
    case "turn.failed":
      return out.emit("error", { message: String((event.error as { message?: unknown } | undefined)?.message ?? "the codex turn failed") });
    case "error":
      return out.emit("error", { message: String(event.message ?? "codex stream error") });
  }
}

export const CODEX_DEFAULT_ARGS = ["--full-auto"];

export function codexAgent(binary = "codex", extraArgs: string[] = CODEX_DEFAULT_ARGS): Agent {
  return {
    name: "codex",
    start(ctx: AgentContext) {
      const args = ["exec", "--json", ...extraArgs];
      // Codex refuses to run outside a git repository unless told (a project without repositories).
      if (!existsSync(join(ctx.workdir, ".git"))) args.push("--skip-git-repo-check");
      if (ctx.claim.runMode === "continue") args.push("resume", "--last");
      args.push(ctx.instructions);
      return runJsonl(ctx, binary, args, mapCodexEvent);
    },
  };
}
