// Codex through its own control protocol: `codex app-server` (JSON-RPC over stdio, src/worker/agents/
// codex-rpc.ts). One thread per attempt in the checkout, with approval policy "untrusted" and a
// workspace-write sandbox, so Codex asks before running commands and applying patches. Each ask is
// put to the project's policy (ctx.decide): allowed calls run, refused ones are declined with the
// reason handed to Codex, the rest wait for a person (needs_approval) and go on in the same turn.
// Codex's own questions (request_user_input) become needs_input; `input` while it works is steered
// into the running turn. (@openai/codex-sdk only wraps `codex exec`, which cannot ask anything.)
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { VERSION } from "../../version";
import { decidedBy, realPath, type ToolCall } from "../policy";
import { spawnGroup } from "../process";
import { killSandboxHelpers } from "../orphans";
import { CodexRpc, RpcError } from "./codex-rpc";
import { helperDirFor, linkSandboxHelper, withHelperDir } from "./codex-helper";
import { commandCalls, fileCalls, strictest } from "./codex-asks";
import { codexUsage, mapCodexItem, minusTokens, unwrapShell, type CodexTokens } from "./codex-items";
import type { Agent, AgentContext, AgentExit, AgentRun, Answer } from "./types";

/** Arguments after `codex app-server` (`--agent-args`), e.g. `-c model="gpt-5.1-codex"`. */
export const CODEX_DEFAULT_ARGS: string[] = [];

/** Where the thread of an attempt is remembered, so a retry that continues resumes it (inside .git: never committed). */
function threadFile(workdir: string): string {
  const git = join(workdir, ".git");
  return existsSync(git) && statSync(git).isDirectory() ? join(git, "ao-codex-thread") : join(workdir, ".ao-codex-thread");
}

type Pending =
  | { kind: "approval"; id: number | string; call: ToolCall; what: string }
  | { kind: "input"; id: number | string; questions: { id: string }[] };

const text = (t: string) => [{ type: "text", text: t, text_elements: [] }];

