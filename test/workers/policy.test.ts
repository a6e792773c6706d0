// The agent policy as the worker applies it: project rules in the order deny, ask, allow; the
// project's default; the built-in rules for a project without a policy.
import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AgentPolicy } from "../../src/protocol/policy";
import { agentPolicyOf, decideTool, UNREADABLE_REASON, type ToolCall, type ToolDecision } from "../../src/worker/policy";

const workdir = "/runs/t1/work";
const shell = (command: string): ToolCall => ({ kind: "shell", name: "Bash", subject: command });
const edit = (path: string): ToolCall => ({ kind: "edit", name: "Edit", subject: path, path });

describe("built-in rules (no policy)", () => {
  const cases: [string, ToolCall, "allow" | "ask"][] = [
    ["reading a file", { kind: "read", name: "Read", subject: "/etc/passwd", path: "/etc/passwd" }, "allow"],
    ["searching", { kind: "search", name: "Grep", subject: "TODO" }, "allow"],
    ["editing inside the checkout", edit(`${workdir}/src/a.ts`), "allow"],
    ["editing a relative path inside", edit("src/a.ts"), "allow"],
    ["editing outside the checkout", edit("/runs/t1/other/a.ts"), "ask"],
    ["editing through ..", edit(`${workdir}/../escape.ts`), "ask"],
    ["an edit without a path", { kind: "edit", name: "Edit" }, "ask"],
    ["a shell command", shell("ls"), "ask"],
    ["the network", { kind: "network", name: "WebFetch", subject: "https://example.com" }, "ask"],
    ["anything else", { kind: "other", name: "mcp__thing" }, "ask"],
  ];
  for (const [what, call, expected] of cases) {
    test(what, () => expect(decideTool(undefined, workdir, call)).toEqual({ decision: expected, rule: null, by: "default" }));
  }
});

describe("project rules", () => {
  const policy: AgentPolicy = {
    allow: ["shell:bun test*", "shell:git status", "tool:WebSearch"],
    ask: ["shell:git push*", "edit:*/secrets/*"],
    deny: ["shell:rm -rf /*", "network:*internal*"],
  };
  test("an allowed command runs without asking", () => {
    expect(decideTool(policy, workdir, shell("bun test test/a.test.ts"))).toEqual({ decision: "allow", rule: "shell:bun test*", by: "policy" });
  });
  test("a pattern without * matches the whole command only", () => {
    expect(decideTool(policy, workdir, shell("git status --short")).decision).toBe("ask");
    expect(decideTool(policy, workdir, shell("  git status ")).decision).toBe("allow");
  });
  test("deny wins over allow, ask wins over allow", () => {
    const both: AgentPolicy = { allow: ["shell"], ask: ["shell:git push*"], deny: ["shell:curl*"] };
    expect(decideTool(both, workdir, shell("curl http://x")).decision).toBe("deny");
    expect(decideTool(both, workdir, shell("git push origin main")).decision).toBe("ask");
    expect(decideTool(both, workdir, shell("make")).decision).toBe("allow");
  });
  test("an ask rule overrides a built-in allow", () => {
    expect(decideTool(policy, workdir, edit(`${workdir}/config/secrets/key.pem`))).toEqual({ decision: "ask", rule: "edit:*/secrets/*", by: "policy" });
  });
  test("tool:NAME matches the agent's own tool name", () => {
    expect(decideTool(policy, workdir, { kind: "network", name: "WebSearch", subject: "bun docs" }).decision).toBe("allow");
  });
  test("deny by pattern", () => {
    expect(decideTool(policy, workdir, { kind: "network", name: "WebFetch", subject: "http://internal.corp/x" }).decision).toBe("deny");
  });
  test("regex characters in a pattern are literal", () => {
    const p: AgentPolicy = { allow: ["shell:echo (a|b)"] };
    expect(decideTool(p, workdir, shell("echo (a|b)")).decision).toBe("allow");
    expect(decideTool(p, workdir, shell("echo a")).decision).toBe("ask");
  });
  test("calls no rule matches fall to the built-in rules, or to the project's default", () => {
    expect(decideTool(policy, workdir, shell("make")).by).toBe("default");
    expect(decideTool({ ...policy, default: "deny" }, workdir, { kind: "read", name: "Read", path: "/x" })).toEqual({ decision: "deny", rule: null, by: "policy" });
    expect(decideTool({ default: "allow" }, workdir, shell("make")).decision).toBe("allow");
  });
});

