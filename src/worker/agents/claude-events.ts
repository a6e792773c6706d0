// Claude Code's messages (the Agent SDK's: system/init, assistant with text, thinking and tool_use
// blocks, user with tool_result blocks, result) as the task's timeline: message, tool (input, then
// a short result and status), edit (path and a short diff), error and log events; and the usage
// it reports, summed over the attempt for ctx.usage.
import type { AgentUsage } from "./types";
import { editOf } from "./claude-tools";
import { clip, type Emit } from "./jsonl";

type Block = { type?: string; text?: string; thinking?: string; id?: string; name?: string; input?: unknown; tool_use_id?: string; content?: unknown; is_error?: boolean };
type Usage = { input_tokens?: number; output_tokens?: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };

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

const n = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : 0);

/**
 * A model as the API names it: Claude Code's session start adds its context-window marker
 * ("claude-opus-4-8[1m]"), which the answers' model does not carry; usage is to list one model once.
 */
const modelName = (model: string) => model.replace(/\[[^\]]*\]$/, "");

/**
 * The attempt's usage from what Claude Code reports: each API answer's usage as it streams (keyed by
 * message id: the blocks of one answer arrive as several messages carrying the same usage), and the
 * result's totals over every model it used (modelUsage, with the cost it computes). The larger wins,
 * field by field, so the figures only grow.
 */
export class ClaudeUsage {
  private perMessage = new Map<string, Usage>();
  private reported: AgentUsage | null = null;
  /** The model of the latest answer (the init message's until the first). */
  model: string | null = null;

  /** Takes one message's report; true when the figures changed. */
  add(event: Record<string, unknown>): boolean {
    if (event.type === "system" && event.subtype === "init" && typeof event.model === "string") this.model ??= modelName(event.model);
    if (event.type === "assistant") {
      const m = event.message as { id?: string; model?: string; usage?: Usage } | undefined;
      if (!m?.usage || !m.id) return false;
      if (typeof m.model === "string" && m.model !== "<synthetic>") this.model = m.model;
      const before = JSON.stringify(this.perMessage.get(m.id) ?? null);
      this.perMessage.set(m.id, m.usage);
      return before !== JSON.stringify(m.usage);
    }
    if (event.type === "result") {
      const models = (event.modelUsage ?? {}) as Record<string, Record<string, unknown>>;
      const u = (event.usage ?? {}) as Usage;
      const sum = (key: string) => Object.values(models).reduce((s, m) => s + n(m[key]), 0);
      this.reported = {
        inputTokens: Math.max(n(u.input_tokens), sum("inputTokens")),
        outputTokens: Math.max(n(u.output_tokens), sum("outputTokens")),
        cacheReadTokens: Math.max(n(u.cache_read_input_tokens), sum("cacheReadInputTokens")),
        cacheWriteTokens: Math.max(n(u.cache_creation_input_tokens), sum("cacheCreationInputTokens")),
        costUsd: Math.max(n(event.total_cost_usd), sum("costUSD")),
        model: this.model,
      };
      return true;
    }
    return false;
  }

  total(): AgentUsage {
    const streamed = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
    for (const u of this.perMessage.values()) {
      streamed.inputTokens += n(u.input_tokens);
      streamed.outputTokens += n(u.output_tokens);
      streamed.cacheReadTokens += n(u.cache_read_input_tokens);
      streamed.cacheWriteTokens += n(u.cache_creation_input_tokens);
    }
    const r = this.reported;
    return {
      inputTokens: Math.max(streamed.inputTokens, r?.inputTokens ?? 0),
      outputTokens: Math.max(streamed.outputTokens, r?.outputTokens ?? 0),
      cacheReadTokens: Math.max(streamed.cacheReadTokens, r?.cacheReadTokens ?? 0),
      cacheWriteTokens: Math.max(streamed.cacheWriteTokens, r?.cacheWriteTokens ?? 0),
      costUsd: r?.costUsd ?? 0,
      model: this.model,
    };
  }
}

/** A mapper of one run's messages to timeline events; it remembers tool calls to name their results and edits. */
export function claudeMapper(workdir: string) {
  const calls = new Map<string, { name: string; input: Record<string, unknown> }>();
  return function map(event: Record<string, unknown>, out: Emit) {
    switch (event.type) {
      case "system":
        if (event.subtype === "init") out.emit("log", { stream: "agent", line: `claude session ${event.session_id ?? "?"} started (model ${event.model ?? "?"})` });
        return;
      case "assistant":
        // Claude Code's own wording of a model API error, not the model's: the error result says it.
        if (event.error && (event.message as { model?: string } | undefined)?.model === "<synthetic>") return;
        for (const b of blocksOf(event)) {
          if (b.type === "text" && b.text) out.emit("message", { role: "assistant", text: b.text });
          else if (b.type === "thinking" && b.thinking) out.emit("log", { stream: "reasoning", line: b.thinking });
          else if (b.type === "tool_use") {
            const input = (b.input && typeof b.input === "object" ? b.input : {}) as Record<string, unknown>;
            if (b.id) calls.set(b.id, { name: b.name ?? "tool", input });
            out.emit("tool", { id: b.id ?? null, name: b.name ?? "tool", input: b.input ?? null, status: "started" });
          }
        }
        return;
      case "user": {
        // The person's own messages come back as replays; the server already has them as actions.
        if (event.isReplay) return;
        for (const b of blocksOf(event)) {
          if (b.type !== "tool_result") continue;
          const call = b.tool_use_id ? calls.get(b.tool_use_id) : undefined;
          if (b.tool_use_id) calls.delete(b.tool_use_id);
          out.emit("tool", { id: b.tool_use_id ?? null, ...(call ? { name: call.name } : {}), output: clip(resultText(b.content)), status: b.is_error ? "failed" : "completed" });
          const edit = call && !b.is_error ? editOf(call.name, call.input, workdir) : null;
          if (edit) out.emit("edit", { id: b.tool_use_id, ...edit });
        }
        return;
      }
      case "result": {
        const text = typeof event.result === "string" ? event.result : "";
        if (event.is_error || (typeof event.subtype === "string" && event.subtype !== "success")) {
          const errors = Array.isArray(event.errors) ? event.errors.filter((e) => typeof e === "string").join("; ") : "";
          out.emit("error", { message: text || errors || `claude ended with ${event.subtype}` });
        } else if (text) {
          out.summary(text);
        }
        // An API error ends a run with subtype "success" and is_error set: the line says error.
        // Claude's own figures as it reported them, the cost to the millionth the usage record keeps:
        // a line to check the record against, not an amount for a person (src/lib/money.ts).
        out.emit("log", {
          stream: "agent",
          line: `claude finished: ${event.is_error && event.subtype === "success" ? "error" : (event.subtype ?? "?")}, ${event.num_turns ?? "?"} turns, ${event.duration_ms ?? "?"} ms, ${typeof event.total_cost_usd === "number" ? `$${Number(event.total_cost_usd.toFixed(6))}` : "$?"}`,
        });
        return;
      }
    }
  };
}

/** One message on its own, with no memory of the run's tool calls (recorded output in tests). */
export function mapClaudeEvent(event: Record<string, unknown>, out: Emit) {
  claudeMapper("/")(event, out);
}
