// End to end: a real server, a real `ao worker --agent claude` running the real `claude` CLI
// (node_modules/.bin on its PATH) against the Messages API stand-in, answered through ao's API.
// One stand-in serves every task: each task's prompt names its scenario, and the turn is the
// number of assistant messages in the conversation so far.
import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { until } from "../workers/helpers";
import { alive } from "../e2e/worker-helpers";
import { processState } from "../helpers/processes";
import type { ScriptTurn } from "../helpers/anthropic-standin";
import { BIN, claudeRun } from "./claude-run";

setDefaultTimeout(120_000);

/** The model API answers 529 to the "overloaded" scenario while this holds. */
let overloaded = true;
/** Answers of the "cut" scenario so far: the first one's stream breaks off mid-text. */
let cuts = 0;
const holds = new Map<string, Promise<void>>();
const releases = new Map<string, () => void>();
holds.set("follow-up", new Promise((r) => releases.set("follow-up", r)));

const text = (t: string): ScriptTurn => ({ content: [{ type: "text", text: t }] });
const bash = (command: string, description: string): ScriptTurn => ({ content: [{ type: "tool_use", name: "Bash", input: { command, description } }] });

/** The scenario a conversation belongs to (named in its prompt), and what its next turn says. */
function script(body: any): ScriptTurn {
  const all = JSON.stringify(body.messages);
  const scenario = /SCENARIO:([a-z-]+)/.exec(all)?.[1] ?? "none";
  const turn = body.messages.filter((m: any) => m.role === "assistant").length;
  switch (scenario) {
    case "approve":
    case "deny":
    case "policy":
      return turn === 0 ? bash(`touch ${marker(`${scenario}.txt`)}`, "Leave a mark") : text(`${scenario}: finished`);
    case "question":
      return turn === 0
        ? { content: [{ type: "tool_use", name: "AskUserQuestion", input: { questions: [{ question: "Which colour should the button be?", header: "Colour", options: [{ label: "Red", description: "Warm" }, { label: "Blue", description: "Calm" }], multiSelect: false }] } }] }
        : text("question: finished");
    case "follow-up":
      return turn === 0 ? { ...text("Working on it."), hold: holds.get("follow-up") } : text("follow-up: finished");
    case "overloaded":
      return overloaded ? { content: [], error: { status: 529, type: "overloaded_error", message: "Overloaded" } } : text("overloaded: finished");
    case "cut":
      // message_start, ping, the text block's start and its first half; then the connection drops.
      return cuts++ === 0 ? { ...text("cut: finished"), cutAfter: 4 } : text("cut: finished");
    case "process":
      return turn === 0 ? bash(`sleep 60 & echo $! > ${marker("sleeper.pid")}; wait`, "Wait a while") : text("process: finished");
  }
  return text("no scenario");
}

const run = claudeRun("ao-claude-e2e-", script, { beforeStop: () => releases.get("follow-up")?.() });
const { marker, newTask, task, events, action, waitStatus, findAgentPid } = run;
const decisions = async (id: string) => (await events(id)).filter((e) => e.type === "decision").map((e) => e.data);
/** The tool_result blocks the stand-in received in a scenario's conversations. */
const toolResultsSeen = (scenario: string) =>
  run.standin
    .mainRequests()
    .filter((r) => JSON.stringify(r.body.messages).includes(`SCENARIO:${scenario}`))
    .flatMap((r) => r.body.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content.filter((b: any) => b.type === "tool_result") : [])));
const resultText = (b: any) => (typeof b.content === "string" ? b.content : b.content.map((c: any) => c.text ?? "").join(""));

