// The Codex adapter against the real `codex app-server`: the CLI asks for approvals because the
// stand-in model calls its shell and apply_patch tools; the adapter puts each ask to the policy or
// to the (recorded) person, and the answers go back on the same thread.
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { codexAgent } from "../../src/worker/agents/codex";
import { credentialPath } from "../../src/worker/credential";
import type { AgentRun } from "../../src/worker/agents/types";
import { startOpenAIStandIn, type OpenAIStandIn } from "../helpers/openai-standin";
import { alive } from "../e2e/worker-helpers";
import { argvOf, processState } from "../helpers/processes";
import { checkout, CODEX_BIN, codexBehind, recordingContext } from "./codex-helpers";

let tmp: string;
let standIn: OpenAIStandIn;
const runs: AgentRun[] = [];
let n = 0;

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "ao-codex-"));
});

afterEach(async () => {
  await Promise.all(runs.splice(0).map((r) => r.cancel(500)));
  await standIn?.stop();
});

afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A fresh stand-in, checkout and CODEX_HOME; the adapter started on them (after `prepare` saw the home). */
function start(opts: Partial<Parameters<typeof recordingContext>[0]> = {}, prepare?: (home: string) => void) {
  const dir = join(tmp, `case-${++n}`);
  standIn = opts.standIn ?? startOpenAIStandIn();
  const ctx = recordingContext({ workdir: checkout(join(dir, "work")), home: join(dir, "codex-home"), standIn, ...opts });
  prepare?.(join(dir, "codex-home"));
  const run = codexAgent(CODEX_BIN).start(ctx);
  runs.push(run);
  return { ctx, run, workdir: ctx.workdir };
}

const decisions = (ctx: ReturnType<typeof start>["ctx"]) => ctx.events.filter((e) => e.type === "decision").map((e) => e.data);

test("a command Codex asks to run waits for a person; approve runs it in the checkout and the turn goes on", async () => {
  standIn = startOpenAIStandIn();
  standIn.push(
    { items: [{ message: "I'll create the file." }, { exec: "touch approved.txt" }], usage: { input: 2000, cached: 500, output: 50 } },
    { items: [{ message: "Created approved.txt." }], usage: { input: 2600, cached: 2000, output: 20 } },
  );
  const { ctx, run, workdir } = start({ standIn });
  const ask = await ctx.until(() => ctx.asks[0]);
  expect(ask).toEqual({ kind: "approval", message: "Codex asks to run: touch approved.txt" });
  expect(existsSync(join(workdir, "approved.txt"))).toBe(false);
  expect(decisions(ctx)).toEqual([{ tool: "exec_command", kind: "shell", subject: "touch approved.txt", decision: "ask", by: "built-in rules", rule: null }]);

  run.answer({ kind: "approve" });
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(existsSync(join(workdir, "approved.txt"))).toBe(true);
  expect(decisions(ctx)[1]).toEqual({ tool: "exec_command", kind: "shell", subject: "touch approved.txt", decision: "allow", by: "person", rule: null });
  const tools = ctx.events.filter((e) => e.type === "tool").map((e) => e.data);
  expect(tools[0]).toMatchObject({ name: "shell", input: { command: "touch approved.txt", cwd: workdir }, status: "started" });
  expect(tools[1]).toMatchObject({ name: "shell", input: { command: "touch approved.txt" }, exitCode: 0, status: "completed" });
  expect(ctx.events.filter((e) => e.type === "message").map((e) => e.data.text)).toEqual(["I'll create the file.", "Created approved.txt."]);
  expect(ctx.summaries.at(-1)).toBe("Created approved.txt.");
  // The command's result went back to the model on the same thread.
  expect(standIn.requests).toHaveLength(2);
  expect(standIn.requests[1].headers["session-id"]).toBe(standIn.requests[0].headers["session-id"]);
  expect(standIn.toolOutput("call_exec_1_1")).toContain("Process exited with code 0");
  // Usage: cumulative over the attempt, from Codex's own counts (OpenAI's input includes the cached tokens).
  expect(ctx.usages.at(-1)).toEqual({ inputTokens: 4600 - 2500, outputTokens: 70, cacheReadTokens: 2500, cacheWriteTokens: 0, costUsd: 0, model: "gpt-5.5" });
  expect(ctx.usages.length).toBeGreaterThanOrEqual(2);
});

