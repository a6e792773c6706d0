// `ao task ...` against a real server: create, list, show, events and the actions, with the task
// moved along through the server's task store as a worker would. --wait, --follow and AO_TOKEN:
// tasks-wait.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestServer } from "../helpers/server";
import { newOrg, type Session } from "../helpers/identity";
import { newConfigDir, runCli } from "./helpers";
import { log, startTaskCli, type TaskCli } from "./tasks-fixtures";
import { changeTask } from "../../src/modules/tasks/store";
import { makeWorker } from "../workers/helpers";
import { run } from "../../src/db/query";

let s: TestServer, owner: Session, env: Record<string, string>, projectId: string;
let ao: TaskCli["ao"], newTask: TaskCli["newTask"], move: TaskCli["move"];
beforeAll(async () => ({ s, owner, env, projectId, ao, newTask, move } = await startTaskCli()));
afterAll(() => s.stop());

describe("ao task create", () => {
  test("by project name, priority in any case: the task as JSON", async () => {
    const r = await ao("task", "create", "--project", "web shop", "--title", "Fix the cart", "--prompt", "The cart loses items", "--priority", "high", "--json");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const t = JSON.parse(r.stdout);
    expect(t).toMatchObject({ projectId, title: "Fix the cart", prompt: "The cart loses items", priority: "HIGH", kind: "task", status: "queued" });
    expect((await s.api("GET", `/orgs/${owner.orgId}/tasks/${t.id}`, { token: owner.accessToken })).body.title).toBe("Fix the cart");
  });

  test("a review from a prompt file, a plan from standard input; human output names the task", async () => {
    const file = join(newConfigDir(), "prompt.md");
    writeFileSync(file, "Review this\nline two\n");
    const review = await ao("task", "create", "--project", projectId, "--title", "Review PR", "--prompt-file", file, "--kind", "review", "--base", "main", "--head", "feature", "--json");
    expect(review.code).toBe(0);
    expect(JSON.parse(review.stdout)).toMatchObject({ kind: "review", review: { base: "main", head: "feature" }, prompt: "Review this\nline two\n" });

    const plan = await runCli(["task", "create", "--project", projectId, "--title", "Plan it", "--prompt-file", "-", "--kind", "plan"], env, "from stdin");
    expect(plan.code).toBe(0);
    const [, id] = plan.stdout.match(/^Created task (tsk_\w+) \(queued\): Plan it$/m)!;
    const t = await s.api("GET", `/orgs/${owner.orgId}/tasks/${id}`, { token: owner.accessToken });
    expect(t.body).toMatchObject({ kind: "plan", prompt: "from stdin" });
  });

  test("bad command lines exit 2 and create nothing", async () => {
    const before = (await s.api("GET", `/orgs/${owner.orgId}/tasks?limit=200`, { token: owner.accessToken })).body.items.length;
    const base = ["task", "create", "--project", projectId, "--title", "T"];
    const table: [string[], RegExp][] = [
      [["task", "create", "--title", "T", "--prompt", "P"], /--project is required/],
      [["task", "create", "--project", projectId, "--prompt", "P"], /--title is required/],
      [base, /--prompt or --prompt-file is required/],
      [[...base, "--prompt", "P", "--prompt-file", "f"], /not both/],
      [[...base, "--prompt", "P", "--kind", "review", "--base", "main"], /--kind review needs --base and --head/],
      [[...base, "--prompt", "P", "--base", "main", "--head", "x"], /--base and --head go with --kind review/],
      [[...base, "--prompt", "P", "--priority", "asap"], /--priority must be one of LOW, MEDIUM, HIGH, URGENT/],
      [[...base, "--prompt", "P", "--kind", "epic"], /--kind must be one of task, review, plan/],
      [[...base, "--prompt", "P", "--color", "red"], /Unknown option '--color'/],
      [[...base, "--prompt", "P", "extra"], /unexpected argument 'extra'/],
    ];
    for (const [args, message] of table) {
      const r = await ao(...args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(message);
    }
    expect((await s.api("GET", `/orgs/${owner.orgId}/tasks?limit=200`, { token: owner.accessToken })).body.items.length).toBe(before);
  });

  test("what the server refuses exits 1 with its code and message", async () => {
    const table: [string[], RegExp][] = [
      [["task", "create", "--project", "No Such", "--title", "T", "--prompt", "P"], /no project named 'No Such' \(projects: Web Shop\)/],
      [["task", "create", "--project", "prj_nope", "--title", "T", "--prompt", "P"], /^ao: validation_failed: /],
      [["task", "create", "--project", projectId, "--title", "x".repeat(201), "--prompt", "P"], /^ao: validation_failed: [^]*title/],
      [["task", "create", "--project", projectId, "--title", "T", "--prompt-file", "/no/such/file"], /cannot read --prompt-file \/no\/such\/file/],
    ];
    for (const [args, message] of table) {
      const r = await ao(...args);
      expect({ args: args.slice(0, 3), code: r.code }).toEqual({ args: args.slice(0, 3), code: 1 });
      expect(r.stderr).toMatch(message);
    }
  });
});

describe("ao task list, show, events", () => {
  let ids: string[];
  beforeAll(async () => {
    const p = await s.api("POST", `/orgs/${owner.orgId}/projects`, { body: { name: "Listing" }, token: owner.accessToken });
    ids = [];
    for (const title of ["first", "second", "third"]) {
      const r = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { body: { projectId: p.body.id, title, prompt: "p" }, token: owner.accessToken });
      ids.push(r.body.id);
    }
    await move(ids[0]!, "running", {}, [log("cloning")]);
  });

  test("list: aligned columns, newest first, filters and limit", async () => {
    const r = await ao("task", "list", "--project", "Listing");
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^ID +STATUS +PRIORITY +KIND +UPDATED +TITLE$/);
    expect(lines.slice(1).map((l) => l.split(/ +/)[0])).toEqual([...ids].reverse());
    const titleColumn = lines[0]!.indexOf("TITLE");
    for (const l of lines.slice(1)) expect(l.slice(titleColumn)).toMatch(/^(first|second|third)$/);
    expect(lines[3]).toMatch(/ running +MEDIUM +task +\d{4}-\d\d-\d\d \d\d:\d\d +first$/);

    const running = JSON.parse((await ao("task", "list", "--project", "Listing", "--status", "running", "--json")).stdout);
    expect(running.map((t: any) => t.id)).toEqual([ids[0]]);
    const limited = JSON.parse((await ao("task", "list", "--project", "Listing", "--limit", "2", "--json")).stdout);
    expect(limited.map((t: any) => t.title)).toEqual(["third", "second"]);
    expect((await ao("task", "list", "--project", "Listing", "--status", "failed")).stdout).toBe("No tasks.\n");
  });

  test("an archived project is named like a live one: its tasks listed, a new task refused by the server", async () => {
    const p = await s.api("POST", `/orgs/${owner.orgId}/projects`, { body: { name: "Old Shop" }, token: owner.accessToken });
    const t = await s.api("POST", `/orgs/${owner.orgId}/tasks`, { body: { projectId: p.body.id, title: "kept", prompt: "p" }, token: owner.accessToken });
    expect((await s.api("DELETE", `/orgs/${owner.orgId}/projects/${p.body.id}`, { token: owner.accessToken })).status).toBe(200);
    const listed = await ao("task", "list", "--project", "old shop", "--json");
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).map((x: any) => x.id)).toEqual([t.body.id]);
    const created = await ao("task", "create", "--project", "Old Shop", "--title", "T", "--prompt", "P");
    expect(created.code).toBe(1);
    expect(created.stderr).toMatch(/^ao: conflict: .*archived/);
  });

  test("list: bad filters exit 2", async () => {
    for (const args of [["--status", "done"], ["--limit", "0"], ["--limit", "ten"], ["--kind", "x"]]) {
      const r = await ao("task", "list", ...args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
    }
  });

  test("show: details for people, the record with --json", async () => {
    const r = await ao("task", "show", ids[0]!);
    expect(r.code).toBe(0);
    expect(r.stdout).toStartWith(`${ids[0]}  first\n`);
    expect(r.stdout).toMatch(/^status +running \(attempt 1\)$/m);
    expect(r.stdout).toContain(`created   `);
    const json = JSON.parse((await ao("task", "show", ids[0]!, "--json")).stdout);
    expect(json).toMatchObject({ id: ids[0], status: "running", attempt: 1 });
  });

  test("show and events name the worker and who acted, not their ids", async () => {
    const id = await newTask("named");
    const { workerId } = await makeWorker(s, owner.orgId, { name: "build-1" });
    await changeTask(s.core, owner.orgId, id, (row) => ({
      patch: { status: "running", attempt: 1, worker_id: workerId, started_at: new Date().toISOString() },
      events: [{ type: "status", actor: { type: "worker", id: workerId }, data: { from: row.status, to: "running" } }],
    }));
    const shown = await ao("task", "show", id);
    expect(shown.stdout).toMatch(new RegExp(`^worker +build-1 \\(${workerId}\\)$`, "m"));
    expect(shown.stdout).toMatch(/^created +.* by Admin$/m);
    expect((await ao("task", "events", id)).stdout.trimEnd().split("\n")).toEqual([
      expect.stringMatching(/^#1 \d\d:\d\d:\d\d status queued by Admin$/),
      expect.stringMatching(/^#2 \d\d:\d\d:\d\d status queued -> running by worker build-1$/),
    ]);
  });

  test("show: unknown task, another org's task exit 1 not_found; no ID exits 2", async () => {
    const other = await newOrg(s);
    const op = await s.api("POST", `/orgs/${other.orgId}/projects`, { body: { name: "theirs" }, token: other.accessToken });
    const theirs = await s.api("POST", `/orgs/${other.orgId}/tasks`, { body: { projectId: op.body.id, title: "secret", prompt: "p" }, token: other.accessToken });
    for (const id of ["tsk_nope", theirs.body.id]) {
      const r = await ao("task", "show", id);
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/^ao: not_found: task not found/);
      expect(r.stdout).toBe("");
    }
    const r = await ao("task", "show");
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("the task ID is required");
  });

  test("events: one line per event (#seq time type text), --after, --json", async () => {
    const r = await ao("task", "events", ids[0]!);
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd().split("\n")).toEqual([
      expect.stringMatching(/^#1 \d\d:\d\d:\d\d status queued by Admin$/),
      expect.stringMatching(/^#2 \d\d:\d\d:\d\d log cloning$/),
      expect.stringMatching(/^#3 \d\d:\d\d:\d\d status queued -> running$/),
    ]);
    expect((await ao("task", "events", ids[0]!, "--after", "2")).stdout).toMatch(/^#3 [^\n]*\n$/);
    const json = JSON.parse((await ao("task", "events", ids[0]!, "--json")).stdout);
    expect(json.map((e: any) => e.seq)).toEqual([1, 2, 3]);
    expect(json[1]).toMatchObject({ type: "log", data: { line: "cloning" } });
  });
});

test("escape sequences in titles, logs and summaries reach the terminal as text; --json keeps them exact", async () => {
  const evil = "pwn\x1b]52;c;ZXZpbA==\x07ed\x1b[2J";
  // The API refuses such a title (one line, no controls); a row written before that rule, or
  // straight into the database, may still hold one, and the terminal must be safe from it.
  const id = await newTask("soon evil");
  await s.core.store.write(run("UPDATE tasks SET title = ? WHERE id = ?", evil, id));
  await move(id, "completed", { summary: evil, finished_at: new Date().toISOString() }, [log(evil)]);
  for (const args of [["task", "list", "--limit", "3"], ["task", "show", id], ["task", "events", id], ["task", "events", id, "--follow"]]) {
    const r = await ao(...args);
    expect({ args, code: r.code }).toEqual({ args, code: 0 });
    expect({ args, raw: /[\x00-\x08\x0b-\x1f\x7f-\x9f]/.test(r.stdout) }).toEqual({ args, raw: false });
    expect(r.stdout).toContain("pwn\\x1b]52;c;ZXZpbA==\\x07ed");
  }
  expect(JSON.parse((await ao("task", "show", id, "--json")).stdout).title).toBe(evil);
});

describe("ao task <action>", () => {
  test("each action answers with the new state; refusals exit 1 with the allowed actions", async () => {
    const id = await newTask("controlled");
    const steps: [string[], number, RegExp][] = [
      [["pause", id], 0, /^pause: task tsk_\w+ is now paused$/m],
      [["resume", id], 0, /is now queued/],
      [["approve", id], 1, /^ao: invalid_transition: cannot approve a task that is queued\n {2}status: queued\n {2}allowedActions: pause, cancel\n$/],
      [["cancel", id, "--reason", "not needed"], 0, /is now cancelled/],
      [["retry", id], 0, /is now queued/],
    ];
    for (const [args, code, out] of steps) {
      const r = await ao("task", ...args);
      expect({ args, code: r.code }).toEqual({ args, code });
      expect(code === 0 ? r.stdout : r.stderr).toMatch(out);
    }
    // 2,000 characters as the server counts them: 2,000 emoji pass (4,000 UTF-16 units).
    const emoji = await ao("task", "pause", id, "--reason", "😀".repeat(2000));
    expect({ code: emoji.code, stderr: emoji.stderr }).toEqual({ code: 0, stderr: "" });
    expect((await ao("task", "resume", id)).code).toBe(0);
    await move(id, "running");
    await move(id, "needs_input", { needs: JSON.stringify({ kind: "input", message: "which colour?" }) });
    const answered = await ao("task", "input", id, "--input", "blue", "--json");
    expect(answered.code).toBe(0);
    expect(JSON.parse(answered.stdout)).toMatchObject({ id, status: "running", needs: null });
    const events = (await s.api("GET", `/orgs/${owner.orgId}/tasks/${id}/events`, { token: owner.accessToken })).body.items;
    expect(events.filter((e: any) => e.type === "action").map((e: any) => e.data)).toEqual([
      { action: "pause" },
      { action: "resume" },
      { action: "cancel", reason: "not needed" },
      { action: "retry" },
      { action: "pause", reason: "😀".repeat(2000) },
      { action: "resume" },
      { action: "input", input: "blue" },
    ]);
  });

  test("bad command lines exit 2", async () => {
    const table: [string[], RegExp][] = [
      [["input", "tsk_x"], /'ao task input' needs --input TEXT/],
      [["input", "tsk_x", "--input", "  "], /'ao task input' needs --input TEXT/],
      [["pause", "tsk_x", "--input", "x"], /--input goes with 'ao task input'/],
      [["deny", "tsk_x", "--reason", "r".repeat(2001)], /--reason is at most 2,000 characters/],
      [["deny", "tsk_x", "--reason", "😀".repeat(2001)], /--reason is at most 2,000 characters/],
      [["cancel"], /the task ID is required/],
      [["explode", "tsk_x"], /unknown command 'task explode'/],
    ];
    for (const [args, message] of table) {
      const r = await ao("task", ...args);
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(message);
    }
  });

  test("unknown task: exit 1 not_found", async () => {
    const r = await ao("task", "cancel", "tsk_doesnotexist");
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ao: not_found: /);
  });
});
