// Timeline lines for the event shapes the server and the worker's agents write.
import { expect, test } from "bun:test";
import { attentionHint, changesText, eventText, printable, table, taskDetails, taskRows, timelineLine } from "../../src/cli/client/format";
import type { Task } from "../../src/cli/client/types";

const ev = (type: string, data: unknown, actor?: { type: string; id: string; name?: string | null }) => ({ seq: 7, type, at: "2030-01-02T03:04:05.000Z", data, ...(actor ? { actor } : {}) });

test("each event type reads as one short phrase", () => {
  const user = { type: "user", id: "usr_1" };
  const table: [ReturnType<typeof ev>, string][] = [
    [ev("status", { from: null, to: "queued" }, user), "queued by user usr_1"],
    [ev("status", { from: "running", to: "failed" }), "running -> failed"],
    [ev("action", { action: "deny", reason: "too risky" }, user), "deny by user usr_1: too risky"],
    [ev("action", { action: "input", input: "blue" }, user), "input by user usr_1 (input: blue)"],
    [ev("log", { stream: "stdout", line: "hello" }), "hello"],
    [ev("log", { stream: "stderr", line: "oops" }), "[stderr] oops"],
    [ev("message", { role: "assistant", text: "Done." }), "Done."],
    [ev("tool", { id: "t1", name: "shell", input: { command: "ls" }, status: "started" }), 'shell started {"command":"ls"}'],
    [ev("tool", { id: "t1", output: "a.txt", status: "completed" }), "tool completed -> a.txt"],
    [ev("artifact", { name: "report.md", size: 12 }), "report.md (12 bytes)"],
    [ev("error", { message: "attempt 1 was lost" }), "attempt 1 was lost"],
    [ev("plan", { applied: ["tsk_a", "tsk_b"] }, user), "applied by user usr_1: 2 tasks created (tsk_a, tsk_b)"],
    [ev("plan", { tasks: [] }), '{"tasks":[]}'],
    // What a person needs to act on: the question, a budget answer's new allowance, a policy's decisions.
    [ev("status", { from: "running", to: "needs_input", needs: { kind: "input", message: "What colour?" } }), "running -> needs_input: What colour?"],
    [ev("action", { action: "approve", budget: { allowanceUsd: 0.06 } }, user), "approve by user usr_1 (allowance now $0.06)"],
    [ev("action", { action: "deny", budget: { cancelled: true } }, user), "deny by user usr_1 (the task stops)"],
    [
      ev("decision", { kind: "budget", decision: "ask", by: "project budget", rule: "policy.budget.perTaskUsd", costUsd: 2.141, allowanceUsd: 2 }),
      "ask: over budget, $2.14 of $2.00 (policy.budget.perTaskUsd)",
    ],
    [ev("decision", { tool: "Bash", kind: "shell", subject: "git push origin", decision: "deny", rule: "shell:git push*", by: "project policy" }), "deny Bash git push origin (rule shell:git push*)"],
    [ev("decision", { tool: "Read", kind: "read", subject: "src/a.ts", decision: "allow", rule: null, by: "default" }), "allow Read src/a.ts (built-in rules)"],
    [ev("edit", { path: "src/a.ts", additions: 3, deletions: 1 }), "src/a.ts +3 -1"],
    [ev("custom", { weird: true }), '{"weird":true}'],
  ];
  for (const [e, text] of table) expect({ type: e.type, text: eventText(e) }).toEqual({ type: e.type, text });
});

test("who acted reads as a name: people and tokens by name, workers and integrations by kind and name, the id when unnamed", () => {
  const named = (type: string, name: string | null) => ({ type, id: `${type.slice(0, 3)}_1`, name });
  expect(eventText(ev("status", { from: "queued", to: "running" }, named("worker", "build-1")))).toBe("queued -> running by worker build-1");
  expect(eventText(ev("status", { from: null, to: "queued" }, named("integration", "Nightly CI")))).toBe("queued by integration Nightly CI");
  expect(eventText(ev("action", { action: "pause" }, named("user", "ada@example.com")))).toBe("pause by ada@example.com");
  expect(eventText(ev("action", { action: "pause" }, named("token", "Ada (token ci)")))).toBe("pause by Ada (token ci)");
  expect(eventText(ev("action", { action: "pause" }, named("token", null)))).toBe("pause by token tok_1");
  // A worker's final status carries the attempt's summary.
  expect(eventText(ev("status", { from: "running", to: "completed", summary: "all done" }, named("worker", "build-1")))).toBe("running -> completed by worker build-1: all done");
});

