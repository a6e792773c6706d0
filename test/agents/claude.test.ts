// The Claude Code adapter with the real `claude` CLI (node_modules/.bin/claude) talking to a local
// stand-in of the Anthropic Messages API. The context records what the adapter reports through it
// (our own interface, not the agent's); the CLI, its tools, its process and the files are real.
import { afterAll, afterEach, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { claudeAgent } from "../../src/worker/agents/claude";
import type { AgentContext, AgentRun, AgentUsage } from "../../src/worker/agents/types";
import { decideTool } from "../../src/worker/policy";
import { confinementFor, unconfined, type Confine } from "../../src/worker/confine";
import { testWithBwrap } from "../helpers/bubblewrap";
import { processState } from "../helpers/processes";
import type { AgentPolicy } from "../../src/protocol/policy";
import { claudeEnv, startAnthropicStandin, type AnthropicStandin, type Script } from "../helpers/anthropic-standin";

// Each run starts the real CLI (a few seconds each on a loaded machine).
setDefaultTimeout(90_000);
const CLAUDE = join(import.meta.dir, "..", "..", "node_modules", ".bin", "claude");
let tmp: string;
const standins: AnthropicStandin[] = [];
const runs: AgentRun[] = [];

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "ao-claude-"));
});
afterEach(async () => {
  await Promise.all(runs.splice(0).map((r) => r.cancel(200)));
  await Promise.all(standins.splice(0).map((s) => s.stop()));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Recorded {
  events: { type: string; data: any }[];
  asks: { kind: string; message: string }[];
  usage: AgentUsage[];
  summary: string | null;
}

let n = 0;
/** A run of the real CLI in a fresh checkout, against a stand-in answering from `script`. */
function startRun(script: Script, opts: { policy?: AgentPolicy; prompt?: string; workdir?: string; home?: string; runMode?: "fresh" | "continue"; args?: string[]; onAsk?: (kind: string, message: string) => void; unreadable?: string[]; confine?: Confine } = {}) {
  const standin = startAnthropicStandin(script);
  standins.push(standin);
  const home = opts.home ?? join(tmp, `home-${++n}`);
  const workdir = opts.workdir ?? join(tmp, `runs-${n}`, `tsk_${n}-a1`, "work");
  mkdirSync(workdir, { recursive: true });
  mkdirSync(home, { recursive: true });
  const rec: Recorded = { events: [], asks: [], usage: [], summary: null };
  const asked: ((a: { kind: string; message: string }) => void)[] = [];
  const ctx: AgentContext = {
    claim: {
      attempt: 1,
      leaseToken: "lease",
      runMode: opts.runMode ?? "fresh",
      task: { id: `tsk_${n}`, kind: "task", title: "t", prompt: "p" } as any,
      project: { id: "prj_1", name: "demo", knowledge: "", policy: opts.policy ? { agent: opts.policy } : {}, repositories: [] },
    },
    workdir,
    artifactsDir: join(workdir, "..", "artifacts"),
    unreadable: opts.unreadable ?? [],
    confine: opts.confine ?? unconfined,
    env: { ...(process.env as Record<string, string>), ...claudeEnv(standin, home) },
    instructions: opts.prompt ?? "Create the file made-by-claude.txt",
    emit: (type, data) => void rec.events.push({ type, data }),
    summary: (text) => void (rec.summary = text),
    ask: (kind, message) => {
      rec.asks.push({ kind, message });
      for (const w of asked.splice(0)) w({ kind, message });
      opts.onAsk?.(kind, message);
    },
    decide: (call) => decideTool(opts.policy, workdir, call, opts.unreadable),
    usage: (u) => void rec.usage.push(u),
  };
  const run = claudeAgent(CLAUDE, opts.args ?? []).start(ctx);
  runs.push(run);
  /** Resolves at the next ask (or the one already made and not yet awaited). */
  let seen = 0;
  const nextAsk = () =>
    new Promise<{ kind: string; message: string }>((resolve) => {
      if (rec.asks.length > seen) return resolve(rec.asks[seen++]);
      asked.push((a) => (seen++, resolve(a)));
    });
  return { run, rec, standin, workdir, home, nextAsk };
}

const bash = (command: string, description = "Create the file") => ({ type: "tool_use" as const, name: "Bash", input: { command, description } });
const text = (t: string) => ({ type: "text" as const, text: t });
/** The tool_result blocks of a request's last message. */
function toolResults(body: any): any[] {
  const last = body.messages.filter((m: any) => m.role === "user").at(-1);
  return Array.isArray(last?.content) ? last.content.filter((b: any) => b.type === "tool_result") : [];
}
const resultText = (b: any) => (typeof b.content === "string" ? b.content : b.content.map((c: any) => c.text ?? "").join(""));
const decisions = (rec: Recorded) => rec.events.filter((e) => e.type === "decision").map((e) => e.data);

describe("claude: approvals", () => {
  test("a shell call asks the person (built-in rules); approve runs it in the same session and the run completes", async () => {
    const { run, rec, standin, workdir, nextAsk } = startRun([
      { content: [text("I'll create it."), bash("touch made-by-claude.txt")], usage: { input_tokens: 120, output_tokens: 30, cache_read_input_tokens: 10, cache_creation_input_tokens: 5 } },
      { content: [text("done")], usage: { input_tokens: 150, output_tokens: 7 } },
    ]);
    const ask = await nextAsk();
    expect(ask.kind).toBe("approval");
    expect(ask.message).toContain("Claude Code wants to run a shell command (Bash):");
    expect(ask.message).toContain("touch made-by-claude.txt");
    expect(ask.message).toContain("Its reason: Create the file");
    expect(ask.message).toContain("Asked by the built-in rules.");
    expect(existsSync(join(workdir, "made-by-claude.txt"))).toBe(false);
    run.answer({ kind: "approve" });
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(join(workdir, "made-by-claude.txt"))).toBe(true);
    expect(decisions(rec)).toEqual([
      { tool: "Bash", kind: "shell", subject: "touch made-by-claude.txt", decision: "ask", rule: null, by: "built-in rules" },
      { tool: "Bash", kind: "shell", subject: "touch made-by-claude.txt", decision: "allow", rule: null, by: "person" },
    ]);
    // One session: the second request carries the first turn and the command's result.
    expect(standin.mainRequests()).toHaveLength(2);
    const results = toolResults(standin.mainRequests()[1].body);
    expect(results).toHaveLength(1);
    expect(results[0].is_error ?? false).toBe(false);
    expect(rec.events.filter((e) => e.type === "message").map((e) => e.data.text)).toEqual(["I'll create it.", "done"]);
    const tools = rec.events.filter((e) => e.type === "tool").map((e) => e.data);
    expect(tools[0]).toMatchObject({ name: "Bash", input: { command: "touch made-by-claude.txt" }, status: "started" });
    expect(tools[1]).toMatchObject({ name: "Bash", status: "completed" });
    expect(rec.summary).toBe("done");
    // Usage from Claude's own reports: the streamed answers' tokens, the result's cost and the model.
    const last = rec.usage.at(-1)!;
    expect(last.inputTokens).toBeGreaterThanOrEqual(270);
    expect(last.outputTokens).toBeGreaterThanOrEqual(37);
    expect(last.cacheReadTokens).toBeGreaterThanOrEqual(10);
    expect(last.cacheWriteTokens).toBeGreaterThanOrEqual(5);
    expect(last.costUsd).toBeGreaterThan(0);
    expect(typeof last.model).toBe("string");
    expect(last.model).toBe(standin.mainRequests()[0].body.model);
    // Cumulative: never smaller than an earlier report.
    for (let i = 1; i < rec.usage.length; i++) expect(rec.usage[i].inputTokens).toBeGreaterThanOrEqual(rec.usage[i - 1].inputTokens);
  });

  test("deny with a reason: the command does not run, the agent gets the reason and goes on", async () => {
    const { run, rec, standin, workdir, nextAsk } = startRun([{ content: [bash("touch made-by-claude.txt")] }, { content: [text("Understood, I will not create it.")] }]);
    await nextAsk();
    run.answer({ kind: "deny", reason: "not in this repository, use a temp dir" });
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(join(workdir, "made-by-claude.txt"))).toBe(false);
    const results = toolResults(standin.mainRequests()[1].body);
    expect(results[0].is_error).toBe(true);
    expect(resultText(results[0])).toContain("not in this repository, use a temp dir");
    expect(decisions(rec).at(-1)).toEqual({ tool: "Bash", kind: "shell", subject: "touch made-by-claude.txt", decision: "deny", rule: null, by: "person", reason: "not in this repository, use a temp dir" });
    expect(rec.summary).toBe("Understood, I will not create it.");
  });

  test("the project's policy allows shell:touch* without asking; its deny rule refuses rm", async () => {
    const policy: AgentPolicy = { allow: ["shell:touch*"], deny: ["shell:rm *"] };
    const { run, rec, standin, workdir } = startRun([{ content: [bash("touch made-by-claude.txt")] }, { content: [bash("rm -f made-by-claude.txt", "Clean up")] }, { content: [text("ok")] }], { policy });
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(rec.asks).toEqual([]);
    expect(existsSync(join(workdir, "made-by-claude.txt"))).toBe(true);
    expect(decisions(rec)).toEqual([
      { tool: "Bash", kind: "shell", subject: "touch made-by-claude.txt", decision: "allow", rule: "shell:touch*", by: "policy" },
      { tool: "Bash", kind: "shell", subject: "rm -f made-by-claude.txt", decision: "deny", rule: "shell:rm *", by: "policy" },
    ]);
    const refused = toolResults(standin.mainRequests()[2].body)[0];
    expect(refused.is_error).toBe(true);
    expect(resultText(refused)).toContain('Refused by the project\'s policy (rule "shell:rm *")');
  });

  test("reads and edits inside the checkout run without asking; the edit is on the timeline with its diff", async () => {
    const workdir = join(tmp, "edit-run", "tsk_e-a1", "work");
    mkdirSync(workdir, { recursive: true });
    const file = join(workdir, "sum.js");
    writeFileSync(file, "export function sum(a, b) {\n  return a - b;\n}\n");
    const { run, rec } = startRun(
      [
        { content: [{ type: "tool_use", name: "Read", input: { file_path: file } }] },
        { content: [{ type: "tool_use", name: "Edit", input: { file_path: file, old_string: "return a - b;", new_string: "return a + b;" } }] },
        { content: [text("Fixed sum().")] },
      ],
      { prompt: "Fix sum", workdir },
    );
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(rec.asks).toEqual([]);
    expect(readFileSync(file, "utf8")).toContain("return a + b;");
    expect(decisions(rec)).toEqual([
      { tool: "Read", kind: "read", subject: file, decision: "allow", rule: null, by: "built-in rules" },
      { tool: "Edit", kind: "edit", subject: file, decision: "allow", rule: null, by: "built-in rules" },
    ]);
    const edit = rec.events.find((e) => e.type === "edit")!.data;
    expect(edit).toMatchObject({ path: file, tool: "Edit" });
    expect(edit.diff).toContain("-return a - b;\n+return a + b;");
  });

  test("Read is refused the worker's credential, even under a policy that allows every read", async () => {
    const dataDir = join(tmp, "worker-data");
    mkdirSync(dataDir, { recursive: true });
    const credential = join(dataDir, "credential.json");
    writeFileSync(credential, JSON.stringify({ credential: "aow_secret_value" }), { mode: 0o600 });
    const { run, rec, standin } = startRun(
      [
        { content: [{ type: "tool_use", name: "Read", input: { file_path: credential } }] },
        { content: [text("I could not read it.")] },
      ],
      { policy: { allow: ["read"] }, unreadable: [credential] },
    );
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(rec.asks).toEqual([]);
    const reason = "it is or holds the worker's credential, which no agent may read";
    expect(decisions(rec)).toEqual([
      { tool: "Read", kind: "read", subject: credential, decision: "deny", rule: null, by: "built-in rules", reason },
    ]);
    const refused = toolResults(standin.mainRequests()[1].body)[0];
    expect(refused.is_error).toBe(true);
    expect(resultText(refused)).toBe(`Refused: ${reason}.`);
    expect(JSON.stringify(standin.mainRequests().map((r) => r.body))).not.toContain("aow_secret_value");
    expect(readFileSync(credential, "utf8")).toContain("aow_secret_value");
  });

  testWithBwrap("an approved command cannot read the worker's credential nor see other tasks' checkouts: the CLI runs in bubblewrap without them", async () => {
    const dataDir = join(tmp, "worker-data-confined");
    const runs = join(dataDir, "runs");
    const own = join(runs, "tsk_claude-a1");
    const other = join(runs, "tsk_other-a1", "work", "code.txt");
    mkdirSync(join(own, "work"), { recursive: true });
    mkdirSync(join(other, ".."), { recursive: true });
    writeFileSync(other, "another task's code\n");
    const credential = join(dataDir, "credential.json");
    writeFileSync(credential, JSON.stringify({ credential: "aow_secret_value" }), { mode: 0o600 });
    const confinement = confinementFor([credential], { hidden: runs });
    expect(confinement.status).toBe("agent commands run in bubblewrap, without the worker's credential or other tasks' checkouts");
    const look = `cat ${credential}; echo "read: $?"; ls ${runs}; cat ${other}; echo "other: $?"`;
    const { run, rec, standin } = startRun([{ content: [bash(look, "Look at it")] }, { content: [text("I could not read it.")] }], {
      policy: { allow: ["shell"] },
      unreadable: [credential],
      workdir: join(own, "work"),
      confine: confinement.confineIn(own),
    });
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(decisions(rec)[0]).toMatchObject({ tool: "Bash", decision: "allow", rule: "shell" });
    const output = resultText(toolResults(standin.mainRequests()[1].body)[0]);
    expect(output).toContain("Permission denied");
    expect(output).toContain("read: 1");
    // Of the runs, its own attempt's directory alone.
    expect(output.split("\n")).toContain("tsk_claude-a1");
    expect(output.split("\n")).not.toContain("tsk_other-a1");
    expect(output).toContain("other: 1");
    expect(output).not.toContain("another task's code");
    expect(JSON.stringify(standin.mainRequests().map((r) => r.body))).not.toContain("aow_secret_value");
    expect(readFileSync(credential, "utf8")).toContain("aow_secret_value");
  });

  test("unconfined (no bubblewrap), the same approved command reads it: what the confinement is for", async () => {
    const credential = join(tmp, "worker-data-confined", "credential.json");
    const { run, standin } = startRun([{ content: [bash(`cat ${credential}`, "Look at it")] }, { content: [text("ok")] }], { policy: { allow: ["shell"] }, unreadable: [credential] });
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(resultText(toolResults(standin.mainRequests()[1].body)[0])).toContain("aow_secret_value");
  });

  test("--agent-args reach the CLI (a model), but cannot lift the asking (a permission mode is ao's own)", async () => {
    const { run, rec, standin, nextAsk } = startRun([{ content: [bash("touch made-by-claude.txt")] }, { content: [text("ok")] }], {
      args: ["--model", "claude-test-model-1", "--permission-mode", "bypassPermissions"],
    });
    await nextAsk();
    expect(standin.mainRequests()[0].body.model).toBe("claude-test-model-1");
    run.answer({ kind: "approve" });
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(rec.usage.at(-1)!.model).toBe("claude-test-model-1");
  });

  test("an edit outside the checkout asks the person", async () => {
    const outside = join(tmp, "outside.txt");
    const { run, rec, nextAsk } = startRun([{ content: [{ type: "tool_use", name: "Write", input: { file_path: outside, content: "x" } }] }, { content: [text("ok")] }]);
    const ask = await nextAsk();
    expect(ask.message).toContain(`Claude Code wants to change the file (Write):\n  ${outside}`);
    run.answer({ kind: "deny", reason: "stay in the checkout" });
    expect(await run.exited).toEqual({ code: 0, signal: null });
    expect(existsSync(outside)).toBe(false);
    expect(decisions(rec)[0]).toMatchObject({ tool: "Write", kind: "edit", decision: "ask", by: "built-in rules" });
  });
});