test("deny with a reason: the command never runs and Codex reads the person's reason before its next step", async () => {
  standIn = startOpenAIStandIn();
  standIn.push({ items: [{ exec: "rm -f README.md && touch denied.txt" }] }, { items: [{ message: "Understood, I left README.md alone." }] });
  const { ctx, run, workdir } = start({ standIn });
  await ctx.until(() => ctx.asks[0]);
  run.answer({ kind: "deny", reason: "keep the README, and no new files at the root" });
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(existsSync(join(workdir, "denied.txt"))).toBe(false);
  expect(existsSync(join(workdir, "README.md"))).toBe(true);
  expect(decisions(ctx)[1]).toEqual({ tool: "exec_command", kind: "shell", subject: "rm -f README.md && touch denied.txt", decision: "deny", by: "person", rule: null, reason: "keep the README, and no new files at the root" });
  expect(ctx.events.find((e) => e.type === "tool" && e.data.status === "declined")).toBeDefined();
  // What Codex sent the model next: the declined call's output, then the reason as the person's message.
  const next = standIn.requests[1];
  expect(standIn.toolOutput("call_exec_1_0")).toContain("rejected by user");
  expect(standIn.userTexts(next).at(-1)).toBe("The person reviewing this task denied it: keep the README, and no new files at the root");
});

test("two commands asked for at once (parallel tool calls) are put to the person one at a time", async () => {
  standIn = startOpenAIStandIn();
  standIn.push({ items: [{ exec: "touch one.txt" }, { exec: "touch two.txt" }] }, { items: [{ message: "One of two." }] });
  const { ctx, run, workdir } = start({ standIn });
  await ctx.until(() => ctx.asks[0]);
  await Bun.sleep(500);
  expect(ctx.asks).toHaveLength(1); // the second waits behind the first
  expect(ctx.events.filter((e) => e.type === "tool" && e.data.status === "started")).toHaveLength(2); // both calls are waiting
  const first = ctx.asks[0].message.includes("one.txt") ? "one.txt" : "two.txt";
  const second = first === "one.txt" ? "two.txt" : "one.txt";
  run.answer({ kind: "approve" });
  const ask = await ctx.until(() => ctx.asks[1]);
  expect(ask.message).toBe(`Codex asks to run: touch ${second}`);
  run.answer({ kind: "deny", reason: "one file is enough" });
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(existsSync(join(workdir, first))).toBe(true);
  expect(existsSync(join(workdir, second))).toBe(false);
  expect(decisions(ctx).filter((d) => d.by === "person").map((d) => [d.subject, d.decision])).toEqual([
    [`touch ${first}`, "allow"],
    [`touch ${second}`, "deny"],
  ]);
});

test("apply_patch: an edit the policy says to ask about waits for approval, then the file exists and the timeline has the diff", async () => {
  standIn = startOpenAIStandIn();
  standIn.push(
    { items: [{ patch: "*** Begin Patch\n*** Add File: docs/notes.md\n+# Notes\n+written by codex\n*** Update File: README.md\n@@\n-# demo\n+# demo project\n*** End Patch\n" }] },
    { items: [{ message: "Added docs/notes.md and retitled the README." }] },
  );
  const { ctx, run, workdir } = start({ standIn, policy: { ask: ["edit:docs/*"] } });
  const ask = await ctx.until(() => ctx.asks[0]);
  expect(ask).toEqual({ kind: "approval", message: "Codex asks to edit README.md (update), docs/notes.md (add)" });
  // The strictest of the files' decisions: README.md alone would be allowed (inside the checkout).
  expect(decisions(ctx)[0]).toMatchObject({ tool: "apply_patch", kind: "edit", decision: "ask", by: "policy", rule: "edit:docs/*" });
  expect(existsSync(join(workdir, "docs/notes.md"))).toBe(false);
  run.answer({ kind: "approve" });
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(readFileSync(join(workdir, "docs/notes.md"), "utf8")).toBe("# Notes\nwritten by codex\n");
  expect(readFileSync(join(workdir, "README.md"), "utf8")).toBe("# demo project\n");
  const edit = ctx.events.find((e) => e.type === "edit")!.data;
  expect(edit.files).toEqual([
    { path: "README.md", kind: "update" },
    { path: "docs/notes.md", kind: "add" },
  ]);
  expect(edit.status).toBe("completed");
  expect(edit.diff).toContain("--- README.md (update)");
  expect(edit.diff).toContain("+# demo project");
});