test("timeline line: #seq local time type text, continuation lines indented", () => {
  const line = timelineLine(ev("log", { stream: "agent", line: "plan:\n- one\n- two" }));
  expect(line).toMatch(/^#7 \d\d:\d\d:05 log \[agent\] plan:\n {4}- one\n {4}- two$/);
});

test("columns are aligned on the widest cell; the last column is not padded", () => {
  expect(table(["ID", "TITLE"], [["a", "x"], ["abcd", "y"]])).toBe("ID    TITLE\na     x\nabcd  y");
});

test("control characters from the server never reach the terminal raw (escape sequences are shown as \\xNN)", () => {
  const evil = "Fix\x1b]0;owned\x07 the \x1b[2Jcart\rX\x9b";
  expect(printable(evil)).toBe("Fix\\x1b]0;owned\\x07 the \\x1b[2Jcart\\x0dX\\x9b");
  expect(printable("tabs\tand\nnewlines stay")).toBe("tabs\tand\nnewlines stay");
  const task = {
    id: "tsk_1", orgId: "org_1", projectId: "prj_1", title: evil, prompt: `line\n${evil}`, priority: "HIGH", kind: "task", review: null,
    status: "needs_input", attempt: 1, workerId: null, parentId: null, createdBy: { type: "user", id: "usr_1" }, summary: evil,
    needs: { kind: "input", message: evil }, plan: null, artifacts: [], createdAt: "2030-01-02T03:04:05.000Z",
    updatedAt: "2030-01-02T03:04:05.000Z", startedAt: null, finishedAt: null,
  } as unknown as Task;
  const outputs = [
    timelineLine(ev("log", { line: evil })),
    timelineLine(ev("message", { text: evil })),
    taskRows([task]),
    taskDetails(task),
    attentionHint(task),
  ];
  for (const out of outputs) expect(out).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  expect(taskDetails(task)).toContain("Fix\\x1b]0;owned\\x07 the");
});

test("ao task show: a task's changes in one line (files, lines, branch, pushed), or that it changed nothing", () => {
  const task = {
    id: "tsk_1", orgId: "org_1", projectId: "prj_1", title: "t", prompt: "p", priority: "HIGH", kind: "task", review: null,
    status: "completed", attempt: 1, workerId: null, parentId: null, summary: null, needs: null, plan: null, artifacts: [],
    createdAt: "2030-01-02T03:04:05.000Z", updatedAt: "2030-01-02T03:04:05.000Z", startedAt: null, finishedAt: null,
    changes: { files: 3, additions: 10, deletions: 2, branch: "ao/tsk_1", commit: "0123456789abcdef0123456789abcdef01234567", base: null, pushed: true },
  } as unknown as Task;
  expect(taskDetails(task)).toContain("changes   3 files, +10 -2 on ao/tsk_1 at 0123456789ab (pushed)");
  expect(changesText({ files: 1, additions: 1, deletions: 0, branch: "ao/tsk_1", commit: null, base: null, pushed: false })).toBe("1 file, +1 -0 on ao/tsk_1 (not pushed)");
  expect(changesText({ files: 0, additions: 0, deletions: 0, branch: null, commit: null, base: null, pushed: false })).toBe("none (the task changed no file)");
  expect(taskDetails({ ...task, changes: null })).not.toContain("changes");
});

test("ao task show: usage with tokens but no cost yet says the cost is not reported (Claude Code reports it at the end), not $0.00; the cost as the task page writes it", () => {
  const base = {
    id: "tsk_1", orgId: "org_1", projectId: "prj_1", title: "T", prompt: "p", priority: "MEDIUM", kind: "task", review: null, status: "running", attempt: 1,
    workerId: null, parentId: null, createdBy: { type: "user", id: "usr_1" }, summary: null, needs: null, plan: null, artifacts: [],
    createdAt: "2030-01-02T03:04:05.000Z", updatedAt: "2030-01-02T03:04:05.000Z", startedAt: null, finishedAt: null,
  };
  const usage = (costUsd: number) => ({ inputTokens: 1200, outputTokens: 300, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd, model: "claude-sonnet" });
  expect(taskDetails({ ...base, usage: usage(0) } as unknown as Task)).toMatch(/^usage +cost not reported yet · 1,200 in, 300 out, 0 cache read, 0 cache write · claude-sonnet$/m);
  expect(taskDetails({ ...base, usage: usage(0.42) } as unknown as Task)).toMatch(/^usage +\$0\.4200 · 1,200 in/m);
  // As the task page: "yet" while it runs, not once it has ended; a hundredth of a cent under a dollar.
  expect(taskDetails({ ...base, status: "completed", finishedAt: "2030-01-02T03:05:05.000Z", usage: usage(0) } as unknown as Task)).toMatch(/^usage +cost not reported · /m);
  expect(taskDetails({ ...base, usage: usage(0.0421) } as unknown as Task)).toMatch(/^usage +\$0\.0421 · /m);
});