describe("ao worker --agent claude", () => {
  test("the worker advertises claude with the CLI's version", async () => {
    const w = (await run.s.api("GET", `/orgs/${run.orgId}/workers`, { token: run.token })).body.items[0];
    const version = Bun.spawnSync([join(BIN, "claude"), "--version"]).stdout.toString().split(" ")[0];
    expect(w.agents).toContainEqual({ name: "claude", version });
  });

  test("approve: the shell call waits in needs_approval with a clear message, then runs; the task completes", async () => {
    const t = await newTask("approve");
    const asking = await waitStatus(t.id, "needs_approval");
    expect(asking.needs.message).toContain("Claude Code wants to run a shell command (Bash):");
    expect(asking.needs.message).toContain(`touch ${marker("approve.txt")}`);
    expect(asking.needs.message).toContain("Its reason: Leave a mark");
    expect(existsSync(marker("approve.txt"))).toBe(false);
    expect((await action(t.id, { action: "approve" })).status).toBe(200);
    const done = await waitStatus(t.id, "completed");
    expect(done.summary).toBe("approve: finished");
    expect(existsSync(marker("approve.txt"))).toBe(true);
    expect(await decisions(t.id)).toEqual([
      { tool: "Bash", kind: "shell", subject: `touch ${marker("approve.txt")}`, decision: "ask", rule: null, by: "built-in rules" },
      { tool: "Bash", kind: "shell", subject: `touch ${marker("approve.txt")}`, decision: "allow", rule: null, by: "person" },
    ]);
    const ev = await events(t.id);
    const types = ev.map((e) => e.type);
    for (const type of ["message", "tool", "decision", "log"]) expect(types).toContain(type);
    // The person's action is on the timeline with who did it, between the ask and the allow.
    const seqOf = (pred: (e: any) => boolean) => ev.find(pred)?.seq ?? -1;
    const approved = ev.find((e) => e.type === "action" && e.data.action === "approve");
    expect(approved.actor).toBeTruthy();
    expect(seqOf((e) => e.type === "decision" && e.data.decision === "ask")).toBeLessThan(approved.seq);
    expect(approved.seq).toBeLessThan(seqOf((e) => e.type === "decision" && e.data.by === "person"));
    // Cost as Claude reported it, in the run's last line.
    const finished = ev.find((e) => e.type === "log" && /^claude finished: success/.test(e.data.line));
    expect(Number(/\$([\d.]+)$/.exec(finished.data.line)![1])).toBeGreaterThan(0);
  });

  test("deny with a reason: the command does not run, the agent receives the reason, the session goes on", async () => {
    const t = await newTask("deny");
    await waitStatus(t.id, "needs_approval");
    expect((await action(t.id, { action: "deny", reason: "no marks today" })).status).toBe(200);
    const done = await waitStatus(t.id, "completed");
    expect(done.summary).toBe("deny: finished");
    expect(existsSync(marker("deny.txt"))).toBe(false);
    const results = toolResultsSeen("deny");
    expect(results.some((b: any) => b.is_error && resultText(b).includes("no marks today"))).toBe(true);
    expect((await decisions(t.id)).at(-1)).toMatchObject({ decision: "deny", by: "person", reason: "no marks today" });
  });

  test("a question goes to needs_input; input answers it in the same session", async () => {
    const t = await newTask("question");
    const asking = await waitStatus(t.id, "needs_input");
    expect(asking.needs.message).toContain("[Colour] Which colour should the button be?");
    expect((await action(t.id, { action: "input", input: "Green, actually" })).status).toBe(200);
    await waitStatus(t.id, "completed");
    expect(toolResultsSeen("question").some((b: any) => resultText(b).includes("Green, actually"))).toBe(true);
  });

  test("input on a running task is a follow-up message to the agent", async () => {
    const t = await newTask("follow-up");
    await until(() => run.standin.mainRequests().some((r) => JSON.stringify(r.body.messages).includes("SCENARIO:follow-up")), 60_000, 100);
    expect((await task(t.id)).status).toBe("running");
    expect((await action(t.id, { action: "input", input: "Please also update the changelog." })).status).toBe(200);
    await Bun.sleep(500);
    releases.get("follow-up")!();
    const done = await waitStatus(t.id, "completed");
    expect(done.summary).toBe("follow-up: finished");
    const later = run.standin.mainRequests().filter((r) => JSON.stringify(r.body.messages).includes("SCENARIO:follow-up"));
    expect(later.some((r) => JSON.stringify(r.body.messages).includes("Please also update the changelog."))).toBe(true);
  });

  test("the model API overloaded: the attempt fails with Claude's account of it, once; a retry after the failure completes", async () => {
    const t = await newTask("overloaded");
    const failed = await waitStatus(t.id, "failed");
    // The model as the API was asked for it: Claude Code's session start names it with its
    // context-window marker ("[1m]"), which no answer came to replace.
    const asked = run.standin.mainRequests().find((r) => JSON.stringify(r.body.messages).includes("SCENARIO:overloaded"))!.body.model;
    expect(asked).not.toContain("[");
    expect(failed.usage?.model).toBe(asked);
    const ev = await events(t.id);
    const errors = ev.filter((e) => e.type === "error").map((e) => e.data.message);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("529 Overloaded");
    // The record says why, as its one error does.
    expect(failed.failureReason).toBe(errors[0]);
    // Claude Code words the error as an assistant message of its own too: not Claude's, not on the timeline twice.
    expect(ev.filter((e) => e.type === "message")).toEqual([]);
    expect(ev.find((e) => e.type === "log" && /^claude finished: /.test(e.data.line)).data.line).toMatch(/^claude finished: error, /);
    expect(ev.at(-1)).toMatchObject({ type: "status", data: { from: "running", to: "failed" } });
    expect(ev.map((e) => e.seq)).toEqual(ev.map((_, i) => i + 1));

    overloaded = false;
    expect((await action(t.id, { action: "retry" })).status).toBe(200);
    expect(await waitStatus(t.id, "completed")).toMatchObject({ attempt: 2, summary: "overloaded: finished", usage: { model: asked }, failureReason: null });
  });

  test("a stream cut in the middle of an answer: Claude Code asks again, the task completes, the broken half is not on the timeline", async () => {
    const t = await newTask("cut");
    expect(await waitStatus(t.id, "completed")).toMatchObject({ attempt: 1, summary: "cut: finished" });
    expect(cuts).toBeGreaterThan(1);
    const ev = await events(t.id);
    expect(ev.filter((e) => e.type === "message").map((e) => e.data.text)).toEqual(["cut: finished"]);
    expect(ev.filter((e) => e.type === "error")).toEqual([]);
  });

  test("the project's policy allows shell:touch* without asking: a decision by policy", async () => {
    const t = await newTask("policy", { agent: { allow: ["shell:touch*"] } });
    const done = await waitStatus(t.id, "completed");
    expect(done.summary).toBe("policy: finished");
    expect(existsSync(marker("policy.txt"))).toBe(true);
    expect(await decisions(t.id)).toEqual([{ tool: "Bash", kind: "shell", subject: `touch ${marker("policy.txt")}`, decision: "allow", rule: "shell:touch*", by: "policy" }]);
    const statuses = (await events(t.id)).filter((e) => e.type === "status").map((e) => e.data.to);
    expect(statuses).toContain("completed");
    expect(statuses).not.toContain("needs_approval");
  });

  test("pause stops the real agent and what it started, resume continues it, cancel ends them; a retry resumes the session", async () => {
    const t = await newTask("process", { agent: { allow: ["shell:sleep*"] } });
    const pidFile = marker("sleeper.pid");
    await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", 60_000, 100);
    const sleeper = Number(readFileSync(pidFile, "utf8").trim());
    const agentPid = findAgentPid(t.id);
    expect((await action(t.id, { action: "pause" })).status).toBe(200);
    await until(() => processState(sleeper) === "T" && processState(agentPid) === "T", 10_000, 50);
    expect((await action(t.id, { action: "resume" })).status).toBe(200);
    await until(() => processState(sleeper) !== "T" && processState(agentPid) !== "T", 10_000, 50);
    expect((await action(t.id, { action: "cancel" })).status).toBe(200);
    await until(() => !alive(sleeper) && !alive(agentPid), 15_000, 100);
    await waitStatus(t.id, "cancelled");
    // The shell call was running when the person cancelled: its result can never come (the
    // worker's lease is gone), so the timeline closes it rather than show it running for good.
    const stopped = await events(t.id);
    const call = stopped.find((e) => e.type === "tool" && e.data.status === "started" && e.data.name === "Bash")!;
    const closing = stopped.filter((e) => e.type === "tool" && e.data.id === call.data.id && e.seq > call.seq);
    expect(closing.map((e) => e.data)).toEqual([{ id: call.data.id, name: "Bash", input: call.data.input, output: "stopped: the task was cancelled", status: "interrupted" }]);
    const cancelledAt = stopped.find((e) => e.type === "status" && e.data.to === "cancelled")!;
    expect(closing[0].seq).toBeLessThan(cancelledAt.seq);
    expect(stopped.map((e) => e.seq)).toEqual(stopped.map((_, i) => i + 1));

    // A retry continues: the next attempt resumes the cancelled attempt's Claude session.
    const before = run.standin.mainRequests().length;
    expect((await action(t.id, { action: "retry" })).status).toBe(200);
    const done = await waitStatus(t.id, "completed");
    expect(done).toMatchObject({ attempt: 2, summary: "process: finished" });
    const resumed = run.standin.mainRequests().slice(before).find((r) => JSON.stringify(r.body.messages).includes("SCENARIO:process"))!;
    // The earlier attempt's prompt is in the conversation, then this attempt's: one session. (The
    // killed command's call itself was never answered, so Claude Code leaves it out on resume.)
    const prompts = resumed.body.messages.filter((m: any) => m.role === "user" && JSON.stringify(m.content).includes("SCENARIO:process"));
    expect(prompts).toHaveLength(2);
    expect((await events(t.id)).some((e) => e.type === "log" && /^continuing claude session /.test(e.data.line))).toBe(true);
  });
});