describe("the policy's shape", () => {
  test("valid policies pass the schema", () => {
    expect(Value.Check(AgentPolicy, { allow: ["read", "shell:bun test*", "tool:Web*"], default: "ask" })).toBe(true);
    expect(Value.Check(AgentPolicy, {})).toBe(true);
  });
  test("unknown kinds, keys and defaults are refused", () => {
    expect(Value.Check(AgentPolicy, { allow: ["sudo"] })).toBe(false);
    expect(Value.Check(AgentPolicy, { allow: [""] })).toBe(false);
    expect(Value.Check(AgentPolicy, { allowed: ["read"] })).toBe(false);
    expect(Value.Check(AgentPolicy, { default: "maybe" })).toBe(false);
  });
  test("agentPolicyOf takes project.policy.agent or nothing", () => {
    expect(agentPolicyOf({ agent: { allow: ["read"] } })).toEqual({ allow: ["read"] });
    expect(agentPolicyOf({})).toBeUndefined();
    expect(agentPolicyOf({ agent: ["read"] })).toBeUndefined();
  });
});

describe("files the worker names unreadable (its credential)", () => {
  const credential = "/home/w/.local/share/ao-worker/credential.json";
  const read = (path: string): ToolCall => ({ kind: "read", name: "Read", subject: path, path });
  const search = (path: string): ToolCall => ({ kind: "search", name: "Grep", subject: path, path });
  const everything: AgentPolicy = { allow: ["read", "search", "edit"], default: "allow" };
  const refused: ToolDecision = { decision: "deny", rule: null, by: "default", reason: UNREADABLE_REASON };
  test("reading, searching or editing the file is refused, whatever the policy allows", () => {
    for (const call of [read(credential), search(credential), edit(credential)]) {
      expect(decideTool(undefined, workdir, call, [credential])).toEqual(refused);
      expect(decideTool(everything, workdir, call, [credential])).toEqual(refused);
    }
  });
  test("so is a search or listing of a directory that holds it", () => {
    expect(decideTool(everything, workdir, search("/home/w/.local/share/ao-worker"), [credential])).toEqual(refused);
    expect(decideTool(everything, workdir, read("/home/w"), [credential])).toEqual(refused);
  });
  test("so is a link that leads to it, or its real path when it is named through a link", () => {
    const dir = mkdtempSync(join(tmpdir(), "ao-policy-"));
    try {
      const real = join(dir, "credential.json");
      writeFileSync(real, "{}");
      symlinkSync(real, join(dir, "innocent.txt"));
      expect(decideTool(everything, workdir, read(join(dir, "innocent.txt")), [real])).toEqual(refused);
      expect(decideTool(everything, workdir, edit(join(dir, "innocent.txt")), [real])).toEqual(refused);
      // The credential named through a linked directory, read by its real path.
      symlinkSync(dir, `${dir}-link`);
      expect(decideTool(everything, workdir, read(real), [join(`${dir}-link`, "credential.json")])).toEqual(refused);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(`${dir}-link`, { force: true });
    }
  });
  test("its neighbours, and calls without a path, are decided as before", () => {
    expect(decideTool(undefined, workdir, read("/home/w/.local/share/ao-worker/runs/t1/work/a.ts"), [credential]).decision).toBe("allow");
    expect(decideTool(undefined, workdir, read(`${credential}.bak`), [credential]).decision).toBe("allow");
    expect(decideTool(undefined, workdir, { kind: "search", name: "Grep", subject: "TODO" }, [credential]).decision).toBe("allow");
    expect(decideTool(undefined, workdir, shell(`cat ${credential}`), [credential]).decision).toBe("ask");
  });
});
