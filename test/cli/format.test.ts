// Timeline lines for the event shapes the server and the worker's agents write.
import { expect, test } from "bun:test";
import { eventText, table, timelineLine } from "../../src/cli/client/format";

const ev = (type: string, data: unknown, actor?: { type: string; id: string }) => ({ seq: 7, type, at: "2030-01-02T03:04:05.000Z", data, ...(actor ? { actor } : {}) });

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
    [ev("custom", { weird: true }), '{"weird":true}'],
  ];
  for (const [e, text] of table) expect({ type: e.type, text: eventText(e) }).toEqual({ type: e.type, text });
});

test("timeline line: #seq local time type text, continuation lines indented", () => {
  const line = timelineLine(ev("log", { stream: "agent", line: "plan:\n- one\n- two" }));
  expect(line).toMatch(/^#7 \d\d:\d\d:05 log \[agent\] plan:\n {4}- one\n {4}- two$/);
});

test("columns are aligned on the widest cell; the last column is not padded", () => {
  expect(table(["ID", "TITLE"], [["a", "x"], ["abcd", "y"]])).toBe("ID    TITLE\na     x\nabcd  y");
});
