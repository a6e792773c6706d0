// The Codex adapter with the real `codex` CLI (node_modules/.bin/codex) pointed at the Responses API
// stand-in, and an AgentContext that records what the adapter reports and applies a project policy
// with the worker's own decider.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AgentPolicy } from "../../src/protocol/policy";
import type { ClaimResult, WorkerEventType } from "../../src/protocol/requests";
import { decideTool } from "../../src/worker/policy";
import type { AgentContext, AgentUsage } from "../../src/worker/agents/types";
import { unconfined } from "../../src/worker/confine";
import { codexHome, type OpenAIStandIn } from "../helpers/openai-standin";
import { sh } from "../e2e/worker-helpers";

export const CODEX_BIN = join(import.meta.dir, "..", "..", "node_modules", ".bin", "codex");

export interface Recording extends AgentContext {
  events: { type: WorkerEventType; data: any }[];
  asks: { kind: "input" | "approval"; message: string }[];
  usages: AgentUsage[];
  summaries: string[];
  /** Resolves when a recorded event (or ask) matches; fails after `ms`. */
  until<T>(find: () => T | undefined | null | false, ms?: number): Promise<T>;
}

export function recordingContext(opts: { workdir: string; home: string; standIn: OpenAIStandIn; policy?: AgentPolicy; runMode?: "fresh" | "continue"; kind?: "task" | "plan"; instructions?: string; unreadable?: string[] }): Recording {
  const { env } = codexHome(opts.home, opts.standIn);
  const events: Recording["events"] = [];
  const asks: Recording["asks"] = [];
  const usages: AgentUsage[] = [];
  const summaries: string[] = [];
  const artifactsDir = join(opts.workdir, "..", "artifacts");
  mkdirSync(artifactsDir, { recursive: true });
  const claim = { runMode: opts.runMode ?? "fresh", task: { kind: opts.kind ?? "task" }, project: { policy: opts.policy ? { agent: opts.policy } : {} } } as unknown as ClaimResult;
  return {
    claim,
    workdir: opts.workdir,
    artifactsDir,
    unreadable: opts.unreadable ?? [],
    // Codex has its own sandbox: the adapter starts it as it is.
    confine: unconfined,
    env: { ...(process.env as Record<string, string>), ...env, AO_ARTIFACTS_DIR: artifactsDir },
    instructions: opts.instructions ?? "# Make the files\n\nCreate the files the task needs.",
    emit: (type, data) => void events.push({ type, data }),
    summary: (t) => void summaries.push(t),
    ask: (kind, message) => void asks.push({ kind, message }),
    decide: (call) => decideTool(opts.policy, opts.workdir, call),
    usage: (u) => void usages.push(u),
    events,
    asks,
    usages,
    summaries,
    async until(find, ms = 30_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const hit = find();
        if (hit) return hit as any;
        if (Date.now() > deadline) throw new Error(`not seen within ${ms} ms; events:\n${events.map((e) => `${e.type} ${JSON.stringify(e.data).slice(0, 300)}`).join("\n")}`);
        await Bun.sleep(25);
      }
    },
  };
}

/** A git checkout with one committed file, as the worker clones it. */
export function checkout(dir: string): string {
  mkdirSync(dir, { recursive: true });
  sh(dir, "git", "init", "-q", "-b", "main");
  writeFileSync(join(dir, "README.md"), "# demo\n");
  sh(dir, "git", "add", "-A");
  sh(dir, "git", "commit", "-q", "-m", "initial commit");
  return dir;
}

/**
 * The real codex behind a script of that name: ao's requests pass through to it, and each line
 * Codex writes runs `perLine` first (JavaScript with `line` to change, `continue` to drop it,
 * and `p`, the codex process, to write to).
 */
export function codexBehind(path: string, perLine: string): string {
  const source = `
    const p = Bun.spawn([${JSON.stringify(CODEX_BIN)}, ...process.argv.slice(2)], { stdin: "pipe", stdout: "pipe", stderr: "inherit" });
    void (async () => {
      for await (const chunk of Bun.stdin.stream()) p.stdin.write(chunk);
      p.stdin.end();
    })();
    const decoder = new TextDecoder();
    let buf = "";
    for await (const chunk of p.stdout) {
      buf += decoder.decode(chunk, { stream: true });
      for (let i = buf.indexOf("\\n"); i >= 0; i = buf.indexOf("\\n")) {
        let line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        ${perLine}
        process.stdout.write(line + "\\n");
      }
    }
    process.exit(await p.exited);
  `;
  writeFileSync(path, `#!${process.execPath}\n${source}`, { mode: 0o755 });
  return path;
}