test("the project policy allows a command and refuses another without asking anyone; the refusal's reason reaches Codex", async () => {
  standIn = startOpenAIStandIn();
  standIn.push({ items: [{ exec: "touch allowed.txt" }] }, { items: [{ exec: "git push origin main" }] }, { items: [{ message: "Pushed nothing; the policy forbids it." }] });
  const { ctx, run, workdir } = start({ standIn, policy: { allow: ["shell:touch *"], deny: ["shell:git push*"] } });
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(ctx.asks).toEqual([]);
  expect(existsSync(join(workdir, "allowed.txt"))).toBe(true);
  expect(decisions(ctx)).toEqual([
    { tool: "exec_command", kind: "shell", subject: "touch allowed.txt", decision: "allow", by: "policy", rule: "shell:touch *" },
    { tool: "exec_command", kind: "shell", subject: "git push origin main", decision: "deny", by: "policy", rule: "shell:git push*" },
  ]);
  expect(standIn.toolOutput("call_exec_2_0")).toContain("rejected by user");
  expect(standIn.userTexts(standIn.requests[2]).at(-1)).toContain(`The project's policy does not allow this (rule "shell:git push*")`);
});

test("commands run in Codex's sandbox: the checkout and the artifacts directory are writable, nothing else (not /tmp)", async () => {
  standIn = startOpenAIStandIn();
  const outside = join(tmp, `outside-${n + 1}.txt`);
  standIn.push({ items: [{ exec: `touch ${outside} inside.txt "$AO_ARTIFACTS_DIR/report.md"` }] }, { items: [{ message: "Tried." }] });
  const { ctx, run, workdir } = start({ standIn, policy: { allow: ["shell"] } });
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(existsSync(join(workdir, "inside.txt"))).toBe(true);
  expect(existsSync(join(ctx.artifactsDir, "report.md"))).toBe(true);
  expect(existsSync(outside)).toBe(false);
  // Codex tells the model what the sandbox refused, and runs it no second time outside it. It
  // reports no completion for the refused command: the timeline closes it as failed.
  expect(standIn.toolOutput("call_exec_1_0")).toContain(`touch: cannot touch '${outside}': Read-only file system`);
  expect(ctx.events.filter((e) => e.type === "tool").map((e) => e.data.status)).toEqual(["started", "failed"]);
});

test("commands cannot read Codex's own home (its sign-in), approved or not, and are not re-run outside the sandbox", async () => {
  standIn = startOpenAIStandIn();
  const home = join(tmp, `case-${n + 1}`, "codex-home");
  standIn.push({ items: [{ exec: `cat ${home}/config.toml > leaked.txt` }] }, { items: [{ message: "Tried." }] });
  const { ctx, run, workdir } = start({ standIn, policy: { allow: ["shell"] } });
  expect(ctx.env.CODEX_HOME).toBe(home);
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(readFileSync(join(home, "config.toml"), "utf8")).toContain("model_provider");
  expect(existsSync(join(workdir, "leaked.txt")) ? readFileSync(join(workdir, "leaked.txt"), "utf8") : "").not.toContain("model_provider");
  expect(standIn.toolOutput("call_exec_1_0")).toMatch(/Permission denied|No such file|Operation not permitted/);
});

test("commands cannot read the files the worker names unreadable (its credential)", async () => {
  standIn = startOpenAIStandIn();
  const dataDir = join(tmp, `worker-data-${n + 1}`);
  mkdirSync(dataDir, { recursive: true });
  const credential = credentialPath(dataDir);
  writeFileSync(credential, JSON.stringify({ credential: "aow_secret_value" }), { mode: 0o600 });
  const beside = join(dataDir, "readable.txt");
  writeFileSync(beside, "not secret");
  standIn.push({ items: [{ exec: `cat ${credential} > leaked.txt; cat ${beside} > beside.txt` }] }, { items: [{ message: "Tried." }] });
  const { run, workdir } = start({ standIn, policy: { allow: ["shell"] }, unreadable: [credential] });
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(readFileSync(join(workdir, "leaked.txt"), "utf8")).not.toContain("aow_secret_value");
  expect(standIn.toolOutput("call_exec_1_0")).toMatch(/Permission denied|No such file|Operation not permitted/);
  // Only the file: the rest of the worker's directory reads as before.
  expect(readFileSync(join(workdir, "beside.txt"), "utf8")).toBe("not secret");
});

