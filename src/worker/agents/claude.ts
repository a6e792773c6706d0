// Claude Code, conversing: the real `claude` CLI driven through its own control protocol by the
// Agent SDK (`query()` with streaming input). Every tool call passes a PreToolUse hook that applies
// the project's policy (allow, deny, or ask); an ask, and every question the agent puts to the
// person (AskUserQuestion), waits in canUseTool until the person answers through AgentRun.answer,
// and the run goes on in the same session. `input` while nothing is asked is a follow-up message.
//
// The SDK spawns the CLI through spawnClaudeCodeProcess, so the CLI leads a process group of its
// own (pause, resume and cancel reach every process it started), and it is pointed at the `claude`
// found on PATH: inside the compiled `ao` executable the SDK's own bundled CLI does not exist.
import { spawn, spawnSync } from "node:child_process";
import { query, type CanUseTool, type HookCallback, type Options, type PermissionResult, type SDKUserMessage } from "@anthropic-ai/claude-agent-sdk";
import { decidedBy, type ToolCall, type ToolDecision } from "../policy";
import { previousSession } from "./claude-session";
import { ClaudeUsage, claudeMapper } from "./claude-events";
export { mapClaudeEvent } from "./claude-events";
import { answeredInput, approvalMessage, BOOKKEEPING, QUESTION_TOOL, questionText, toolCallOf } from "./claude-tools";
import { feedJsonLine } from "./jsonl";
import type { Agent, AgentContext, AgentExit, AgentRun, Answer } from "./types";

/** Every process below `root` (children, their children…), from `ps`, which Linux and macOS both have. */
export function descendantsOf(root: number): number[] {
  const r = spawnSync("ps", ["-A", "-o", "pid=,ppid="], { encoding: "utf8" });
  const children = new Map<number, number[]>();
  for (const line of (r.stdout ?? "").split("\n")) {
    const [p, pp] = line.trim().split(/\s+/).map(Number);
    if (!p || pp === undefined) continue;
    children.set(pp, [...(children.get(pp) ?? []), p]);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length) for (const c of children.get(queue.shift()!) ?? []) out.push(c), queue.push(c);
  return out;
}

/** Calls `line` with each non-blank line of `stream`, the last one too when it has no newline. */
function readLines(stream: NodeJS.ReadableStream | null, line: (text: string) => void) {
  let rest = "";
  stream?.setEncoding("utf8");
  stream?.on("data", (chunk: string) => {
    const lines = (rest + chunk).split("\n");
    rest = lines.pop()!;
    for (const l of lines) if (l.trim()) line(l);
  });
  stream?.on("end", () => void (rest.trim() && line(rest)));
}

/** No extra flags by default: the permission mode is ao's own (every call goes through the policy). */
export const CLAUDE_DEFAULT_ARGS: string[] = [];

/** Flags ao sets itself: the protocol and the permission mode that routes every call through the policy. */
const OWN_FLAGS = new Set(["print", "p", "input-format", "output-format", "permission-mode", "permission-prompt-tool", "dangerously-skip-permissions", "allow-dangerously-skip-permissions", "replay-user-messages", "resume", "continue"]);

/** Extra CLI flags from `--agent-args` (`--model opus --add-dir /x`) in the SDK's extraArgs shape; ao's own flags are left out. */
export function extraArgsOf(args: string[]): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (!flag.startsWith("--")) continue;
    const eq = flag.indexOf("=");
    if (eq > 0) out[flag.slice(2, eq)] = flag.slice(eq + 1);
    else if (args[i + 1] !== undefined && !args[i + 1].startsWith("--")) out[flag.slice(2)] = args[++i];
    else out[flag.slice(2)] = null;
  }
  for (const flag of Object.keys(out)) if (OWN_FLAGS.has(flag)) delete out[flag];
  return out;
}

/** Follow-up messages for the CLI's stdin: an async queue that ends when the run is over. */
class Inbox implements AsyncIterable<SDKUserMessage> {
  private items: SDKUserMessage[] = [];
  private wake: (() => void) | null = null;
  closed = false;
  sent = 0;

  push(text: string) {
    if (this.closed) return false;
    this.items.push({ type: "user", message: { role: "user", content: text }, parent_tool_use_id: null } as SDKUserMessage);
    this.sent++;
    this.wake?.();
    return true;
  }

  close() {
    this.closed = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator]() {
    for (;;) {
      const next = this.items.shift();
      if (next) yield next;
      else if (this.closed) return;
      else await new Promise<void>((r) => (this.wake = r));
    }
  }
}

/** Something the agent waits on a person for: one approval or one question, asked one at a time. */
interface Pending {
  kind: "approval" | "input";
  message: string;
  /** The person's answer; null: nobody answered (Claude Code withdrew the request, or the run ended). */
  settle(a: Answer | null): void;
}

const by = decidedBy;

