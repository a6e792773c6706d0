// The agent adapters' parsers against recorded output in the tools' documented formats
// (fixtures/: Claude Code's stream-json messages), and the
// exec adapter's directives.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { mapClaudeEvent } from "../../src/worker/agents/claude";
import { claudeMapper } from "../../src/worker/agents/claude-events";
import { handleExecLine, programOf } from "../../src/worker/agents/exec";
import { feedJsonLine } from "../../src/worker/agents/jsonl";
import { artifactNameOf, artifactNamesOf } from "../../src/worker/attempt";
import { normalizeRepoUrl, repoNameOf } from "../../src/protocol/repo-url";
import { versionOf } from "../../src/worker/inventory";

function replay(fixture: string, map: Parameters<typeof feedJsonLine>[2]) {
  const events: { type: string; data: any }[] = [];
  const summaries: string[] = [];
  const out = { emit: (type: string, data: unknown) => void events.push({ type, data }), summary: (t: string) => void summaries.push(t) };
  for (const line of readFileSync(join(import.meta.dir, "fixtures", fixture), "utf8").split("\n")) feedJsonLine(line, out as any, map);
  return { events, summaries };
}

describe("claude stream-json", () => {
  test("a successful run: messages, tool calls with results, the result as summary", () => {
    const { events, summaries } = replay("claude-stream.jsonl", claudeMapper("/tmp/ao/runs/tsk_1-a1/work"));
    expect(events.map((e) => e.type)).toEqual(["log", "log", "message", "tool", "tool", "tool", "tool", "edit", "message", "log"]);
    expect(events[0].data.line).toBe("claude session 8a2f6f0e-6a43-4d0b-9d3c-2b7f7c6c1e11 started (model claude-sonnet-4-5-20250929)");
    expect(events[1].data).toEqual({ stream: "reasoning", line: "The failing test is probably in sum." });
    expect(events[2].data).toEqual({ role: "assistant", text: "I'll run the tests first." });
    expect(events[3].data).toEqual({ id: "toolu_01A9", name: "Bash", input: { command: "npm test", description: "Run the test suite" }, status: "started" });
    expect(events[4].data).toMatchObject({ id: "toolu_01A9", name: "Bash", status: "failed" });
    expect(events[4].data.output).toContain("1 failing");
    expect(events[5].data).toMatchObject({ id: "toolu_01B3", name: "Edit", status: "started" });
    expect(events[6].data).toEqual({ id: "toolu_01B3", name: "Edit", output: "The file /tmp/ao/runs/tsk_1-a1/work/src/sum.js has been updated.", status: "completed" });
    // The edit as the timeline shows it: the file and what changed in it.
    const path = "/tmp/ao/runs/tsk_1-a1/work/src/sum.js";
    expect(events[7].data).toEqual({ id: "toolu_01B3", path, tool: "Edit", diff: `--- ${path}\n+++ ${path}\n@@\n-return a - b;\n+return a + b;` });
    expect(events[9].data.line).toBe("claude finished: success, 5 turns, 14231 ms, $0.0412");
    expect(summaries).toEqual(["Fixed: sum() subtracted instead of adding. The test suite passes now."]);
  });

  test("the finished line's cost reads as money, not as a float's tail", () => {
    const events: { type: string; data: any }[] = [];
    const out = { emit: (type: string, data: unknown) => void events.push({ type, data }), summary: () => {} };
    const result = { type: "result", subtype: "success", num_turns: 2, duration_ms: 900, result: "ok", total_cost_usd: 0.15125000000000002 };
    feedJsonLine(JSON.stringify(result), out as any, claudeMapper("/tmp/ao/runs/tsk_1-a1/work"));
    expect(events.find((e) => e.type === "log")!.data.line).toBe("claude finished: success, 2 turns, 900 ms, $0.15125");
  });

  test("an error result is an error event, not a summary", () => {
    const { events, summaries } = replay("claude-error.jsonl", claudeMapper("/tmp/ao/runs/tsk_1-a1/work"));
    expect(summaries).toEqual([]);
    expect(events.find((e) => e.type === "error")?.data).toEqual({ message: "claude ended with error_max_turns" });
  });
});