test("a credential named through a linked directory: the thread starts, and commands can read it neither by the link nor by its real path", async () => {
  standIn = startOpenAIStandIn();
  const realDir = join(tmp, `worker-real-${n + 1}`);
  const linkedDir = join(tmp, `worker-linked-${n + 1}`);
  mkdirSync(realDir, { recursive: true });
  symlinkSync(realDir, linkedDir);
  writeFileSync(credentialPath(realDir), JSON.stringify({ credential: "aow_secret_value" }), { mode: 0o600 });
  standIn.push({ items: [{ exec: `cat ${credentialPath(realDir)} > by-real.txt; cat ${credentialPath(linkedDir)} > by-link.txt` }] }, { items: [{ message: "Tried." }] });
  // Named through the link, as a worker whose data directory sits under a linked home names it.
  const { run, workdir } = start({ standIn, policy: { allow: ["shell"] }, unreadable: [credentialPath(linkedDir)] });
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(readFileSync(join(workdir, "by-real.txt"), "utf8")).not.toContain("aow_secret_value");
  expect(readFileSync(join(workdir, "by-link.txt"), "utf8")).not.toContain("aow_secret_value");
  expect(standIn.toolOutput("call_exec_1_0")).toMatch(/Permission denied|No such file|Operation not permitted/);
});

test("a sandbox_mode in Codex's own config does not loosen ao's profile: a write outside the checkout is still refused", async () => {
  standIn = startOpenAIStandIn();
  const outside = join(tmp, `outside-${n + 1}.txt`);
  standIn.push({ items: [{ exec: `touch ${outside} inside.txt` }] }, { items: [{ message: "Tried." }] });
  const { run, workdir } = start({ standIn, policy: { allow: ["shell"] } }, (home) => {
    const config = join(home, "config.toml");
    writeFileSync(config, `sandbox_mode = "danger-full-access"\n${readFileSync(config, "utf8")}`);
  });
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(existsSync(join(workdir, "inside.txt"))).toBe(true);
  expect(existsSync(outside)).toBe(false);
});

test("a command Codex parsed as reading a file is a read: the built-in rules let it run without asking anyone", async () => {
  standIn = startOpenAIStandIn();
  standIn.push({ items: [{ exec: "cat README.md" }] }, { items: [{ exec: "cat README.md | sh" }] }, { items: [{ message: "It says demo." }] });
  const { ctx, run, workdir } = start({ standIn });
  // The second command pipes into a shell: not a read, so it asks.
  await ctx.until(() => ctx.asks[0]);
  expect(ctx.asks).toEqual([{ kind: "approval", message: "Codex asks to run: cat README.md | sh" }]);
  run.answer({ kind: "deny", reason: "no" });
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(decisions(ctx)[0]).toEqual({ tool: "exec_command", kind: "read", subject: join(workdir, "README.md"), decision: "allow", by: "built-in rules", rule: null });
  expect(decisions(ctx)[1]).toMatchObject({ kind: "shell", subject: "cat README.md | sh", decision: "ask" });
  expect(ctx.events.find((e) => e.type === "tool" && e.data.status === "completed")?.data.output).toContain("# demo");
});

test("input while Codex works is steered into the running turn", async () => {
  let release!: () => void;
  standIn = startOpenAIStandIn();
  standIn.push({ items: [{ message: "Looking at the code." }], hold: new Promise<void>((r) => (release = r)) }, { items: [{ message: "Done, with the changelog entry too." }] });
  const { ctx, run } = start({ standIn });
  await standIn.waitForRequest(1);
  // The turn has started (its first model request is open): the message joins it.
  await ctx.until(() => ctx.events.find((e) => e.type === "log" && /thread .* started/.test(e.data.line)));
  run.answer({ kind: "input", text: "Also add a CHANGELOG entry." });
  await Bun.sleep(300);
  release();
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(standIn.requests).toHaveLength(2);
  expect(standIn.userTexts(standIn.requests[1])).toContain("Also add a CHANGELOG entry.");
  expect(ctx.summaries.at(-1)).toBe("Done, with the changelog entry too.");
});

