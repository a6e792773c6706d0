// Rules of the worker runtime that need no server: it never imports server code (it ships in
// the same executable but must stand alone), its reconnect backoff is jittered and bounded, its
// options are validated, and it reports provider key names, never values.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { backoff, HttpError } from "../../src/worker/client";
import { EventSink, fitEvent, MAX_BATCH_CHARS, MAX_EVENT_CHARS } from "../../src/worker/events";
import { clipText, readPlan } from "../../src/worker/attempt";
import { inventory } from "../../src/worker/inventory";
import { parseWorkerOptions } from "../../src/worker/options";
import { loadCredential, saveCredential } from "../../src/worker/credential";
import { processStart, recordAgent } from "../../src/worker/orphans";
import { WorkerRuntime } from "../../src/worker/runtime";
import { WorkerClient } from "../../src/worker/client";
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";

const root = resolve(import.meta.dir, "..", "..");

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : []));
}

/** Every module a file imports (static, dynamic and re-exports). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const found = [...text.matchAll(/(?:^|\s)(?:import|export)\s[^;]*?from\s+["']([^"']+)["']/g), ...text.matchAll(/import\(\s*["']([^"']+)["']\s*\)/g), ...text.matchAll(/(?:^|\n)\s*import\s+["']([^"']+)["']/g)];
  return found.map((m) => m[1]);
}

describe("the worker stands alone", () => {
  test("src/worker and src/protocol import only each other, src/lib, the version and libraries", () => {
    const allowedDirs = ["src/worker", "src/protocol", "src/lib"].map((d) => join(root, d));
    const allowedFiles = [join(root, "src/version.ts"), join(root, "package.json")];
    // The agents' own SDKs are the adapters' libraries (Claude Code's control protocol).
    const allowedPackages = /^(node:|bun$|bun:|@sinclair\/typebox|@anthropic-ai\/claude-agent-sdk$)/;
    const seen = new Set<string>();
    const queue = [...sources(join(root, "src/worker")), ...sources(join(root, "src/protocol"))];
    const violations: string[] = [];
    while (queue.length) {
      const file = queue.pop()!;
      if (seen.has(file) || file.endsWith(".json")) continue;
      seen.add(file);
      for (const spec of importsOf(file)) {
        if (!spec.startsWith(".")) {
          if (!allowedPackages.test(spec)) violations.push(`${relative(root, file)} imports ${spec}`);
          continue;
        }
        const base = resolve(dirname(file), spec);
        const target = [base, `${base}.ts`, join(base, "index.ts")].find((p) => {
          try {
            return statSync(p).isFile();
          } catch {
            return false;
          }
        });
        if (!target) violations.push(`${relative(root, file)} imports ${spec}, which does not resolve`);
        else if (!allowedFiles.includes(target) && !allowedDirs.some((d) => target.startsWith(d + "/"))) violations.push(`${relative(root, file)} imports ${relative(root, target)}`);
        else queue.push(target);
      }
    }
    expect(violations).toEqual([]);
    expect(seen.size).toBeGreaterThan(20);
  });
});

describe("reconnect backoff", () => {
  test("full jitter: random below min(cap, base * 2^n), growing with failures, never past the cap", () => {
    for (const n of [0, 1, 3, 6, 10, 40]) {
      const bound = Math.min(30_000, 500 * 2 ** n);
      const waits = Array.from({ length: 200 }, () => backoff(n, 500, 30_000));
      expect(waits.every((w) => Number.isInteger(w) && w >= 0 && w < bound)).toBe(true);
      // Jittered: 200 draws are not all alike, and they spread over the range.
      expect(new Set(waits).size).toBeGreaterThan(50);
      expect(Math.max(...waits)).toBeGreaterThan(bound * 0.7);
    }
  });
});

describe("options", () => {
  test.each([
    ["no server", [], /--server URL is required/],
    ["not http", ["--server", "ftp://x"], /--server ftp:\/\/x is not an http/],
    ["one of several not http", ["--server", "http://a,b:7070"], /--server b:7070 is not an http/],
    ["only commas", ["--server", " , "], /--server URL is required/],
    ["a server twice", ["--server", "http://a:7070", "--server", "http://b:7070,http://a:7070/"], /--server http:\/\/a:7070 is given twice/],
    ["capacity 0", ["--server", "http://x", "--capacity", "0"], /--capacity/],
    ["capacity 65", ["--server", "http://x", "--capacity", "65"], /--capacity/],
    ["capacity 1.5", ["--server", "http://x", "--capacity", "1.5"], /--capacity/],
    ["bad label", ["--server", "http://x", "--labels", "ok,not ok"], /label 'not ok'/],
    ["unknown agent", ["--server", "http://x", "--agent", "gpt"], /unknown agent/],
    ["exec without a command", ["--server", "http://x", "--agent", "exec"], /needs --exec/],
    ["exec among several, without a command", ["--server", "http://x", "--agent", "claude,exec"], /needs --exec/],
    ["an unknown agent among several", ["--server", "http://x", "--agent", "claude,gpt"], /unknown agent 'gpt'/],
    ["auto with others", ["--server", "http://x", "--agent", "auto,claude"], /auto stands alone/],
    ["no agent in the list", ["--server", "http://x", "--agent", " , "], /names no agent/],
    ["agent args for two coding agents", ["--server", "http://x", "--agent", "claude,codex", "--agent-args=-x"], /one coding agent/],
    ["agent args with auto", ["--server", "http://x", "--agent", "auto", "--agent-args=-x"], /one coding agent/],
    ["negative grace", ["--server", "http://x", "--kill-grace-ms", "-1"], /--kill-grace-ms/],
    ["a value for --no-confine", ["--server", "http://x", "--no-confine=yes"], /no-confine/],
    ["--no-confine with --require-confine", ["--server", "http://x", "--no-confine", "--require-confine"], /--no-confine and --require-confine contradict each other/],
    ["unknown flag", ["--server", "http://x", "--frobnicate"], /frobnicate/],
  ])("refused: %s", (_name, args, message) => {
    expect(() => parseWorkerOptions(args as string[], {})).toThrow(message);
  });

  test("an agent named by --agent that is not on PATH: the worker says so and exits 2, before it pairs or takes a task", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ao-worker-noagent-"));
    try {
      // A PATH without node_modules/.bin, where the test's claude and codex are.
      const proc = Bun.spawn([process.execPath, join(root, "src", "main.ts"), "worker", "--server", "http://127.0.0.1:9", "--data-dir", dataDir, "--agent", "exec,codex", "--exec", "true"], {
        cwd: root,
        env: { ...process.env, PATH: "/usr/bin:/bin" },
        stdout: "pipe",
        stderr: "pipe",
      });
      const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
      expect(err.trim()).toBe("--agent codex: no codex on PATH (install it, or name the agents this machine has)");
      expect(out).not.toContain("pairing");
      expect(code).toBe(2);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("defaults and environment variables", () => {
    const o = parseWorkerOptions(["--server", "http://ao.lan:7070/", "--data-dir", "/tmp/w", "--labels", "Linux, gpu", "--exec", "make"], {});
    expect(o).toMatchObject({ servers: ["http://ao.lan:7070"], dataDir: "/tmp/w", workspace: "/tmp/w/workspace", capacity: 1, labels: ["linux", "gpu"], agent: "exec", exec: "make", killGraceMs: 5000, confine: true });
    const e = parseWorkerOptions([], { AO_SERVER: "https://ao.example", AO_WORKER_CAPACITY: "4", AO_WORKER_WORKSPACE: "/srv/ws", AO_WORKER_AGENT: "codex", AO_WORKER_AGENT_ARGS: "--sandbox  read-only" });
    expect(e).toMatchObject({ servers: ["https://ao.example"], capacity: 4, workspace: "/srv/ws", agent: "codex", agents: ["codex"], agentArgs: ["--sandbox", "read-only"] });
    // Several agents, in the order of preference given (repeats dropped); auto; none named.
    expect(parseWorkerOptions(["--server", "http://x", "--agent", "codex, claude,exec,codex", "--exec", "make"], {}).agents).toEqual(["codex", "claude", "exec"]);
    expect(parseWorkerOptions(["--server", "http://x", "--agent", "auto"], {}).agents).toEqual(["auto"]);
    expect(parseWorkerOptions(["--server", "http://x", "--agent", "exec,claude", "--exec", "make", "--agent-args=-v"], {}).agentArgs).toEqual(["-v"]);
    expect(parseWorkerOptions(["--server", "http://x"], {}).agents).toBeNull();
    // Confinement (bubblewrap) unless turned off, by the flag or AO_WORKER_NO_CONFINE=1.
    expect(parseWorkerOptions(["--server", "http://x", "--no-confine"], {}).confine).toBe(false);
    expect(parseWorkerOptions(["--server", "http://x"], { AO_WORKER_NO_CONFINE: "1" }).confine).toBe(false);
    expect(parseWorkerOptions(["--server", "http://x"], { AO_WORKER_NO_CONFINE: "0" }).confine).toBe(true);
    expect(() => parseWorkerOptions(["--server", "http://x"], { AO_WORKER_NO_CONFINE: "yes" })).toThrow(/AO_WORKER_NO_CONFINE must be 1/);
    // Required, by the flag or AO_WORKER_REQUIRE_CONFINE=1; not with confinement turned off either way.
    expect(parseWorkerOptions(["--server", "http://x"], {}).requireConfine).toBe(false);
    expect(parseWorkerOptions(["--server", "http://x", "--require-confine"], {}).requireConfine).toBe(true);
    expect(parseWorkerOptions(["--server", "http://x"], { AO_WORKER_REQUIRE_CONFINE: "1" })).toMatchObject({ confine: true, requireConfine: true });
    expect(parseWorkerOptions(["--server", "http://x"], { AO_WORKER_REQUIRE_CONFINE: "0" }).requireConfine).toBe(false);
    expect(() => parseWorkerOptions(["--server", "http://x"], { AO_WORKER_REQUIRE_CONFINE: "on" })).toThrow(/AO_WORKER_REQUIRE_CONFINE must be 1/);
    expect(() => parseWorkerOptions(["--server", "http://x", "--require-confine"], { AO_WORKER_NO_CONFINE: "1" })).toThrow(/contradict each other/);
    expect(() => parseWorkerOptions(["--server", "http://x", "--no-confine"], { AO_WORKER_NO_CONFINE: "yes" })).toThrow(/AO_WORKER_NO_CONFINE must be 1/);
  });

  test("several servers: --server repeated or with commas, or AO_SERVER with commas; in the order given", () => {
    const servers = ["http://a:7070", "https://b.example", "http://c:7070"];
    expect(parseWorkerOptions(["--server", "http://a:7070/", "--server", "https://b.example , http://c:7070"], {}).servers).toEqual(servers);
    expect(parseWorkerOptions([], { AO_SERVER: "http://a:7070,https://b.example/,http://c:7070" }).servers).toEqual(servers);
    // The flag wins over the variable, as for every option.
    expect(parseWorkerOptions(["--server", "http://x"], { AO_SERVER: "http://a,http://b" }).servers).toEqual(["http://x"]);
  });
});

describe("credential and inventory", () => {
  test("the credential file is written with mode 0600 in a 0700 directory, and only reused for its server", () => {
    const tmp = mkdtempSync(join(tmpdir(), "ao-cred-"));
    try {
      const dir = join(tmp, "data");
      const c = { server: "http://a", workerId: "wkr_1", orgId: "org_1", credential: "aow_x" };
      saveCredential(dir, c);
      expect(statSync(join(dir, "credential.json")).mode & 0o777).toBe(0o600);
      expect(statSync(dir).mode & 0o777).toBe(0o700);
      expect(readdirSync(dir)).toEqual(["credential.json"]);
      expect(loadCredential(dir, ["http://a"])).toEqual(c);
      expect(loadCredential(dir, ["http://b"])).toBeNull();
      // Any of several servers of the service: found whichever of them gave it.
      expect(loadCredential(dir, ["http://b", "http://a"])).toEqual(c);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  test("a tool that fails to say its version is reported without one, not with its error text", async () => {
    const bin = mkdtempSync(join(tmpdir(), "ao-tools-"));
    try {
      writeFileSync(join(bin, "git"), "#!/bin/sh\necho 'git version 2.39.5'\n", { mode: 0o755 });
      writeFileSync(join(bin, "cargo"), "#!/bin/sh\necho \"error: rustup could not choose a version of cargo to run, because one wasn't specified explicitly\" >&2\nexit 1\n", { mode: 0o755 });
      const inv = await inventory({ PATH: bin });
      expect(inv.tools).toEqual([
        { name: "git", version: "2.39.5" },
        { name: "cargo", version: null },
      ]);
      expect(inv.agents).toEqual([]);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  test("providers are the names of the key variables that are set, never their values", async () => {
    const inv = await inventory({ ANTHROPIC_API_KEY: "sk-ant-value-123", OPENAI_API_KEY: "", GEMINI_API_KEY: "g-value", PATH: process.env.PATH });
    expect(inv.providers).toEqual(["ANTHROPIC_API_KEY", "GEMINI_API_KEY"]);
    const text = JSON.stringify(inv);
    expect(text).not.toContain("sk-ant-value-123");
    expect(text).not.toContain("g-value");
    expect(inv.tools.map((t) => t.name)).toContain("git");
  });
});

describe("the timeline on its way out", () => {
  /** A stand-in for the server's events route: records what it took, refuses what `refuse` says. */
  function server(refuse: (body: { events: { seq: number }[] }, chars: number) => HttpError | null = () => null) {
    const took: number[] = [];
    const bodies: number[] = [];
    return {
      took,
      bodies,
      client: {
        async events(_taskId: string, body: any) {
          const chars = JSON.stringify(body).length;
          const refusal = refuse(body, chars);
          if (refusal) throw refusal;
          bodies.push(chars);
          took.push(...body.events.map((e: { seq: number }) => e.seq));
          return { written: body.events.length, duplicates: 0 };
        },
      },
    };
  }

  test("fitEvent: small events as they are; a huge line, message or output is cut keeping its shape; anything else becomes a preview", () => {
    expect(fitEvent({ stream: "stdout", line: "hi" })).toEqual({ stream: "stdout", line: "hi" });
    expect(fitEvent(undefined)).toBeNull();
    for (const data of [
      { stream: "stdout", line: "x".repeat(1_000_000) },
      { role: "assistant", text: '"'.repeat(300_000) },
      { id: "t1", output: "\u0001".repeat(200_000), status: "completed" },
    ]) {
      const cut = fitEvent(data) as Record<string, unknown>;
      expect(JSON.stringify(cut).length).toBeLessThanOrEqual(MAX_EVENT_CHARS);
      expect(cut.truncated).toBe(true);
      expect(Object.keys(cut).sort()).toEqual([...Object.keys(data), "truncated"].sort());
    }
    const odd = fitEvent({ input: Array.from({ length: 50_000 }, (_, i) => i) }) as Record<string, unknown>;
    expect(odd).toMatchObject({ truncated: true });
    expect(JSON.stringify(odd).length).toBeLessThanOrEqual(MAX_EVENT_CHARS);
  });

  test("texts the server limits are clipped, saying how much was cut", () => {
    expect(clipText("short", 100)).toBe("short");
    const long = clipText("y".repeat(50_000), 20_000);
    expect(long.length).toBeLessThanOrEqual(20_000);
    expect(long).toEndWith("more characters)");
    // A NUL (an agent printed a binary) is dropped: the server refuses it, as PostgreSQL cannot store it.
    expect(clipText("a\u0000b\u0000", 100)).toBe("ab");
  });

  test("a plan.json the worker refuses fails the task naming the field at fault, not only the shape expected", () => {
    const dir = mkdtempSync(join(tmpdir(), "ao-plan-"));
    const refusal = (plan: unknown) => {
      writeFileSync(join(dir, "plan.json"), JSON.stringify(plan));
      return readPlan(dir);
    };
    expect(refusal({ tasks: [{ title: "ok", prompt: "p" }, { title: "", prompt: "p" }] })).toContain("tasks.1.title:");
    expect(refusal({ tasks: [{ title: "t", prompt: "p", priority: "high" }] })).toContain("tasks.0.priority:");
    expect(refusal({ tasks: [{ title: "t", prompt: "p", kind: "review", review: { base: "main", head: "-x" } }] })).toContain("tasks.0.review.head:");
    expect(refusal({ steps: [] })).toContain("tasks:");
    expect(refusal({ tasks: [{ title: "t", prompt: "p", agent: "gpt" }] })).toContain("tasks.0.agent:");
    expect(refusal({ tasks: [{ title: "t", prompt: "p", agent: "codex" }] })).toEqual({ tasks: [{ title: "t", prompt: "p", agent: "codex" }] });
    expect(refusal({ tasks: [{ title: "t", prompt: "p" }] })).toEqual({ tasks: [{ title: "t", prompt: "p" }] });
    // In the server's words, every field the shape takes shown, the faults item by item (at most three).
    expect(refusal({ tasks: [{ title: " ", prompt: "p", priority: "high" }, { title: "t", prompt: "p", kind: "review" }] })).toBe(
      'plan.json does not have the shape {"tasks": [{"title", "prompt", "priority"?, "kind"?, "review"?, "agent"?}]} ' +
        "(tasks.0.title: must be 1 to 200 characters, not only spaces and control characters (made one line); tasks.0.priority: must be one of LOW, MEDIUM, HIGH, URGENT; tasks.1.review: is required with kind review: {base, head})",
    );
    expect(refusal({ tasks: Array.from({ length: 4 }, () => ({ title: "t", prompt: "" })) })).toEndWith("; ...)");
    rmSync(dir, { recursive: true, force: true });
  });

  test("batches stay under the server's body limit; every event arrives once, in order", async () => {
    const srv = server();
    const sink = new EventSink(srv.client, "tsk_1", "lease", () => {});
    for (let i = 0; i < 700; i++) sink.push("log", { stream: "stdout", line: `${i} ${"z".repeat(3000)}` });
    sink.push("log", { stream: "stdout", line: "w".repeat(2_000_000) });
    await sink.flush();
    expect(srv.took).toEqual(Array.from({ length: 701 }, (_, i) => i + 1));
    expect(srv.bodies.length).toBeGreaterThan(3);
    expect(Math.max(...srv.bodies)).toBeLessThanOrEqual(MAX_BATCH_CHARS + 1024);
  });

  test("a 413 splits the batch; a 400 drops it and says so; a refused lease stops the sink", async () => {
    const small = server((_b, chars) => (chars > 50_000 ? new HttpError(413, "payload_too_large", "too large") : null));
    const a = new EventSink(small.client, "tsk_1", "lease", () => {});
    for (let i = 0; i < 100; i++) a.push("log", { line: "q".repeat(2000) });
    await a.flush();
    expect(small.took).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));

    const logged: string[] = [];
    const picky = server((b) => (b.events.some((e) => e.seq === 1) ? new HttpError(400, "validation_failed", "no") : null));
    const b = new EventSink(picky.client, "tsk_2", "lease", () => {}, (l) => logged.push(l));
    b.push("log", { line: "one" });
    await b.flush();
    b.push("log", { line: "two" });
    await b.flush();
    expect(picky.took).toEqual([2]);
    expect(logged[0]).toContain("1 timeline events of tsk_2 were refused (400)");

    let stale = 0;
    const gone = server(() => new HttpError(409, "conflict", "stale"));
    const c = new EventSink(gone.client, "tsk_3", "lease", () => stale++);
    c.push("log", { line: "x" });
    await c.flush();
    c.push("log", { line: "y" });
    await c.flush();
    expect(stale).toBe(1);
  });
});

