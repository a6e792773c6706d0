// Codex's reports in ao's terms, on the shapes `codex app-server` 0.169 sends (recorded from the
// real CLI in test/agents/codex.test.ts runs): command lines, file changes, token counts and cost.
import { describe, expect, test } from "bun:test";
import { codexUsage, mapCodexItem, minusTokens, unwrapShell } from "../../src/worker/agents/codex-items";

describe("unwrapShell", () => {
  test.each([
    ["/bin/bash -lc 'touch approved.txt'", "touch approved.txt"],
    ["bash -lc 'git push origin main'", "git push origin main"],
    ["/bin/zsh -c 'echo '\\''quoted'\\'' && ls'", "echo 'quoted' && ls"],
    ["/bin/bash -lc 'printf \"a\\nb\"'", 'printf "a\\nb"'],
    // As Codex 0.169 quoted a command holding both kinds of quotes (recorded).
    [`/bin/bash -lc "echo '{\\"tasks\\":[]}' > \\""'$AO_ARTIFACTS_DIR/plan.json"'`, `echo '{"tasks":[]}' > "$AO_ARTIFACTS_DIR/plan.json"`],
    ["touch plain.txt", "touch plain.txt"],
    ["/bin/bash -lc 'unterminated", "/bin/bash -lc 'unterminated"],
  ])("%s -> %s", (wrapped, command) => expect(unwrapShell(wrapped)).toBe(command));
});

describe("codexUsage", () => {
  test("OpenAI's input includes cached and cache-written tokens; ao's input counts only the rest", () => {
    expect(codexUsage({ inputTokens: 10_000, cachedInputTokens: 6_000, cacheWriteInputTokens: 1_000, outputTokens: 500 }, "gpt-5.5")).toEqual({
      inputTokens: 3_000,
      cacheReadTokens: 6_000,
      cacheWriteTokens: 1_000,
      outputTokens: 500,
      costUsd: 0, // not in the price table: the model's name is kept, no guessed cost
      model: "gpt-5.5",
    });
  });

  test("a listed model is priced from OpenAI's list prices, also under a dated snapshot name", () => {
    const t = { inputTokens: 1_000_000, cachedInputTokens: 400_000, outputTokens: 100_000 };
    // 600k input at $1.25/M + 400k cached at $0.125/M + 100k output at $10/M
    expect(codexUsage(t, "gpt-5.1-codex").costUsd).toBe(0.75 + 0.05 + 1);
    expect(codexUsage(t, "gpt-5-2025-08-07").costUsd).toBe(1.8);
    expect(codexUsage(t, "gpt-5-mini").costUsd).toBeCloseTo(0.15 + 0.01 + 0.2, 6);
    expect(codexUsage(t, null)).toMatchObject({ costUsd: 0, model: null });
  });

  test("this attempt's share of a resumed thread's total", () => {
    const total = { inputTokens: 7000, cachedInputTokens: 3000, cacheWriteInputTokens: 0, outputTokens: 110 };
    const before = { inputTokens: 3000, cachedInputTokens: 0, cacheWriteInputTokens: 0, outputTokens: 100 };
    expect(minusTokens(total, before)).toEqual({ inputTokens: 4000, cachedInputTokens: 3000, cacheWriteInputTokens: 0, outputTokens: 10 });
  });
});

describe("mapCodexItem", () => {
  const workdir = "/runs/tsk_1-a1/work";
  function map(phase: "started" | "completed", item: Record<string, unknown>) {
    const events: { type: string; data: any }[] = [];
    const summaries: string[] = [];
    mapCodexItem(phase, item, workdir, { emit: (type, data) => void events.push({ type, data }), summary: (t) => void summaries.push(t) });
    return { events, summaries };
  }

  test("an agent message is a message and the summary so far; an empty one is nothing", () => {
    expect(map("completed", { type: "agentMessage", id: "msg_1", text: "Fixed sum()." })).toEqual({
      events: [{ type: "message", data: { role: "assistant", text: "Fixed sum()." } }],
      summaries: ["Fixed sum()."],
    });
    expect(map("started", { type: "agentMessage", id: "msg_1", text: "" }).events).toEqual([]);
  });

  test("a command: started, then its short output and exit code; ANSI colour kept", () => {
    const item = { type: "commandExecution", id: "call_1", command: "/bin/bash -lc 'bun test'", cwd: workdir, status: "inProgress", aggregatedOutput: null, exitCode: null };
    expect(map("started", item).events).toEqual([{ type: "tool", data: { id: "call_1", name: "shell", input: { command: "bun test", cwd: workdir }, status: "started" } }]);
    const done = map("completed", { ...item, status: "failed", aggregatedOutput: "\u001b[31m1 fail\u001b[0m\n" + "x".repeat(5000), exitCode: 1 }).events[0].data;
    expect(done).toMatchObject({ id: "call_1", name: "shell", exitCode: 1, status: "failed" });
    expect(done.output.startsWith("\u001b[31m1 fail\u001b[0m")).toBe(true);
    expect(done.output).toContain("more characters");
  });

  test("a file change is an edit: paths relative to the checkout, kinds, a short diff", () => {
    const { events } = map("completed", {
      type: "fileChange",
      id: "call_2",
      status: "completed",
      changes: [
        { path: `${workdir}/src/sum.js`, kind: { type: "update", move_path: null }, diff: "@@ -1 +1 @@\n-a - b\n+a + b\n" },
        { path: `${workdir}/notes.md`, kind: { type: "add" }, diff: "hello\n" },
        { path: "/etc/hosts", kind: { type: "update", move_path: "/etc/hosts.bak" }, diff: "" },
      ],
    });
    expect(events).toEqual([
      {
        type: "edit",
        data: {
          id: "call_2",
          files: [
            { path: "src/sum.js", kind: "update" },
            { path: "notes.md", kind: "add" },
            { path: "/etc/hosts", kind: "update", movePath: "/etc/hosts.bak" },
          ],
          diff: "--- src/sum.js (update)\n@@ -1 +1 @@\n-a - b\n+a + b\n\n--- notes.md (add)\nhello\n\n--- /etc/hosts (update)\n",
          status: "completed",
        },
      },
    ]);
  });

  test("reasoning and plans are logs; unknown items are nothing", () => {
    expect(map("completed", { type: "reasoning", id: "r", summary: ["**Reading sum.js**"], content: [] }).events).toEqual([{ type: "log", data: { stream: "reasoning", line: "**Reading sum.js**" } }]);
    expect(map("completed", { type: "plan", id: "p", text: "1. fix\n2. test" }).events).toEqual([{ type: "log", data: { stream: "agent", line: "plan:\n1. fix\n2. test" } }]);
    expect(map("completed", { type: "imageView", id: "i", path: "/x.png" }).events).toEqual([]);
  });
});