test("a plan task runs in Codex's Plan mode: its question waits in needs_input and the answer goes back to the same call", async () => {
  standIn = startOpenAIStandIn();
  standIn.push(
    { items: [{ ask: [{ id: "scope", header: "Scope", question: "Only sum.js, or the whole lib?", options: [{ label: "sum.js", description: "just the file" }, { label: "lib", description: "everything" }] }] }] },
    { items: [{ exec: `echo '{"tasks":[{"title":"Fix sum","prompt":"only sum.js"}]}' > "$AO_ARTIFACTS_DIR/plan.json"` }] },
    { items: [{ message: "Plan written." }] },
  );
  const { ctx, run } = start({ standIn, kind: "plan", policy: { allow: ["shell:echo *"] } });
  const ask = await ctx.until(() => ctx.asks[0]);
  expect(ask).toEqual({ kind: "input", message: "Scope: Only sum.js, or the whole lib? [sum.js | lib]" });
  run.answer({ kind: "input", text: "only sum.js" });
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(JSON.parse(standIn.toolOutput("call_ask_1_0")!)).toEqual({ answers: { scope: { answers: ["only sum.js"] } } });
  expect(decisions(ctx)[0]).toMatchObject({ subject: `echo '{"tasks":[{"title":"Fix sum","prompt":"only sum.js"}]}' > "$AO_ARTIFACTS_DIR/plan.json"`, decision: "allow", rule: "shell:echo *" });
  expect(JSON.parse(readFileSync(join(ctx.artifactsDir, "plan.json"), "utf8")).tasks[0].title).toBe("Fix sum");
  // The turn ran in Plan mode (its developer instructions say so).
  expect(JSON.stringify(standIn.requests[0].body.input)).toMatch(/plan mode/i);
});

test("a turn the model API fails: one error event with Codex's account of it, and the attempt fails", async () => {
  standIn = startOpenAIStandIn();
  standIn.push({ items: [], error: { status: 400, type: "invalid_request_error", code: "context_length_exceeded", message: "Your input exceeds the context window of this model." } });
  const { ctx, run } = start({ standIn });
  expect((await run.exited).code).not.toBe(0);
  const errors = ctx.events.filter((e) => e.type === "error").map((e) => e.data.message);
  // Codex words the API's error its own way; it is on the timeline once.
  expect(errors).toEqual(["Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying."]);
  expect(ctx.summaries).toEqual([]);
});

test("a Codex that does not report ao's permission profile gets no turn: the attempt fails and says why", async () => {
  standIn = startOpenAIStandIn();
  standIn.push({ items: [{ message: "Never asked." }] });
  const dir = join(tmp, `case-${++n}`);
  mkdirSync(dir, { recursive: true });
  // The real codex, its answers passed through a filter that drops the thread's active profile, as
  // a Codex too old for permission profiles reports none.
  const oldCodex = codexBehind(join(dir, "old-codex"), `
    try {
      const m = JSON.parse(line);
      if (m.result && "activePermissionProfile" in m.result) {
        delete m.result.activePermissionProfile;
        line = JSON.stringify(m);
      }
    } catch {}
  `);
  const ctx = recordingContext({ workdir: checkout(join(dir, "work")), home: join(dir, "codex-home"), standIn });
  const run = codexAgent(oldCodex).start(ctx);
  runs.push(run);
  expect((await run.exited).code).not.toBe(0);
  const errors = ctx.events.filter((e) => e.type === "error").map((e) => e.data.message);
  expect(errors).toEqual(["codex: Codex did not take ao's permission profile (is the codex on PATH too old for permission profiles?): no command runs unless confined as ao sets it"]);
  expect(standIn.requests).toHaveLength(0);
});

