// Claude Code, headless: `claude -p --output-format stream-json --verbose PROMPT`. Its stdout is one
// JSON message per line (the Agent SDK's message types): system/init, assistant (content blocks
// text, thinking, tool_use), user (tool_result blocks), result (the final text, cost, errors).
import { clip, runJsonl, type Emit } from "./jsonl";
import type { Agent, AgentContext } from "./types";

type Block = { type?: string; text?: string; thinking?: string; id?: string; name?: string; input?: unknown; tool_use_id?: string; content?: unknown; is_error?: boolean };

function blocksOf(event: Record<string, unknown>): Block[] {
  const message = event.message as { content?: unknown } | undefined;
  const content = message?.content;
  if (typeof content === "string") return [{ type: "text", text: content }];
  return Array.isArray(content) ? (content as Block[]) : [];
}

function resultText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((c) => (c && typeof c === "object" && "text" in c ? String((c as { text: unknown }).text) : "")).join("\n");
  return content === undefined ? "" : JSON.stringify(content);
}

/** Maps one stream-json message to timeline events. Exported for the parser tests. */
export function mapClaudeEvent(event: Record<string, unknown>, out: Emit) {
  switch (event.type) {
    case "system":
      if (event.subtype === "init") out.emit("log", { stream: "agent", line: `claude session ${event.session_id ?? "?"} started (model ${event.model ?? "?"})` });
      return;
    case "assistant":
      for (const b of blocksOf(event)) {
        if (b.type === "text" && b.text) out.emit("message", { role: "assistant", text: b.text });
        else if (b.type === "thinking" && b.thinking) out.emit("log", { stream: "reasoning", line: b.thinking });
        else if (b.type === "tool_use") out.emit("tool", { id: b.id ?? null, name: b.name ?? "tool", input: b.input ?? null, status: "started" });
      }
      return;
    case "user":
      for (const b of blocksOf(event)) {
        if (b.type === "tool_result") {
          out.emit("tool", { id: b.tool_use_id ?? null, output: clip(resultText(b.content)), status: b.is_error ? "failed" : "completed" });
        }
      }
      return;
    case "result": {
      const text = typeof event.result === "string" ? event.result : "";
      if (event.is_error || (typeof event.subtype === "string" && event.subtype !== "success")) {
        out.emit("error", { message: text || `claude ended with ${event.subtype}` });
      } else if (text) {
        out.summary(text);
      }
      out.emit("log", {
        stream: "agent",
        line: `claude finished: ${event.subtype ?? "?"}, ${event.num_turns ?? "?"} turns, ${event.duration_ms ?? "?"} ms, $${event.total_cost_usd ?? "?"}`,
      });
      return;
    }
  }
}

export const CLAUDE_DEFAULT_ARGS = ["--permission-mode", "acceptEdits"];

export function claudeAgent(binary = "claude", extraArgs: string[] = CLAUDE_DEFAULT_ARGS): Agent {
  return {
    name: "claude",
    start(ctx: AgentContext) {
      const args = ["-p", "--output-format", "stream-json", "--verbose", ...extraArgs];
      // A retry continues the previous attempt's conversation in the same checkout.
      if (ctx.claim.runMode === "continue") args.push("--continue");
      args.push(ctx.instructions);
      return runJsonl(ctx, binary, args, mapClaudeEvent);
    },
  };
}
