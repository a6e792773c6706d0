// What Codex's app-server reports, in ao's terms: thread items as timeline events (message, tool,
// edit, log, error), the command lines it asks about as the person would type them, and its token
// counts as usage with a cost from OpenAI's list prices.
import { relative } from "node:path";
import { clip, type Emit } from "./jsonl";
import type { AgentUsage } from "./types";

type Item = { id?: string; type?: string; [k: string]: any };

/** The words of a command line as sh reads them (quotes and backslashes; no expansion), or null when unterminated. */
function shellWords(line: string): string[] | null {
  const words: string[] = [];
  let word: string | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) return null;
      word = (word ?? "") + line.slice(i + 1, end);
      i = end;
    } else if (c === '"') {
      word ??= "";
      for (i++; i < line.length && line[i] !== '"'; i++) {
        // Inside double quotes a backslash escapes only $ ` " \ and newline.
        if (line[i] === "\\" && i + 1 < line.length && '$`"\\\n'.includes(line[i + 1])) i++;
        word += line[i];
      }
      if (i >= line.length) return null;
    } else if (c === "\\" && i + 1 < line.length) {
      word = (word ?? "") + line[++i];
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word = (word ?? "") + c;
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/**
 * The command a person would read: Codex runs each command as `/bin/bash -lc '…'` (quoted its own
 * way), and the policy's `shell:` patterns are written against what is inside.
 */
export function unwrapShell(command: string): string {
  const words = shellWords(command.trim());
  if (words?.length === 3 && /^(?:\S*\/)?(?:ba|z)?sh$/.test(words[0]) && /^-l?c$/.test(words[1])) return words[2];
  return command;
}

export interface FileChange {
  path: string;
  kind: string;
  movePath?: string;
}

/** The files of a fileChange item, relative to the checkout when inside it. */
export function changedFiles(item: Item, workdir: string): FileChange[] {
  const changes = Array.isArray(item.changes) ? item.changes : [];
  return changes.map((c: { path?: string; kind?: { type?: string; move_path?: string | null } }) => {
    const path = String(c.path ?? "");
    const rel = relative(workdir, path);
    const f: FileChange = { path: rel && !rel.startsWith("..") ? rel : path, kind: c.kind?.type ?? "update" };
    if (c.kind?.move_path) f.movePath = c.kind.move_path;
    return f;
  });
}

/** A short diff of a fileChange item: each file's hunks under its name. */
export function shortDiff(item: Item, workdir: string): string {
  const changes = Array.isArray(item.changes) ? item.changes : [];
  const files = changedFiles(item, workdir);
  return clip(changes.map((c: { diff?: string }, i: number) => `--- ${files[i].path} (${files[i].kind})\n${c.diff ?? ""}`).join("\n"));
}

/** Maps one item/started or item/completed of the app-server to timeline events. */
export function mapCodexItem(phase: "started" | "completed", item: Item, workdir: string, out: Emit) {
  const id = item.id ?? null;
  switch (item.type) {
    case "agentMessage":
      if (phase === "completed" && typeof item.text === "string" && item.text) {
        out.emit("message", { role: "assistant", text: item.text });
        out.summary(item.text); // the last message of the turn is the answer
      }
      return;
    case "reasoning": {
      const text = [...(item.summary ?? []), ...(item.content ?? [])].filter((t) => typeof t === "string" && t).join("\n");
      if (phase === "completed" && text) out.emit("log", { stream: "reasoning", line: text });
      return;
    }
    case "commandExecution": {
      const input = { command: unwrapShell(String(item.command ?? "")), cwd: item.cwd ?? null };
      if (phase === "started") out.emit("tool", { id, name: "shell", input, status: "started" });
      else out.emit("tool", { id, name: "shell", input, output: clip(item.aggregatedOutput ?? ""), exitCode: item.exitCode ?? null, status: item.status ?? "completed" });
      return;
    }
    case "fileChange":
      if (phase === "completed") out.emit("edit", { id, files: changedFiles(item, workdir), diff: shortDiff(item, workdir), status: item.status ?? "completed" });
      return;
    case "mcpToolCall":
      if (phase === "started") out.emit("tool", { id, name: `${item.server}.${item.tool}`, input: item.arguments ?? null, status: "started" });
      else out.emit("tool", { id, name: `${item.server}.${item.tool}`, output: clip(item.result ?? item.error ?? null), status: item.status ?? "completed" });
      return;
    case "webSearch":
      if (phase === "completed") out.emit("tool", { id, name: "web_search", input: { query: item.query ?? null }, status: "completed" });
      return;
    case "plan":
      if (phase === "completed" && item.text) out.emit("log", { stream: "agent", line: `plan:\n${item.text}` });
      return;
    case "contextCompaction":
      if (phase === "completed") out.emit("log", { stream: "agent", line: "codex compacted the conversation" });
      return;
  }
}

/**
 * OpenAI's list prices in USD per million tokens (input, cached input, output), as published for
 * the API. Codex reports tokens, not money; a model not listed here is recorded with its name and
 * a cost of 0 rather than a guess.
 */
export const CODEX_PRICES: Record<string, [number, number, number]> = {
  "gpt-5": [1.25, 0.125, 10],
  "gpt-5-codex": [1.25, 0.125, 10],
  "gpt-5.1": [1.25, 0.125, 10],
  "gpt-5.1-codex": [1.25, 0.125, 10],
  "gpt-5.1-codex-max": [1.25, 0.125, 10],
  "gpt-5-mini": [0.25, 0.025, 2],
  "gpt-5.1-codex-mini": [0.25, 0.025, 2],
  "gpt-5-nano": [0.05, 0.005, 0.4],
  "gpt-5.2": [1.75, 0.175, 14],
  "gpt-5.2-codex": [1.75, 0.175, 14],
  "o3": [2, 0.5, 8],
  "o4-mini": [1.1, 0.275, 4.4],
  "gpt-4.1": [2, 0.5, 8],
};

/** Price row of a model, also for a dated snapshot name (gpt-5-2025-08-07). */
function pricesOf(model: string | null): [number, number, number] | null {
  if (!model) return null;
  return CODEX_PRICES[model] ?? CODEX_PRICES[model.replace(/-\d{4}-\d{2}-\d{2}$/, "")] ?? null;
}

export interface CodexTokens {
  inputTokens: number;
  cachedInputTokens: number;
  cacheWriteInputTokens?: number;
  outputTokens: number;
}

/**
 * Codex's counts (OpenAI's: input includes the cached and cache-written tokens, output includes
 * reasoning) as ao's usage, where input counts only the tokens read neither from nor into a cache.
 */
export function codexUsage(t: CodexTokens, model: string | null): AgentUsage {
  const cacheRead = t.cachedInputTokens || 0;
  const cacheWrite = t.cacheWriteInputTokens || 0;
  const input = Math.max(0, (t.inputTokens || 0) - cacheRead - cacheWrite);
  const output = t.outputTokens || 0;
  const p = pricesOf(model);
  const costUsd = p ? ((input + cacheWrite) * p[0] + cacheRead * p[1] + output * p[2]) / 1_000_000 : 0;
  return { inputTokens: input, outputTokens: output, cacheReadTokens: cacheRead, cacheWriteTokens: cacheWrite, costUsd: Math.round(costUsd * 1e6) / 1e6, model };
}

/** The difference of two cumulative counts (this attempt's share of a resumed thread's total). */
export function minusTokens(a: CodexTokens, b: CodexTokens): CodexTokens {
  return {
    inputTokens: a.inputTokens - b.inputTokens,
    cachedInputTokens: a.cachedInputTokens - b.cachedInputTokens,
    cacheWriteInputTokens: (a.cacheWriteInputTokens ?? 0) - (b.cacheWriteInputTokens ?? 0),
    outputTokens: a.outputTokens - b.outputTokens,
  };
}
