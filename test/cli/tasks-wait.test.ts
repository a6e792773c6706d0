// `ao task create --wait` and `ao task events --follow` against a real server, following a live
// task as it is moved along through the server's task store (as a worker would) to its exit code;
// and `ao task` in CI, with AO_SERVER and AO_TOKEN in place of a session file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestServer } from "../helpers/server";
import { makeToken, type Session } from "../helpers/identity";
import { newConfigDir, runCli, spawnCli } from "./helpers";
import { log, startTaskCli, type TaskCli } from "./tasks-fixtures";

let s: TestServer, owner: Session, env: Record<string, string>, projectId: string;
let ao: TaskCli["ao"], newTask: TaskCli["newTask"], move: TaskCli["move"];
beforeAll(async () => ({ s, owner, env, projectId, ao, newTask, move } = await startTaskCli()));
afterAll(() => s.stop());

// Each test follows a live task; the server pushes over the WebSocket, so they take well under a second.
describe("--wait and --follow", () => {
  /** Starts `ao task create --wait` and returns the new task's id and the running CLI. */
  async function createWaiting(title: string, ...extra: string[]) {
    const cli = spawnCli(["task", "create", "--project", projectId, "--title", title, "--prompt", "go", "--wait", ...extra], env);
    const [, id] = await cli.waitFor(/^Created task (tsk_\w+): /m);
    return { cli, id: id! };
  }

  test("completes: exit 0 with the timeline as it happens", async () => {
    const { cli, id } = await createWaiting("will complete");
    await cli.waitFor(/^#1 .* status queued/m);
    await move(id, "running", {}, [log("step one")]);
    await cli.waitFor(/^#3 .* status queued -> running$/m);
    await move(id, "completed", { summary: "all done", finished_at: new Date().toISOString() }, [log("step two")]);
    const r = await cli.done;
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toEqual([
      `Created task ${id}: will complete`,
      expect.stringMatching(/^#1 \d\d:\d\d:\d\d status queued by Admin$/),
      expect.stringMatching(/^#2 \d\d:\d\d:\d\d log step one$/),
      expect.stringMatching(/^#3 \d\d:\d\d:\d\d status queued -> running$/),
      expect.stringMatching(/^#4 \d\d:\d\d:\d\d log step two$/),
      expect.stringMatching(/^#5 \d\d:\d\d:\d\d status running -> completed$/),
      `task ${id} completed: all done`,
    ]);
  });

  test("a plan that completes: exit 0, ending with what it proposes and how to create them, as ao task show lists them", async () => {
    const { cli, id } = await createWaiting("will plan", "--kind", "plan");
    await cli.waitFor(/^#1 /m);
    await move(id, "running");
    const plan = { tasks: [{ title: "Add the schema", prompt: "p", priority: "HIGH" }, { title: "Review it", prompt: "p", kind: "review", review: { base: "main", head: "feature/x" } }] };
    await move(id, "completed", { summary: "two steps", plan: JSON.stringify(plan), finished_at: new Date().toISOString() });
    const r = await cli.done;
    expect(r.code).toBe(0);
    const ending = [`task ${id} completed: two steps`, `proposed (ao task apply-plan ${id} creates them):`, "  1. Add the schema [HIGH]", "  2. Review it [review main...feature/x]", ""].join("\n");
    expect(r.stdout).toEndWith(ending);
    expect((await ao("task", "show", id)).stdout).toContain(ending.split("\n").slice(1).join("\n"));
  });

  test("cancelled: exit 1", async () => {
    const { cli, id } = await createWaiting("will be cancelled");
    await cli.waitFor(/^#1 /m);
    expect((await s.api("POST", `/orgs/${owner.orgId}/tasks/${id}/actions`, { body: { action: "cancel" }, token: owner.accessToken })).status).toBe(200);
    const r = await cli.done;
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/#2 [^\n]* action cancel by Admin\n#3 [^\n]* status queued -> cancelled by Admin\ntask tsk_\w+ cancelled\n$/);
  });

  test("failed: exit 1", async () => {
    const { cli, id } = await createWaiting("will fail");
    await cli.waitFor(/^#1 /m);
    await move(id, "running");
    await move(id, "failed", { finished_at: new Date().toISOString() }, [{ type: "error", data: { message: "tests failed" } }]);
    const r = await cli.done;
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/ error tests failed\n#4 [^\n]* status running -> failed\ntask tsk_\w+ failed\n$/);
  });

  test("needs input: exit 3 with the question and how to answer; --json prints only the final task", async () => {
    const { cli, id } = await createWaiting("will ask");
    await cli.waitFor(/^#1 /m);
    await move(id, "running");
    await move(id, "needs_input", { needs: JSON.stringify({ kind: "input", message: "Which database?" }) });
    const r = await cli.done;
    expect(r.code).toBe(3);
    expect(r.stdout).toEndWith(`task ${id} needs input: Which database?\n  answer with: ao task input ${id} --input TEXT\n`);

    const json = spawnCli(["task", "create", "--project", projectId, "--title", "json wait", "--prompt", "go", "--wait", "--json"], env);
    let task: any;
    for (let i = 0; i < 100 && !task; i++) {
      await Bun.sleep(50);
      task = (await s.api("GET", `/orgs/${owner.orgId}/tasks?limit=5`, { token: owner.accessToken })).body.items.find((t: any) => t.title === "json wait");
    }
    await move(task.id, "running");
    await move(task.id, "needs_approval", { needs: JSON.stringify({ kind: "approval", message: "Deploy?" }) });
    const jr = await json.done;
    expect(jr.code).toBe(3);
    expect(JSON.parse(jr.stdout)).toMatchObject({ id: task.id, status: "needs_approval", needs: { kind: "approval", message: "Deploy?" } });
  });

  test("events --follow prints every event once, in order, and exits when the task is over", async () => {
    const id = await newTask("followed");
    await move(id, "running", {}, [log("before following")]);
    const cli = spawnCli(["task", "events", id, "--follow"], env);
    await cli.waitFor(/^#3 .* running$/m);
    for (let i = 0; i < 5; i++) await move(id, "running", {}, [log(`line ${i}`)].slice(0, 1)); // events-only changes
    await move(id, "completed", { finished_at: new Date().toISOString() });
    const r = await cli.done;
    expect(r.code).toBe(0);
    const seqs = r.stdout.trimEnd().split("\n").map((l) => Number(l.match(/^#(\d+) /)![1]));
    expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
    expect(r.stdout).toContain(" log line 4\n");
    expect(r.stdout).toMatch(/status running -> completed\n$/);
  });

  test("a terminal task: --wait-free follow ends at once; --json gives one event per line", async () => {
    const id = await newTask("already over");
    await s.api("POST", `/orgs/${owner.orgId}/tasks/${id}/actions`, { body: { action: "cancel" }, token: owner.accessToken });
    const r = await ao("task", "events", id, "--follow", "--json");
    expect(r.code).toBe(0);
    expect(r.stdout.trimEnd().split("\n").map((l) => JSON.parse(l).seq)).toEqual([1, 2, 3]);
  });
});

describe("AO_SERVER and AO_TOKEN", () => {
  test("a token works in its own org without a session file", async () => {
    const token = await makeToken(s, owner);
    const tenv = { AO_CONFIG_DIR: newConfigDir(), AO_SERVER: s.url, AO_TOKEN: token };
    const created = await runCli(["task", "create", "--project", "Web Shop", "--title", "from CI", "--prompt", "p", "--json"], tenv);
    expect(created.code).toBe(0);
    const t = JSON.parse(created.stdout);
    expect(t.createdBy).toMatchObject({ type: "token" });
    const shown = await runCli(["task", "show", t.id, "--json"], tenv);
    expect(JSON.parse(shown.stdout).id).toBe(t.id);
    const wrong = await runCli(["task", "list", "--org", "some-other-org"], tenv);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("AO_TOKEN belongs to organization admin-org");
  });

  test("--wait in CI: follows the task live with the token and exits with its outcome", async () => {
    const token = await makeToken(s, owner);
    const tenv = { AO_CONFIG_DIR: newConfigDir(), AO_SERVER: s.url, AO_TOKEN: token };
    for (const [title, to, code] of [["ci ok", "completed", 0], ["ci broken", "failed", 1], ["ci asks", "needs_approval", 3]] as const) {
      const cli = spawnCli(["task", "create", "--project", projectId, "--title", title, "--prompt", "go", "--wait"], tenv);
      const [, id] = await cli.waitFor(/^Created task (tsk_\w+): /m);
      await cli.waitFor(/^#1 .* status queued by Admin \(token test-\d+\)$/m);
      await move(id!, "running");
      await move(id!, to, to === "needs_approval" ? { needs: JSON.stringify({ kind: "approval", message: "Ship it?" }) } : { finished_at: new Date().toISOString() });
      const r = await cli.done;
      expect({ title, code: r.code, stderr: r.stderr }).toEqual({ title, code, stderr: "" });
    }
  });

  test("a viewer's token cannot create tasks: exit 1 forbidden", async () => {
    const token = await makeToken(s, owner, owner.orgId, "viewer");
    const r = await runCli(["task", "create", "--project", projectId, "--title", "T", "--prompt", "P"], { AO_CONFIG_DIR: newConfigDir(), AO_SERVER: s.url, AO_TOKEN: token });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ao: forbidden: /);
  });
});