export function startCodex(ctx: AgentContext, binary: string, extraArgs: string[]): AgentRun {
  // A directory first on the app-server's PATH, for the link to its sandbox helper (codex-helper.ts).
  const helperDir = helperDirFor(ctx.workdir);
  // Started through ctx.confine as the other agents are: where bubblewrap runs, Codex and the
  // sandbox it runs its commands in see of the worker's runs this attempt's directory alone (its
  // profile cannot deny that directory: nothing inside a denied one can be allowed again).
  const { command, args } = ctx.confine({ command: binary, args: ["app-server", ...extraArgs] });
  const proc = spawnGroup(command, args, {
    cwd: ctx.workdir,
    env: withHelperDir(ctx.env, helperDir),
    onStdout: (line) => rpc.feed(line),
    // Codex's own log lines, ANSI colour kept for the web app and the CLI to render.
    onStderr: (line) => ctx.emit("log", { stream: "stderr", line }),
  });
  const rpc = new CodexRpc((line) => proc.write(line), {
    notification: (method, params) => onNotification(method, params),
    request: (id, method, params) => onRequest(id, method, params),
    other: (line) => ctx.emit("log", { stream: "stdout", line }),
  });

  let threadId: string | null = null;
  let turnId: string | null = null;
  let model: string | null = null;
  let outcome: AgentExit | null = null;
  let cancelled = false;
  let processExited = false;
  /** Codex's requests waiting their turn: one is put to the policy or a person at a time. */
  const queue: { id: number | string; method: string; params: any }[] = [];
  let pending: Pending | null = null;
  /** Follow-ups that arrived while no turn could take them: the next turn's input. */
  const followUps: string[] = [];
  /** Steers on their way: a turn that ends meanwhile waits for their answers before the attempt ends. */
  const steering = new Set<Promise<void>>();
  /** Commands Codex started and has not completed, by id. */
  const running = new Map<string, any>();
  /** The fileChange items by id: an apply-patch approval names only the item. */
  const fileItems = new Map<string, any>();
  /** Items Codex asked about: the others it ran on its own judgement. */
  const asked = new Set<string>();
  let baseline: CodexTokens | null = null;
  let turnStarted = false;
  let lastError: string | null = null;

  /** `reported`: an error event already says why it failed. */
  const finish = (code: number, reported = false) => {
    if (outcome) return;
    outcome = { code, signal: null, ...(reported ? { reported } : {}) };
    // End of input ends the app-server; one that lingers is stopped.
    proc.end();
    void Promise.race([proc.exited, Bun.sleep(3000)]).then(() => {
      if (!processExited) void proc.terminate(1000);
    });
  };

  const exited = proc.exited.then((r) => {
    processExited = true;
    // Its file-system helpers run in a session of their own, and some outlive it (orphans.ts).
    killSandboxHelpers(ctx.workdir);
    rpc.close("codex app-server exited");
    if (outcome) return outcome;
    if (cancelled) return { code: r.code === 0 ? 1 : r.code, signal: r.signal };
    ctx.emit("error", { message: `codex app-server ${r.signal ? `was killed by ${r.signal}` : `exited with code ${r.code}`} before its turn completed` });
    return { code: r.code === 0 ? 1 : r.code, signal: r.signal, reported: true as const };
  });

  const fail = (err: unknown) => {
    if (outcome || cancelled || processExited) return;
    ctx.emit("error", { message: `codex: ${(err as Error).message}` });
    finish(1, true);
  };

  async function boot() {
    await rpc.request("initialize", { clientInfo: { name: "ao", title: "ao worker", version: VERSION }, capabilities: { experimentalApi: true, requestAttestation: false } });
    rpc.notify("initialized");
    // Before the thread starts, which is when Codex first runs its sandbox helper.
    if (helperDir) linkSandboxHelper(helperDir, proc.pid);
    // Commands write to the checkout and to the artifacts directory, not to /tmp or $TMPDIR as
    // Codex's :workspace allows (other tasks' checkouts may live there). This is a permission
    // profile rather than the older sandbox_mode settings, for its "deny" entry. Under `untrusted`,
    // Codex re-runs a command its sandbox refused without the sandbox, and does not ask again once
    // the command was approved. A profile that denies a read never runs a command outside the
    // sandbox (Codex's `unsandboxed_execution_allowed`): an approval stays an approval to run
    // confined. What it denies: Codex's own home, where its sign-in lives, and the worker's
    // credential (ctx.unreadable). By their real paths: the sandbox (bubblewrap) hides a path by
    // mounting over it, which it cannot do through a linked directory (the thread would not start),
    // and a read by the link's name leads to the real path anyway.
    const codexHome = ctx.env.CODEX_HOME || join(ctx.env.HOME || homedir(), ".codex");
    const denied = Object.fromEntries([codexHome, ...ctx.unreadable].map((path) => [realPath(path), "deny"]));
    const profile = { extends: ":workspace", filesystem: { ":slash_tmp": "read", ":tmpdir": "read", [ctx.artifactsDir]: "write", ...denied } };
    const settings = { cwd: ctx.workdir, approvalPolicy: "untrusted", config: { default_permissions: "ao", permissions: { ao: profile } } };
    const file = threadFile(ctx.workdir);
    let started: any = null;
    if (ctx.claim.runMode === "continue" && existsSync(file)) {
      const previous = readFileSync(file, "utf8").trim();
      try {
        started = await rpc.request("thread/resume", { threadId: previous, ...settings, excludeTurns: true });
        ctx.emit("log", { stream: "agent", line: `codex thread ${previous} resumed (model ${started.model})` });
      } catch (err) {
        ctx.emit("log", { stream: "agent", line: `codex could not resume thread ${previous} (${(err as Error).message}): starting a new one` });
      }
    }
    if (!started) {
      started = await rpc.request("thread/start", settings);
      ctx.emit("log", { stream: "agent", line: `codex thread ${started.thread.id} started (model ${started.model})` });
    }
    // A Codex too old for permission profiles (the worker runs the codex on its PATH) would ignore the
    // profile and run commands by its own settings: no turn starts then. (Codex 0.169 keeps the
    // thread's profile over a sandbox_mode in its config, as a test checks, and over -c flags.)
    if (started.activePermissionProfile?.id !== "ao") {
      throw new Error("Codex did not take ao's permission profile (is the codex on PATH too old for permission profiles?): no command runs unless confined as ao sets it");
    }
    threadId = started.thread.id as string;
    model = started.model ?? null;
    writeFileSync(file, threadId + "\n");
    await startTurn(ctx.instructions);
  }

  async function startTurn(input: string) {
    // A plan task runs in Codex's Plan mode, the one mode in which it may ask the person questions.
    const mode = ctx.claim.task?.kind === "plan" && model ? { collaborationMode: { mode: "plan", settings: { model, reasoning_effort: null, developer_instructions: null } } } : {};
    const r = await rpc.request("turn/start", { threadId, input: text(input), ...mode });
    turnId ??= r.turn?.id ?? null;
  }

  function followUp(message: string) {
    if (outcome) return ctx.emit("log", { stream: "agent", line: "codex had finished: the message was not delivered" });
    if (!threadId) return void followUps.push(message);
    if (!turnId) return void startTurn(message).catch(fail);
    // Steered into the running turn: Codex reads it with its next model request.
    const steer = rpc
      .request("turn/steer", { threadId, expectedTurnId: turnId, input: text(message) })
      .then(
        () => {},
        (err) => {
          // The turn ended meanwhile: the message starts the next one (the end waits for this answer).
          if (err instanceof RpcError) followUps.push(message);
          else fail(err);
        },
      )
      .finally(() => steering.delete(steer));
    steering.add(steer);
  }

  /** A completed turn: the next one for follow-ups that missed it, else the attempt is done. */
  async function turnDone() {
    while (steering.size > 0) await Promise.all([...steering]);
    if (outcome) return;
    if (followUps.length > 0) return void startTurn(followUps.splice(0).join("\n\n")).catch(fail);
    finish(0);
  }

  function onNotification(method: string, params: any) {
    switch (method) {
      case "turn/started":
        turnId = params.turn?.id ?? turnId;
        turnStarted = true;
        return;
      case "turn/completed": {
        turnId = null;
        // A command the sandbox refused gets no item/completed from Codex: it is closed as failed.
        for (const item of running.values()) mapCodexItem("completed", { ...item, status: "failed", aggregatedOutput: "", exitCode: null }, ctx.workdir, ctx);
        running.clear();
        const turn = params.turn ?? {};
        if (turn.status === "failed") {
          const message = String(turn.error?.message ?? "the codex turn failed");
          // Codex sends the error that failed the turn as a notification too: once on the timeline.
          if (message !== lastError) ctx.emit("error", { message });
          return finish(1, true);
        }
        if (turn.status === "interrupted") {
          // ao stops a turn by ending the app-server, never by turn/interrupt: one it did not stop says so.
          if (cancelled) return finish(1);
          ctx.emit("error", { message: "the codex turn was interrupted before it completed" });
          return finish(1, true);
        }
        return void turnDone();
      }
      case "item/started":
      case "item/completed": {
        const item = params.item ?? {};
        if (item.type === "fileChange" && item.id) fileItems.set(item.id, item);
        if (item.type === "commandExecution" && item.id) {
          if (method === "item/started") running.set(item.id, item);
          else running.delete(item.id);
        }
        // Commands Codex knows to be read-only (ls, cat, grep, git status...) run without asking:
        // the timeline still says who let them run.
        if (method === "item/completed" && item.type === "commandExecution" && item.source === "agent" && item.status !== "declined" && !asked.has(item.id)) {
          ctx.emit("decision", { tool: "exec_command", kind: "shell", subject: unwrapShell(String(item.command ?? "")), decision: "allow", by: "agent", rule: "codex: known read-only command" });
        }
        return mapCodexItem(method === "item/started" ? "started" : "completed", item, ctx.workdir, ctx);
      }
      case "thread/tokenUsage/updated": {
        const total = params.tokenUsage?.total as CodexTokens | undefined;
        const last = params.tokenUsage?.last as CodexTokens | undefined;
        if (!total || !last) return;
        // A resumed thread's total counts earlier attempts too (Codex reports it on resuming, before
        // our turn): this attempt's share is what comes after.
        if (!turnStarted) return void (baseline = total);
        baseline ??= minusTokens(total, last);
        return ctx.usage(codexUsage(minusTokens(total, baseline), model));
      }
      case "error":
        lastError = String(params.error?.message ?? "codex reported an error");
        return ctx.emit("error", { message: lastError, ...(params.willRetry ? { willRetry: true } : {}) });
      case "warning":
      case "configWarning":
      case "deprecationNotice":
        return ctx.emit("log", { stream: "agent", line: `codex ${method}: ${params.message ?? params.summary ?? JSON.stringify(params)}` });
    }
  }

  function onRequest(id: number | string, method: string, params: any) {
    if (method === "item/commandExecution/requestApproval" || method === "item/fileChange/requestApproval" || method === "item/tool/requestUserInput") {
      if (params.itemId) asked.add(params.itemId);
      queue.push({ id, method, params });
      return pump();
    }
    // Anything else Codex might ask (extra permissions, MCP elicitations, sign-in) is refused, not left hanging.
    ctx.emit("log", { stream: "agent", line: `codex asked ${method}: refused (ao does not handle it)` });
    rpc.fail(id, -32601, `ao does not handle ${method}`);
  }

  /** Puts the next waiting request to the policy, or to a person. */
  function pump() {
    while (!pending && queue.length > 0) {
      const r = queue.shift()!;
      if (r.method === "item/tool/requestUserInput") {
        const questions = Array.isArray(r.params.questions) ? r.params.questions : [];
        pending = { kind: "input", id: r.id, questions };
        const asked = questions.map((q: any) => {
          const options = Array.isArray(q.options) && q.options.length ? ` [${q.options.map((o: any) => o.label).join(" | ")}]` : "";
          return `${q.header ? `${q.header}: ` : ""}${q.question}${options}`;
        });
        ctx.ask("input", asked.join("\n") || "Codex asks for input");
        return;
      }
      const { calls, what } = r.method === "item/commandExecution/requestApproval" ? commandCalls(r.params, ctx.workdir) : fileCalls(r.params, ctx.workdir, fileItems.get(r.params.itemId));
      const decided = calls.map((call) => ({ call, d: ctx.decide(call) }));
      const d = strictest(decided.map((x) => x.d));
      const call = decided.find((x) => x.d === d)!.call;
      ctx.emit("decision", { tool: call.name, kind: call.kind, subject: call.subject ?? null, decision: d.decision, by: decidedBy(d), rule: d.rule, ...(d.reason ? { reason: d.reason } : {}) });
      if (d.decision === "allow") {
        rpc.respond(r.id, { decision: "accept" });
      } else if (d.decision === "deny") {
        const refusal = d.reason ? `This is refused: ${d.reason}.` : `The project's policy does not allow this${d.rule ? ` (rule "${d.rule}")` : ""}.`;
        void decline(r.id, `${refusal} Do not try it another way; continue without it or explain what you need.`);
      } else {
        pending = { kind: "approval", id: r.id, call, what };
        const reason = typeof r.params.reason === "string" && r.params.reason ? `\nCodex's reason: ${r.params.reason}` : "";
        ctx.ask("approval", `${what}${reason}`);
      }
    }
  }

  /** Declines a request; the reason goes to Codex first, so its next model request reads both. */
  async function decline(id: number | string, reason: string) {
    if (reason && threadId && turnId) {
      await rpc.request("turn/steer", { threadId, expectedTurnId: turnId, input: text(reason) }).catch(() => {});
    }
    rpc.respond(id, { decision: "decline" });
  }

  function answer(a: Answer) {
    const p = pending;
    if (p?.kind === "approval" && a.kind !== "input") {
      pending = null;
      ctx.emit("decision", { tool: p.call.name, kind: p.call.kind, subject: p.call.subject ?? null, decision: a.kind === "approve" ? "allow" : "deny", by: "person", rule: null, ...(a.kind === "deny" && a.reason ? { reason: a.reason } : {}) });
      if (a.kind === "approve") rpc.respond(p.id, { decision: "accept" });
      else void decline(p.id, a.reason ? `The person reviewing this task denied it: ${a.reason}` : "");
      return pump();
    }
    if (p?.kind === "input") {
      pending = null;
      const reply = a.kind === "input" ? a.text : a.kind === "approve" ? "yes" : `no${a.reason ? `: ${a.reason}` : ""}`;
      rpc.respond(p.id, { answers: Object.fromEntries(p.questions.map((q) => [q.id, { answers: [reply] }])) });
      return pump();
    }
    if (a.kind === "input") return followUp(a.text);
    ctx.emit("log", { stream: "agent", line: `${a.kind}: codex is not waiting for an answer` });
  }

  void boot().catch(fail);

  return {
    pid: proc.pid,
    exited,
    pause: () => proc.signal("SIGSTOP"),
    resume: () => proc.signal("SIGCONT"),
    cancel: (graceMs) => {
      cancelled = true;
      return proc.terminate(graceMs);
    },
    answer,
  };
}

export function codexAgent(binary = "codex", extraArgs: string[] = CODEX_DEFAULT_ARGS): Agent {
  return { name: "codex", ownSandbox: true, start: (ctx) => startCodex(ctx, binary, extraArgs) };
}