test("a turn Codex ends as interrupted (not through ao's cancel): one error event says so, and the attempt fails", async () => {
  standIn = startOpenAIStandIn();
  // The model is still thinking when the turn is interrupted.
  standIn.push({ items: [{ message: "Never finished." }], hold: new Promise(() => {}) });
  const dir = join(tmp, `case-${++n}`);
  mkdirSync(dir, { recursive: true });
  // The real codex, with someone else on its line: once the turn has started, the wrapper asks
  // Codex to interrupt it (turn/interrupt, as an IDE's stop button does) and keeps the answer to itself.
  const wrapper = codexBehind(join(dir, "interrupted-codex"), `
    let m = null;
    try { m = JSON.parse(line); } catch {}
    if (m?.id === "someone-else") continue;
    if (m?.method === "turn/started") {
      p.stdin.write(JSON.stringify({ id: "someone-else", method: "turn/interrupt", params: { threadId: m.params.threadId, turnId: m.params.turn.id } }) + "\\n");
    }
  `);
  const ctx = recordingContext({ workdir: checkout(join(dir, "work")), home: join(dir, "codex-home"), standIn });
  const run = codexAgent(wrapper).start(ctx);
  runs.push(run);
  // Reported: the attempt adds no generic "the agent exited with code 1" beside it.
  expect(await run.exited).toEqual({ code: 1, signal: null, reported: true });
  expect(ctx.events.filter((e) => e.type === "error").map((e) => e.data.message)).toEqual(["the codex turn was interrupted before it completed"]);
  expect(ctx.summaries).toEqual([]);
});

test("pause stops the real process group, resume continues it, cancel ends it", async () => {
  let release!: () => void;
  standIn = startOpenAIStandIn();
  standIn.push({ items: [{ message: "Thinking." }], hold: new Promise<void>((r) => (release = r)) });
  const { run } = start({ standIn });
  await standIn.waitForRequest(1);
  run.pause();
  await Bun.sleep(200);
  expect(processState(run.pid)).toBe("T");
  run.resume();
  await Bun.sleep(200);
  expect(processState(run.pid)).not.toBe("T");
  await run.cancel(1000);
  const exit = await run.exited;
  expect(exit.code === null || exit.code !== 0).toBe(true);
  expect(alive(run.pid)).toBe(false);
  release();
});

test("a retry that continues resumes the same Codex thread, and counts only its own tokens", async () => {
  standIn = startOpenAIStandIn();
  standIn.push({ items: [{ message: "First attempt: looked around." }], usage: { input: 3000, output: 100 } });
  const first = start({ standIn });
  expect(await first.run.exited).toEqual({ code: 0, signal: null });
  const thread = readFileSync(join(first.workdir, ".git", "ao-codex-thread"), "utf8").trim();
  expect(thread).toMatch(/^[0-9a-f-]{36}$/);

  standIn.push({ items: [{ message: "Second attempt: finished." }], usage: { input: 4000, cached: 3000, output: 10 } });
  const home = join(first.workdir, "..", "codex-home");
  const ctx = recordingContext({ workdir: first.workdir, home, standIn, runMode: "continue", instructions: "Continue where you stopped." });
  const run = codexAgent(CODEX_BIN).start(ctx);
  runs.push(run);
  expect(await run.exited).toEqual({ code: 0, signal: null });
  expect(ctx.events.some((e) => e.type === "log" && e.data.line.startsWith(`codex thread ${thread} resumed`))).toBe(true);
  expect(standIn.requests[1].headers["session-id"]).toBe(thread);
  // The model sees the first attempt's conversation.
  expect(JSON.stringify(standIn.requests[1].body.input)).toContain("First attempt: looked around.");
  expect(ctx.usages.at(-1)).toMatchObject({ inputTokens: 1000, cacheReadTokens: 3000, outputTokens: 10 });
});

// Last in the file: Codex's sandboxed file-system helpers run in a session of their own, and some
// outlived their app-server until the adapter ended them (killSandboxHelpers in codex.ts).
test("no sandbox helper of these runs outlives its app-server", async () => {
  const ours = () =>
    readdirSync("/proc")
      .filter((p) => /^\d+$/.test(p))
      .filter((p) => {
        try {
          const argv = argvOf(Number(p));
          return argv.some((a) => a.includes(tmp)) && argv.includes("--codex-run-as-fs-helper");
        } catch {
          return false;
        }
      });
  expect(ours()).toEqual([]);
});