export function claudeAgent(binary = "claude", extraArgs: string[] = []): Agent {
  return {
    name: "claude",
    start(ctx: AgentContext): AgentRun {
      const inbox = new Inbox();
      const abort = new AbortController();
      const usage = new ClaudeUsage();
      const map = claudeMapper(ctx.workdir);
      const waiting: Pending[] = [];
      /** The decision the hook took on each call it let through to canUseTool. */
      const asked = new Map<string, { call: ToolCall; decision: ToolDecision }>();
      let pid = -1;
      let childExit: Promise<{ code: number | null; signal: NodeJS.Signals | null }> = Promise.resolve({ code: 127, signal: null });
      let replayed = 0;
      let lastResult: Record<string, unknown> | null = null;
      let cancelled = false;
      /** An error event says why the run failed (AgentExit.reported). */
      let reported = false;

      // Claude Code starts each shell command in a process group of its own: the signal goes to the
      // CLI's group and to every process below it, found before any of them is signalled.
      const signalTree = (sig: NodeJS.Signals, tree = pid > 0 ? descendantsOf(pid) : []) => {
        if (pid <= 0) return;
        for (const target of [-pid, ...tree]) {
          try {
            process.kill(target, sig);
          } catch {
            // Gone already.
          }
        }
      };

      /** Queues one thing for the person; only the first is asked, the next once it is answered (or withdrawn). */
      const wait = (kind: Pending["kind"], message: string, signal: AbortSignal) =>
        new Promise<Answer | null>((resolve) => {
          const entry: Pending = { kind, message, settle: resolve };
          waiting.push(entry);
          if (waiting.length === 1) ctx.ask(kind, message);
          signal.addEventListener("abort", () => {
            const i = waiting.indexOf(entry);
            if (i < 0) return;
            waiting.splice(i, 1);
            resolve(null);
            if (i === 0 && waiting[0]) ctx.ask(waiting[0].kind, waiting[0].message);
          });
        });

      const decisionEvent = (call: ToolCall, decision: ToolDecision["decision"], rule: string | null, who: string, reason?: string) =>
        ctx.emit("decision", { tool: call.name, kind: call.kind, subject: call.subject ?? null, decision, rule, by: who, ...(reason ? { reason } : {}) });

      const preToolUse: HookCallback = async (input) => {
        if (input.hook_event_name !== "PreToolUse") return {};
        const toolInput = (input.tool_input ?? {}) as Record<string, unknown>;
        // A question is the person's to answer, never a policy's: canUseTool puts it to them.
        if (input.tool_name === QUESTION_TOOL) return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: "ask" } };
        const call = toolCallOf(input.tool_name, toolInput, ctx.workdir);
        let d = ctx.decide(call);
        if (d.by === "default" && BOOKKEEPING.has(call.name)) d = { decision: "allow", rule: null, by: "default" };
        decisionEvent(call, d.decision, d.rule, by(d), d.reason);
        if (d.decision === "ask") asked.set(input.tool_use_id, { call, decision: d });
        const refusal = d.reason ? `Refused: ${d.reason}.` : `Refused by the project's policy${d.rule ? ` (rule "${d.rule}")` : ""}.`;
        const reason = d.decision === "deny" ? refusal : d.rule ? `${by(d)}: ${d.rule}` : `${by(d)}`;
        return { hookSpecificOutput: { hookEventName: "PreToolUse", permissionDecision: d.decision, permissionDecisionReason: reason } };
      };

      const canUseTool: CanUseTool = async (toolName, input, options): Promise<PermissionResult> => {
        if (toolName === QUESTION_TOOL) {
          const a = await wait("input", questionText(input), options.signal);
          if (a?.kind === "input") return { behavior: "allow", updatedInput: answeredInput(input, a.text) };
          // The only way out without an answer is the run ending.
          return { behavior: "deny", message: "The person did not answer." };
        }
        const known = asked.get(options.toolUseID);
        asked.delete(options.toolUseID);
        // Claude Code asks on its own too (a safety check the policy's allow cannot lift): that goes to the person as well.
        const call = known?.call ?? toolCallOf(toolName, input, ctx.workdir);
        const why = known ? { rule: known.decision.rule, by: known.decision.by === "policy" ? "project policy" : "built-in rules" } : { rule: null, by: "Claude Code's own checks", reason: options.decisionReason };
        if (!known) decisionEvent(call, "ask", null, "claude code", options.decisionReason);
        const a = await wait("approval", approvalMessage(call, input, why), options.signal);
        // Nobody answered: no decision in the person's name.
        if (!a) return { behavior: "deny", message: "The request was withdrawn before anyone answered." };
        if (a.kind === "approve") {
          decisionEvent(call, "allow", null, "person");
          return { behavior: "allow", updatedInput: input };
        }
        const reason = a.kind === "deny" ? a.reason.trim() : a.text.trim();
        decisionEvent(call, "deny", null, "person", reason || undefined);
        return { behavior: "deny", message: reason ? `A person denied this: ${reason}` : "A person denied this." };
      };

      const resume = ctx.claim.runMode === "continue" ? previousSession(ctx.workdir, ctx.env) : null;
      if (resume) ctx.emit("log", { stream: "agent", line: `continuing claude session ${resume}` });
      const options: Options = {
        cwd: ctx.workdir,
        env: ctx.env,
        pathToClaudeCodeExecutable: binary,
        abortController: abort,
        // "default": every call the hook does not allow outright comes to canUseTool, whatever the
        // settings found on the machine or in the repository say.
        permissionMode: "default",
        hooks: { PreToolUse: [{ hooks: [preToolUse] }] },
        canUseTool,
        ...(resume ? { resume } : {}),
        // The CLI is the machine's, of any 2.1 version: the delivery every version understands (and no deprecation warning).
        mcpServersDelivery: "argv",
        // The person's messages come back when the CLI takes them in, so the run knows when all are answered.
        extraArgs: { "replay-user-messages": null, ...extraArgsOf(extraArgs) },
        spawnClaudeCodeProcess: (o) => {
          // detached: the CLI leads a new process group (setsid), which is what pause and cancel signal.
          // Inside bubblewrap where it runs: the CLI's commands cannot read the worker's credential or other tasks' checkouts.
          const { command, args } = ctx.confine({ command: o.command, args: o.args });
          const child = spawn(command, args, { cwd: o.cwd, env: o.env as NodeJS.ProcessEnv, detached: true, stdio: ["pipe", "pipe", "pipe"] });
          pid = child.pid ?? -1;
          // The SDK reads stderr only of a CLI it spawns itself: unread, a full pipe would stall the CLI.
          readLines(child.stderr, (line) => ctx.emit("log", { stream: "stderr", line }));
          childExit = new Promise((resolve) => {
            child.on("error", () => resolve({ code: 127, signal: null }));
            child.on("exit", (code, signal) => resolve({ code, signal }));
          });
          return child;
        },
      };

      inbox.push(ctx.instructions);
      const session = query({ prompt: inbox, options });

      const run = (async (): Promise<AgentExit> => {
        try {
          for await (const message of session) {
            const event = message as unknown as Record<string, unknown>;
            feedJsonLine(JSON.stringify(event), ctx, map);
            if (usage.add(event)) ctx.usage(usage.total());
            if (event.type === "user" && event.isReplay) replayed++;
            if (event.type === "result") {
              lastResult = event;
              // The mapper put an error result on the timeline as an error event.
              reported = !!event.is_error || event.subtype !== "success";
              // Done when every message the person sent has been taken in; a follow-up that came
              // while the agent worked gets its own turn (and its own result) after this one.
              if (replayed >= inbox.sent) inbox.close();
            }
          }
        } catch (err) {
          // After an error result the SDK throws that result's text again: it is on the timeline already.
          if (!cancelled && !(lastResult as Record<string, unknown> | null)?.is_error) {
            ctx.emit("error", { message: `claude: ${(err as Error).message}` });
            reported = true;
          }
        } finally {
          inbox.close();
          for (const p of waiting.splice(0)) p.settle(null);
        }
        const exit = await childExit;
        const said = reported ? { reported: true as const } : {};
        if (exit.signal) return { code: null, signal: exit.signal, ...said };
        const ok = lastResult !== null && !lastResult.is_error && lastResult.subtype === "success";
        return ok ? { code: 0, signal: null } : { code: exit.code || 1, signal: null, ...said };
      })();

      return {
        get pid() {
          return pid;
        },
        exited: run,
        pause: () => signalTree("SIGSTOP"),
        resume: () => signalTree("SIGCONT"),
        async cancel(graceMs) {
          cancelled = true;
          inbox.close();
          // Known before the CLI ends: afterwards its children belong to init and the tree is lost.
          const tree = pid > 0 ? descendantsOf(pid) : [];
          // SIGTERM pending before SIGCONT wakes a stopped (paused) process (process.ts, terminate).
          signalTree("SIGTERM", tree);
          signalTree("SIGCONT", tree);
          await Promise.race([childExit, Bun.sleep(graceMs)]);
          signalTree("SIGKILL", [...tree, ...descendantsOf(pid)]);
          abort.abort();
        },
        answer(a) {
          const head = waiting[0];
          if (head && (head.kind === "approval" ? a.kind !== "input" : a.kind === "input")) {
            waiting.shift();
            head.settle(a);
            if (waiting[0]) ctx.ask(waiting[0].kind, waiting[0].message);
            return;
          }
          if (a.kind === "input") {
            if (inbox.push(a.text)) return;
            return ctx.emit("log", { stream: "agent", line: "claude has finished: the message was not delivered" });
          }
          ctx.emit("log", { stream: "agent", line: `${a.kind === "approve" ? "approve" : "deny"} ignored: claude is not waiting for an approval` });
        },
      };
    },
  };
}