describe("claude: questions, follow-ups, the process", () => {
  test("AskUserQuestion puts the task to needs_input; input answers it in the same session", async () => {
    const question = { question: "Which colour should the button be?", header: "Colour", options: [{ label: "Red", description: "Warm" }, { label: "Blue", description: "Calm" }], multiSelect: false };
    const { run, rec, standin, nextAsk } = startRun([{ content: [{ type: "tool_use", name: "AskUserQuestion", input: { questions: [question] } }] }, { content: [text("Green it is.")] }]);
    const ask = await nextAsk();
    expect(ask.kind).toBe("input");
    expect(ask.message).toContain("[Colour] Which colour should the button be?");
    expect(ask.message).toContain("  - Red: Warm");
    // approve is no answer to a question: it is ignored, the question still waits.
    run.answer({ kind: "approve" });
    run.answer({ kind: "input", text: "Green, actually" });
    expect(await run.exited).toEqual({ code: 0, signal: null });
    const result = toolResults(standin.mainRequests()[1].body)[0];
    expect(resultText(result)).toContain("Green, actually");
    expect(rec.summary).toBe("Green it is.");
    expect(decisions(rec)).toEqual([]);
    expect(rec.events.some((e) => e.type === "log" && /approve ignored/.test(e.data.line))).toBe(true);
  });

  test("input while the agent works is a follow-up message in the same session; the run ends once it is answered", async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const { run, rec, standin } = startRun((body, i) => (i === 0 ? { hold: held, content: [text("Working on it.")] } : { content: [text(`reply ${i}`)] }));
    await standin.waitForMain(1);
    run.answer({ kind: "input", text: "Also add a README line, please." });
    await Bun.sleep(300);
    release();
    expect(await run.exited).toEqual({ code: 0, signal: null });
    const later = standin.mainRequests().slice(1).map((r) => JSON.stringify(r.body.messages));
    expect(later.some((m) => m.includes("Also add a README line, please."))).toBe(true);
    // Same session: the first prompt is still in the conversation the follow-up continues.
    expect(later.at(-1)).toContain("Create the file made-by-claude.txt");
    expect(rec.events.filter((e) => e.type === "message").at(-1)!.data.text).toMatch(/^reply \d$/);
  });

  test("a CLI that refuses its arguments: what it printed on stderr is on the timeline, and the run fails", async () => {
    const { run, rec } = startRun([{ content: [text("never asked")] }], { args: ["--no-such-flag"] });
    const exit = await run.exited;
    expect(exit.code).not.toBe(0);
    const stderr = rec.events.filter((e) => e.type === "log" && e.data.stream === "stderr").map((e) => e.data.line);
    expect(stderr).toContain("error: unknown option '--no-such-flag'");
  });

  test("pause stops the CLI's whole process group, resume continues it, cancel ends it and what it started", async () => {
    const { run, rec, workdir } = startRun([{ content: [bash("sleep 60 & echo $! > sleeper.pid; wait", "Wait a while")] }, { content: [text("never")] }], {
      policy: { allow: ["shell:sleep*"] },
    });
    const pidFile = join(workdir, "sleeper.pid");
    for (let i = 0; i < 500 && !(existsSync(pidFile) && readFileSync(pidFile, "utf8").trim()); i++) await Bun.sleep(50);
    if (!existsSync(pidFile)) throw new Error(`no sleeper started: ${JSON.stringify(rec.events)}`);
    const sleeper = Number(readFileSync(pidFile, "utf8").trim());
    expect(processState(run.pid)).not.toBe("gone");
    run.pause();
    await Bun.sleep(200);
    expect(processState(run.pid)).toBe("T");
    expect(processState(sleeper)).toBe("T");
    run.resume();
    await Bun.sleep(200);
    expect(processState(run.pid)).not.toBe("T");
    expect(processState(sleeper)).not.toBe("T");
    run.pause();
    await run.cancel(500);
    const exit = await run.exited;
    expect(exit.code === 0).toBe(false);
    await Bun.sleep(200);
    expect(["gone", "Z"]).toContain(processState(sleeper));
    expect(["gone", "Z"]).toContain(processState(run.pid));
    expect(rec.events.some((e) => e.type === "error")).toBe(false);
  });

  test("a CLI that dies while a person is asked: the run fails, and no decision is put in the person's name", async () => {
    const { run, rec, nextAsk } = startRun([{ content: [bash("touch made-by-claude.txt")] }, { content: [text("never")] }]);
    expect((await nextAsk()).kind).toBe("approval");
    process.kill(run.pid, "SIGKILL");
    expect(await run.exited).toEqual({ code: null, signal: "SIGKILL", reported: true }); // one error says how
    expect(rec.events.filter((e) => e.type === "error").map((e) => e.data.message)).toEqual(["claude: Claude Code process terminated by signal SIGKILL"]);
    expect(decisions(rec).map((d) => d.by)).toEqual(["built-in rules"]);
  });

  test("a retry that continues resumes the previous attempt's session in the moved checkout", async () => {
    const home = join(tmp, "home-continue");
    const first = join(tmp, "runs-continue", "tsk_c-a1", "work");
    const a = startRun([{ content: [text("First attempt, remembered.")] }], { workdir: first, home, prompt: "Remember the word pelican." });
    expect(await a.run.exited).toEqual({ code: 0, signal: null });
    const second = join(tmp, "runs-continue", "tsk_c-a2", "work");
    mkdirSync(join(second, ".."), { recursive: true });
    renameSync(first, second);
    const b = startRun([{ content: [text("Continued.")] }], { workdir: second, home, runMode: "continue", prompt: "What was the word?" });
    expect(await b.run.exited).toEqual({ code: 0, signal: null });
    const conversation = JSON.stringify(b.standin.mainRequests()[0].body.messages);
    expect(conversation).toContain("Remember the word pelican.");
    expect(conversation).toContain("First attempt, remembered.");
    expect(conversation).toContain("What was the word?");
    expect(b.rec.events.some((e) => e.type === "log" && /^continuing claude session /.test(e.data.line))).toBe(true);
    // A fresh run in a new checkout starts a new conversation.
    const c = startRun([{ content: [text("Fresh.")] }], { workdir: join(tmp, "runs-continue", "tsk_c-a3", "work"), home, prompt: "Hello" });
    expect(await c.run.exited).toEqual({ code: 0, signal: null });
    expect(JSON.stringify(c.standin.mainRequests()[0].body.messages)).not.toContain("pelican");
  });
});

test.each([
  ["unconfined", unconfined, 127],
  ["in bubblewrap", confinementFor([]).confineIn(tmpdir()), 127],
] as const)("a CLI that is not there fails the run with the reason (%s)", async (_, confine, code) => {
  const events: { type: string; data: any }[] = [];
  const ctx = {
    claim: { runMode: "fresh" },
    workdir: tmp,
    env: {},
    instructions: "hi",
    confine,
    emit: (type: string, data: unknown) => void events.push({ type, data }),
    summary() {},
    ask() {},
    decide: () => ({ decision: "ask", rule: null, by: "default" }),
    usage() {},
  } as unknown as AgentContext;
  const missing = claudeAgent(join(tmp, "no-such-claude")).start(ctx);
  expect(await missing.exited).toEqual({ code, signal: null, reported: true }); // its error event is the reason
  expect(events.find((e) => e.type === "error")!.data.message).toContain("no-such-claude");
});
