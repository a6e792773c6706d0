// The Claude adapter's translations, table by table: tool calls to the policy's terms, the
// messages a person reads, questions and their answers, edits, usage, agent arguments.
import { describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readdirSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { extraArgsOf } from "../../src/worker/agents/claude";
import { ClaudeUsage } from "../../src/worker/agents/claude-events";
import { previousSession, projectFolderOf } from "../../src/worker/agents/claude-session";
import { answeredInput, approvalMessage, editOf, questionText, toolCallOf } from "../../src/worker/agents/claude-tools";
import { decideTool } from "../../src/worker/policy";

const W = "/runs/tsk_1-a1/work";

describe("tool calls in the policy's terms", () => {
  const cases: [string, Record<string, unknown>, object][] = [
    ["Read", { file_path: "src/a.ts" }, { kind: "read", name: "Read", subject: `${W}/src/a.ts`, path: `${W}/src/a.ts` }],
    ["LS", { path: "/etc" }, { kind: "read", name: "LS", subject: "/etc", path: "/etc" }],
    ["Glob", { pattern: "**/*.ts" }, { kind: "search", name: "Glob", subject: W, path: W }],
    ["Grep", { pattern: "sum", path: "src" }, { kind: "search", name: "Grep", subject: `${W}/src`, path: `${W}/src` }],
    ["Edit", { file_path: `${W}/a.ts`, old_string: "a", new_string: "b" }, { kind: "edit", name: "Edit", subject: `${W}/a.ts`, path: `${W}/a.ts` }],
    ["Write", { file_path: "/etc/passwd", content: "x" }, { kind: "edit", name: "Write", subject: "/etc/passwd", path: "/etc/passwd" }],
    ["NotebookEdit", { notebook_path: "n.ipynb", new_source: "x" }, { kind: "edit", name: "NotebookEdit", subject: `${W}/n.ipynb`, path: `${W}/n.ipynb` }],
    ["Bash", { command: "git push origin main" }, { kind: "shell", name: "Bash", subject: "git push origin main" }],
    ["WebFetch", { url: "https://example.com", prompt: "read" }, { kind: "network", name: "WebFetch", subject: "https://example.com" }],
    ["WebSearch", { query: "bun sqlite" }, { kind: "network", name: "WebSearch", subject: "bun sqlite" }],
    ["mcp__db__query", { sql: "select 1" }, { kind: "other", name: "mcp__db__query" }],
  ];
  for (const [name, input, call] of cases) test(name, () => expect(toolCallOf(name, input, W)).toEqual(call as any));

  test("the built-in rules on them: reads and in-checkout edits run, the rest asks; rules by tool name", () => {
    const d = (name: string, input: Record<string, unknown>, policy?: any) => decideTool(policy, W, toolCallOf(name, input, W)).decision;
    expect(d("Read", { file_path: "/etc/hosts" })).toBe("allow");
    expect(d("Edit", { file_path: "a.ts" })).toBe("allow");
    expect(d("Write", { file_path: "/etc/passwd" })).toBe("ask");
    expect(d("Write", { file_path: "../escape.txt" })).toBe("ask");
    expect(d("Bash", { command: "ls" })).toBe("ask");
    expect(d("WebFetch", { url: "https://x" })).toBe("ask");
    expect(d("Bash", { command: "git push" }, { allow: ["shell:*"], ask: ["shell:git push*"] })).toBe("ask");
    expect(d("WebFetch", { url: "https://x" }, { deny: ["tool:WebFetch"] })).toBe("deny");
  });
});

describe("what the person reads", () => {
  test("an approval names the tool, the command, the agent's reason and the rule", () => {
    const call = toolCallOf("Bash", { command: "npm publish", description: "Publish the package" }, W);
    expect(approvalMessage(call, { command: "npm publish", description: "Publish the package" }, { rule: "shell:npm publish*", by: "project policy" })).toBe(
      'Claude Code wants to run a shell command (Bash):\n  npm publish\nIts reason: Publish the package\nAsked because of the project policy rule "shell:npm publish*".',
    );
    const other = toolCallOf("mcp__db__query", { sql: "drop table x" }, W);
    expect(approvalMessage(other, { sql: "drop table x" }, { rule: null, by: "built-in rules" })).toBe(
      'Claude Code wants to use the tool mcp__db__query:\n  {"sql":"drop table x"}\nAsked by the built-in rules.',
    );
  });

  test("a question with its choices, answered for every question", () => {
    const input = {
      questions: [
        { question: "Which database?", header: "DB", options: [{ label: "SQLite", description: "embedded" }, { label: "Postgres", description: "server" }], multiSelect: false },
        { question: "Which features?", header: "Features", options: [{ label: "A", description: "" }, { label: "B", description: "" }], multiSelect: true },
      ],
    };
    const text = questionText(input);
    expect(text).toContain("[DB] Which database?\n  - SQLite: embedded\n  - Postgres: server");
    expect(text).toContain("[Features] Which features? (several may be chosen)\n  - A\n  - B");
    expect(answeredInput(input, "SQLite, and A")).toEqual({ ...input, answers: { "Which database?": "SQLite, and A", "Which features?": "SQLite, and A" } });
    expect(questionText({})).toBe("Claude Code asks for your input.");
  });

  test("edits: a short diff per tool; other tools have none", () => {
    expect(editOf("Edit", { file_path: "a.ts", old_string: "x\ny", new_string: "z" }, W)).toEqual({ path: `${W}/a.ts`, tool: "Edit", diff: `--- ${W}/a.ts\n+++ ${W}/a.ts\n@@\n-x\n-y\n+z` });
    expect(editOf("Write", { file_path: "/tmp/n.txt", content: "hello" }, W)!.diff).toBe("--- /tmp/n.txt\n+++ /tmp/n.txt\n@@\n+hello");
    expect(editOf("MultiEdit", { file_path: "b.ts", edits: [{ old_string: "1", new_string: "2" }, { old_string: "3", new_string: "4" }] }, W)!.diff).toBe(`--- ${W}/b.ts\n+++ ${W}/b.ts\n@@\n-1\n+2\n@@\n-3\n+4`);
    expect(editOf("Write", { file_path: "big.txt", content: "x".repeat(5000) }, W)!.diff.length).toBeLessThan(1700);
    expect(editOf("Bash", { command: "ls" }, W)).toBeNull();
  });
});

describe("usage from Claude's reports", () => {
  test("streamed answers counted once per message id, then the result's totals over every model; never decreasing", () => {
    const u = new ClaudeUsage();
    u.add({ type: "system", subtype: "init", model: "claude-sonnet-4-5" });
    const msg = (id: string, usage: object) => ({ type: "assistant", message: { id, model: "claude-sonnet-4-5", usage } });
    expect(u.add(msg("m1", { input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 100, cache_creation_input_tokens: 5 }))).toBe(true);
    expect(u.add(msg("m1", { input_tokens: 10, output_tokens: 1, cache_read_input_tokens: 100, cache_creation_input_tokens: 5 }))).toBe(false);
    u.add(msg("m1", { input_tokens: 10, output_tokens: 40, cache_read_input_tokens: 100, cache_creation_input_tokens: 5 }));
    u.add(msg("m2", { input_tokens: 20, output_tokens: 7, cache_read_input_tokens: 0, cache_creation_input_tokens: 0 }));
    expect(u.total()).toEqual({ inputTokens: 30, outputTokens: 47, cacheReadTokens: 100, cacheWriteTokens: 5, costUsd: 0, model: "claude-sonnet-4-5" });
    u.add({
      type: "result",
      total_cost_usd: 0.0123,
      usage: { input_tokens: 30, output_tokens: 47, cache_read_input_tokens: 100, cache_creation_input_tokens: 5 },
      modelUsage: {
        "claude-sonnet-4-5": { inputTokens: 30, outputTokens: 47, cacheReadInputTokens: 100, cacheCreationInputTokens: 5, costUSD: 0.012 },
        "claude-haiku-4-5": { inputTokens: 12, outputTokens: 3, cacheReadInputTokens: 0, cacheCreationInputTokens: 0, costUSD: 0.0003 },
      },
    });
    expect(u.total()).toEqual({ inputTokens: 42, outputTokens: 50, cacheReadTokens: 100, cacheWriteTokens: 5, costUsd: 0.0123, model: "claude-sonnet-4-5" });
  });
});

describe("agent arguments and sessions", () => {
  test("--agent-args become Claude Code flags; ao's own protocol and permission flags are left out", () => {
    expect(extraArgsOf(["--model", "opus", "--add-dir=/data", "--verbose", "--permission-mode", "bypassPermissions", "--dangerously-skip-permissions", "--output-format", "text"])).toEqual({
      model: "opus",
      "add-dir": "/data",
      verbose: null,
    });
  });

  test("a continuing attempt finds the newest session of an earlier attempt of the same task, not another task's", () => {
    const home = mkdtempSync(join(tmpdir(), "ao-claude-session-"));
    const projects = join(home, ".claude", "projects");
    const put = (dir: string, id: string, age: number) => {
      mkdirSync(join(projects, projectFolderOf(dir)), { recursive: true });
      const f = join(projects, projectFolderOf(dir), `${id}.jsonl`);
      writeFileSync(f, "{}\n");
      utimesSync(f, new Date(Date.now() - age * 1000), new Date(Date.now() - age * 1000));
    };
    put("/r/runs/tsk_1-a1/work", "old-session", 100);
    put("/r/runs/tsk_1-a2/work", "newer-session", 10);
    put("/r/runs/tsk_12-a3/work", "other-task", 1);
    expect(previousSession("/r/runs/tsk_1-a3/work", { HOME: home })).toBe("newer-session");
    expect(readdirSync(join(projects, projectFolderOf("/r/runs/tsk_1-a3/work")))).toEqual(["newer-session.jsonl"]);
    expect(previousSession("/r/runs/tsk_9-a2/work", { HOME: home })).toBeNull();
    expect(previousSession("/r/runs/tsk_9-a2/work", { HOME: join(home, "none") })).toBeNull();
  });
});