describe("JSON lines", () => {
  test("lines that are not JSON objects are kept as logs; blank lines are dropped", () => {
    const events: any[] = [];
    const out = { emit: (type: string, data: unknown) => void events.push({ type, data }), summary() {} };
    for (const line of ["Reading prompt from stdin...", "", "[1,2]", "{broken"]) feedJsonLine(line, out, mapClaudeEvent);
    expect(events).toEqual([
      { type: "log", data: { stream: "stdout", line: "Reading prompt from stdin..." } },
      { type: "log", data: { stream: "stdout", line: "[1,2]" } },
      { type: "log", data: { stream: "stdout", line: "{broken" } },
    ]);
  });
});

describe("exec directives", () => {
  test.each([
    ["plain line", "hello", [["log", { stream: "stdout", line: "hello" }]]],
    ["summary", "::ao::summary all good", [["summary", "all good"]]],
    ["needs-input", "::ao::needs-input Which branch?", [["ask", "input", "Which branch?"]]],
    ["needs-approval", "::ao::needs-approval Merge it?", [["ask", "approval", "Merge it?"]]],
    ["needs-input without text", "::ao::needs-input", [["ask", "input", "input needed"]]],
    ["unknown directive is a log line", "::ao::explode now", [["log", { stream: "stdout", line: "::ao::explode now" }]]],
    ["not at line start", " ::ao::summary x", [["log", { stream: "stdout", line: " ::ao::summary x" }]]],
    [
      "usage (cumulative; absent fields 0)",
      '::ao::usage {"inputTokens": 1200, "outputTokens": 30.7, "costUsd": 0.015, "model": "m-1"}',
      [["usage", { inputTokens: 1200, outputTokens: 30, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.015, model: "m-1" }]],
    ],
    [
      "usage with nonsense values reads them as 0, and says so",
      '::ao::usage {"inputTokens": -5, "costUsd": "lots", "model": 7}',
      [
        ["error", '::ao::usage: inputTokens -5, costUsd "lots" read as 0 (not a number of at least 0)'],
        ["usage", { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, model: null }],
      ],
    ],
    ["usage that is not an object is an error event", "::ao::usage 12", [["error", expect.stringContaining("::ao::usage needs a JSON object")]]],
  ])("%s", (_name, line, expected) => {
    const calls: unknown[][] = [];
    handleExecLine(
      {
        emit: (type, data) => void calls.push([type, type === "error" ? (data as { message: string }).message : data]),
        summary: (t) => void calls.push(["summary", t]),
        ask: (k, m) => void calls.push(["ask", k, m]),
        usage: (u) => void calls.push(["usage", u]),
      },
      line,
    );
    expect(calls).toEqual(expected);
  });
});

describe("small helpers", () => {
  test.each([
    ["git@github.com:Org/Repo.git", "github.com/org/repo"],
    ["https://github.com/org/repo", "github.com/org/repo"],
    ["https://user@GitHub.com/org/repo.git/", "github.com/org/repo"],
    ["ssh://git@github.com:22/org/repo.git", "github.com/org/repo"],
    ["file:///srv/git/repo.git", "file:/srv/git/repo"],
    ["/srv/git/repo.git", "file:/srv/git/repo"],
  ])("normalizeRepoUrl(%s)", (url, expected) => expect(normalizeRepoUrl(url)).toBe(expected));

  test("names and versions", () => {
    expect(repoNameOf("git@github.com:org/my-repo.git")).toBe("my-repo");
    expect(artifactNameOf("shots/a b/../x.png")).toBe("shots_a_b_.._x.png");
    expect(artifactNameOf(".env")).toBe("env");
    expect([...artifactNamesOf(["a b.txt", "a_b.txt", "a/b.txt", "no tes", "no_tes", "x.tar.gz", "x_tar.gz"]).values()]).toEqual([
      "a_b.txt",
      "a_b-2.txt",
      "a_b-3.txt",
      "no_tes",
      "no_tes-2",
      "x.tar.gz",
      "x_tar.gz",
    ]);
    expect(versionOf("git version 2.39.5\n")).toBe("2.39.5");
    expect(versionOf("Python 3.12.1")).toBe("3.12.1");
    expect(versionOf("1.4.5")).toBe("1.4.5");
  });

  test.each([
    ["sh /path/to/agent.sh", "sh"],
    ["./scripts/run-agent --fast", "run-agent"],
    ["API_KEY=secret OTHER='a b' /opt/bin/my-agent --token x", "my-agent"],
    [`"/opt/My Tools/agent" --x`, "agent"],
    ["  python3\t-m agent", "python3"],
    [`FOO="x \\"y\\" z" node main.js`, "node"],
  ])("the program of exec's command line %s is %s", (command, program) => expect(programOf(command)).toBe(program));
});