describe("agents left behind by a worker that died", () => {
  test("the next start ends the recorded agent group, but not a process that only has the same pid", async () => {
    const tmp = mkdtempSync(join(tmpdir(), "ao-orphans-"));
    const child = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
    const exited = new Promise((resolve) => child.on("exit", resolve));
    try {
      const pid = child.pid!;
      expect(processStart(pid)).toBeString();
      const options = parseWorkerOptions(["--server", "http://127.0.0.1:9", "--data-dir", tmp, "--exec", "true"], {});
      const start = () => new WorkerRuntime(options, new WorkerClient(options.servers), { name: "x", start: () => { throw new Error("unused"); } }, () => {});
      // The same pid, but another process's start time (a reboot reused the number): left alone.
      mkdirSync(join(tmp, "runs", "tsk_1-a1"), { recursive: true });
      writeFileSync(join(tmp, "runs", "tsk_1-a1", "agent.pid"), JSON.stringify({ pid, start: "1" }));
      start();
      await Bun.sleep(100);
      expect(child.exitCode === null && child.signalCode === null).toBe(true);
      expect(readdirSync(join(tmp, "runs"))).toEqual([]);
      // Recorded by an attempt: ended.
      mkdirSync(join(tmp, "runs", "tsk_2-a1"));
      recordAgent(join(tmp, "runs", "tsk_2-a1"), pid);
      start();
      expect(await exited).toBeNull();
      expect(child.signalCode).toBe("SIGKILL");
    } finally {
      child.kill("SIGKILL");
      rmSync(tmp, { recursive: true, force: true });
    }
  });

  test("the next start ends the sandbox helpers Codex started for a run it left, and no others", async () => {
    const tmp = mkdtempSync(join(tmpdir(), "ao-helpers-"));
    const run = join(tmp, "runs", "tsk_3-a1");
    // Stand-ins with a Codex helper's command line, each in a session of its own as bubblewrap's are.
    const helper = (cwd: string) => {
      const p = spawn(process.execPath, ["-e", "setTimeout(() => {}, 30000)", "--sandbox-policy-cwd", cwd, "--codex-run-as-fs-helper"], { detached: true, stdio: "ignore" });
      return { p, exited: new Promise((resolve) => p.on("exit", resolve)) };
    };
    const left = helper(join(run, "work"));
    const others = [helper(join(tmp, "runs", "tsk_3-a10", "work")), helper(join(tmp, "elsewhere", "work"))];
    const lines: string[] = [];
    try {
      mkdirSync(join(run, "work"), { recursive: true });
      // Until each has exec'd (before that, /proc shows this process's command line).
      const started = () => [left, ...others].every((h) => readFileSync(`/proc/${h.p.pid}/cmdline`, "latin1").includes("--codex-run-as-fs-helper"));
      for (let i = 0; i < 500 && !started(); i++) await Bun.sleep(10);
      const options = parseWorkerOptions(["--server", "http://127.0.0.1:9", "--data-dir", tmp, "--exec", "true"], {});
      new WorkerRuntime(options, new WorkerClient(options.servers), { name: "x", start: () => { throw new Error("unused"); } }, (l) => lines.push(l));
      expect(await left.exited).toBeNull();
      expect(left.p.signalCode).toBe("SIGKILL");
      expect(lines).toContain("ao worker: ended 1 sandbox helper a previous run left behind (tsk_3-a1)");
      await Bun.sleep(100);
      for (const h of others) expect(h.p.exitCode === null && h.p.signalCode === null).toBe(true);
    } finally {
      for (const h of [left, ...others]) h.p.kill("SIGKILL");
      rmSync(tmp, { recursive: true, force: true });
    }
  });
});
