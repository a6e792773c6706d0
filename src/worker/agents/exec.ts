// The exec adapter (SPEC §7): runs a shell command in the task's checkout. stdout lines become log
// events, except the ::ao:: directives; the person's answers arrive on stdin, one line each.
import { spawnGroup } from "../process";
import type { Agent, AgentContext, AgentRun, Answer } from "./types";
import { cleanUsage } from "../usage";

/** An answer as the exec agent reads it on stdin: `approve`, `deny REASON` or the input text, one line. */
export function answerLine(a: Answer): string {
  const text = a.kind === "approve" ? "approve" : a.kind === "deny" ? `deny ${a.reason}`.trim() : a.text;
  return text.replace(/\r?\n/g, " ");
}

const DIRECTIVE = /^::ao::(summary|needs-input|needs-approval|usage)(?:\s+(.*))?$/;

/**
 * `::ao::usage {"inputTokens":…, "outputTokens":…, "cacheReadTokens":…, "cacheWriteTokens":…,
 * "costUsd":…, "model":…}`: the attempt's usage so far (cumulative; absent fields are 0), for
 * scripts that drive a model themselves. A line that is not such an object is an error event, and
 * so is a field that is not a number of at least 0 (read as 0).
 */
function usageDirective(ctx: Pick<AgentContext, "emit" | "usage">, text: string) {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {}
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return ctx.emit("error", { message: `::ao::usage needs a JSON object such as {"inputTokens": 1200, "costUsd": 0.03}; got: ${text.slice(0, 200)}` });
  }
  const given = value as Record<string, unknown>;
  // A field given but not a count or an amount reads as 0, and the script's author is told.
  const bad = USAGE_NUMBERS.filter((k) => given[k] !== undefined && !(typeof given[k] === "number" && Number.isFinite(given[k]) && (given[k] as number) >= 0));
  if (bad.length > 0) ctx.emit("error", { message: `::ao::usage: ${bad.map((k) => `${k} ${JSON.stringify(given[k])?.slice(0, 40)}`).join(", ")} read as 0 (not a number of at least 0)` });
  ctx.usage(cleanUsage(given));
}

const USAGE_NUMBERS = ["inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "costUsd"] as const;

/** Applies one stdout line of an exec agent to the context. Exported for the parser tests. */
export function handleExecLine(ctx: Pick<AgentContext, "emit" | "summary" | "ask" | "usage">, line: string) {
  const m = DIRECTIVE.exec(line);
  if (!m) return ctx.emit("log", { stream: "stdout", line });
  const text = (m[2] ?? "").trim();
  if (m[1] === "usage") usageDirective(ctx, text);
  else if (m[1] === "summary") ctx.summary(text);
  else ctx.ask(m[1] === "needs-input" ? "input" : "approval", text || (m[1] === "needs-input" ? "input needed" : "approval needed"));
}

/** The shell words of a command line (quotes and backslashes as sh reads them; no expansion). */
function shellWords(command: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote) {
      if (c === quote) quote = null;
      else if (c === "\\" && quote === '"' && i + 1 < command.length) word += command[++i];
      else word += c;
    } else if (/\s/.test(c)) {
      if (word !== null) words.push(word);
      word = null;
    } else if (c === '"' || c === "'") {
      quote = c;
      word ??= "";
    } else {
      word = (word ?? "") + (c === "\\" && i + 1 < command.length ? command[++i] : c);
    }
  }
  if (word !== null) words.push(word);
  return words;
}

/**
 * The name of the program a command line starts, past leading VAR=value assignments, without its
 * directory: what a worker advertises of its exec agent (arguments and paths may hold secrets).
 */
export function programOf(command: string): string {
  const words = shellWords(command);
  const program = words.find((w) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) ?? words[0] ?? "sh";
  return (program.split("/").filter(Boolean).pop() ?? program).slice(0, 200) || "sh";
}

export function execAgent(command: string): Agent {
  return {
    name: "exec",
    info: { name: "exec", version: null, command: programOf(command) },
    start(ctx: AgentContext): AgentRun {
      const { command: program, args } = ctx.confine({ command: "/bin/sh", args: ["-c", command] });
      const proc = spawnGroup(program, args, {
        cwd: ctx.workdir,
        env: ctx.env,
        onStdout: (line) => handleExecLine(ctx, line),
        onStderr: (line) => ctx.emit("log", { stream: "stderr", line }),
      });
      return {
        pid: proc.pid,
        exited: proc.exited,
        pause: () => proc.signal("SIGSTOP"),
        resume: () => proc.signal("SIGCONT"),
        cancel: (graceMs) => proc.terminate(graceMs),
        answer: (a) => proc.write(answerLine(a)),
      };
    },
  };
}
