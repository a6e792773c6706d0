// Plans from the command line: `ao task show` of a plan lists what it proposes, `ao task
// apply-plan` creates those tasks (the same ones on a second call), `ao task list --parent` lists
// them; the server's refusals exit 1 with its code.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestServer } from "../helpers/server";
import { addMember, makeToken, type Session } from "../helpers/identity";
import { runCli } from "./helpers";
import { startTaskCli, type TaskCli } from "./tasks-fixtures";

let s: TestServer, owner: Session;
let ao: TaskCli["ao"], newTask: TaskCli["newTask"], move: TaskCli["move"];
beforeAll(async () => ({ s, owner, ao, newTask, move } = await startTaskCli()));
afterAll(() => s.stop());

const PLAN = {
  tasks: [
    { title: "Add the schema", prompt: "Create the table.", priority: "HIGH" },
    { title: "Write the API", prompt: "Routes for it.", agent: "codex" },
    { title: "Review the branch", prompt: "Look at it.", kind: "review", review: { base: "main", head: "feature/orders" } },
  ],
};

async function completedPlan(title = "Plan the orders") {
  const id = await newTask(title, { kind: "plan" });
  await move(id, "completed", { plan: JSON.stringify(PLAN) });
  return id;
}

describe("ao task and plans", () => {
  test("show lists the tasks a completed plan proposes, and how to create them", async () => {
    const id = await completedPlan();
    const r = await ao("task", "show", id);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(
      [
        `proposed (ao task apply-plan ${id} creates them):`,
        "  1. Add the schema [HIGH]",
        "  2. Write the API [codex]",
        "  3. Review the branch [review main...feature/orders]",
      ].join("\n"),
    );
  });

  test("apply-plan creates the tasks and lists them; again, the same tasks; list --parent shows them", async () => {
    const id = await completedPlan();
    const first = await ao("task", "apply-plan", id);
    expect(first.stderr).toBe("");
    expect(first.code).toBe(0);
    const children = (await s.api("GET", `/orgs/${owner.orgId}/tasks?parentId=${id}`, { token: owner.accessToken })).body.items as { id: string; title: string }[];
    expect(children.map((c) => c.title).sort()).toEqual(["Add the schema", "Review the branch", "Write the API"]);
    const lines = first.stdout.trimEnd().split("\n");
    expect(lines[0]).toBe(`plan ${id}: 3 tasks`);
    expect(lines[1]).toMatch(/^ID +STATUS +PRIORITY +KIND +UPDATED +TITLE$/);
    expect(lines.slice(2).map((l) => l.split(/ {2,}/)[0])).toEqual(["Add the schema", "Write the API", "Review the branch"].map((t) => children.find((c) => c.title === t)!.id));

    const again = await ao("task", "apply-plan", id, "--json");
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).map((t: { id: string }) => t.id)).toEqual(lines.slice(2).map((l) => l.split(/ {2,}/)[0]));
    expect((await s.api("GET", `/orgs/${owner.orgId}/tasks?parentId=${id}`, { token: owner.accessToken })).body.items).toHaveLength(3);

    const listed = await ao("task", "list", "--parent", id);
    expect(listed.code).toBe(0);
    expect(listed.stdout.trimEnd().split("\n").slice(1).map((l) => l.split(/ {2,}/)[0]).sort()).toEqual(children.map((c) => c.id).sort());
  });

  test("refusals: a plan not completed 409, not a plan 400, a viewer 403, an unknown task 404, no ID exits 2", async () => {
    const queued = await newTask("Plan later", { kind: "plan" });
    const notPlan = await newTask("Just a task");
    const viewer = await addMember(s, owner, "viewer");
    const asViewer = { AO_SERVER: s.url, AO_TOKEN: await makeToken(s, viewer) };
    const plan = await completedPlan("Plan for the viewer");
    const table: [Promise<{ code: number; stdout: string; stderr: string }>, number, RegExp][] = [
      [ao("task", "apply-plan", queued), 1, /^ao: conflict: the plan is queued; only a completed plan can be applied$/m],
      [ao("task", "apply-plan", notPlan), 1, /^ao: validation_failed: only a plan task can be applied/m],
      [runCli(["task", "apply-plan", plan], asViewer), 1, /^ao: forbidden: /m],
      [ao("task", "apply-plan", "tsk_01m819v1yqhsryfjy69tbbabjs"), 1, /^ao: not_found: /m],
      [ao("task", "apply-plan"), 2, /the task ID is required/],
    ];
    for (const [running, code, message] of table) {
      const r = await running;
      expect(r.stderr).toMatch(message);
      expect(r.code).toBe(code);
      expect(r.stdout).toBe("");
    }
    for (const id of [queued, notPlan, plan]) {
      expect((await s.api("GET", `/orgs/${owner.orgId}/tasks?parentId=${id}`, { token: owner.accessToken })).body.items).toEqual([]);
    }
  });
});
