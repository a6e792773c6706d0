// POST /orgs/:orgId/tasks/:id/apply-plan: once (201), then the same tasks (200), also under
// many parallel calls; the refusals of SPEC §5.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeProject, makeTask, makeWorld, putInState, type World } from "./fixtures";
import { parsePlan } from "../../src/modules/tasks/plan";
import type { ApiError } from "../../src/server/errors";
import { all, get, isUniqueViolation, run } from "../../src/db/query";

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
});
afterAll(() => s.stop());

const PLAN = {
  tasks: [
    { title: "Add the schema", prompt: "Create the table." },
    { title: "Write the API", prompt: "Routes for it.", priority: "HIGH" },
    { title: "Plan the UI", prompt: "Sketch it.", kind: "plan", priority: "LOW" },
  ],
};

async function completedPlan(plan: unknown = PLAN, projectId = w.project.id, extra: Record<string, unknown> = {}) {
  const t = await makeTask(s, w.owner, projectId, { kind: "plan", title: "Plan the feature", ...extra });
  await putInState(s, t.id, "completed", { plan: JSON.stringify(plan) });
  return t.id as string;
}

const apply = (id: string, token = w.member.accessToken, org = w.owner.orgId) => s.api("POST", `/orgs/${org}/tasks/${id}/apply-plan`, { token });
const children = (id: string) =>
  s.core.store.read(all<{ id: string; plan_index: number }>("SELECT id, plan_index FROM tasks WHERE parent_id = ? ORDER BY plan_index", id));

describe("apply a plan", () => {
  test("201 with the tasks the first time, in the plan's project, with parentId and createdBy plan", async () => {
    const id = await completedPlan();
    const r = await apply(id);
    expect(r.status).toBe(201);
    expect(r.body.tasks).toHaveLength(3);
    expect(r.body.tasks.map((t: Record<string, unknown>) => [t.title, t.prompt, t.priority, t.kind])).toEqual([
      ["Add the schema", "Create the table.", "MEDIUM", "task"],
      ["Write the API", "Routes for it.", "HIGH", "task"],
      ["Plan the UI", "Sketch it.", "LOW", "plan"],
    ]);
    for (const t of r.body.tasks) {
      expect(t).toMatchObject({ projectId: w.project.id, parentId: id, createdBy: { type: "plan", id }, status: "queued", orgId: w.owner.orgId });
    }
    // The children's first event names who applied the plan; the plan's timeline records it.
    const ev = await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${r.body.tasks[0].id}/events`, { token: w.owner.accessToken });
    expect(ev.body.items[0]).toMatchObject({ type: "status", actor: { type: "user", id: w.member.userId } });
    const planEvents = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}/events`, { token: w.owner.accessToken })).body.items;
    expect(planEvents.at(-1)).toMatchObject({ type: "plan", data: { applied: r.body.tasks.map((t: { id: string }) => t.id) } });
    // parentId filter lists them.
    const listed = await s.api("GET", `/orgs/${w.owner.orgId}/tasks?parentId=${id}`, { token: w.viewer.accessToken });
    expect(listed.body.items.map((t: { id: string }) => t.id).sort()).toEqual(r.body.tasks.map((t: { id: string }) => t.id).sort());
  });

  test("200 with the same tasks afterwards, nothing new created", async () => {
    const id = await completedPlan();
    const first = await apply(id);
    const again = await apply(id, w.ownerToken);
    expect(again.status).toBe(200);
    expect(again.body.tasks.map((t: { id: string }) => t.id)).toEqual(first.body.tasks.map((t: { id: string }) => t.id));
    expect(await children(id)).toHaveLength(3);
  });

  test("50 parallel calls create one set of children: exactly one 201, the rest 200 with the same ids", async () => {
    const id = await completedPlan();
    const answers = await Promise.all(Array.from({ length: 50 }, () => apply(id)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses.filter((x) => x === 201)).toHaveLength(1);
    expect(statuses.filter((x) => x === 200)).toHaveLength(49);
    const ids = (await children(id)).map((c) => c.id);
    expect(ids).toHaveLength(3);
    for (const a of answers) expect(a.body.tasks.map((t: { id: string }) => t.id)).toEqual(ids);
    expect((await children(id)).map((c) => c.plan_index)).toEqual([0, 1, 2]);
  });

  test("the database itself refuses a second child at the same plan index (the cross-process backstop)", async () => {
    const id = await completedPlan();
    await apply(id);
    const child = (await children(id))[0].id;
    // Every column but the id, copied from the child (the columns read from its row, on either store).
    const row = (await s.core.store.read(get<Record<string, unknown>>("SELECT * FROM tasks WHERE id = ?", child)))!;
    const cols = Object.keys(row).filter((c) => c !== "id").map((c) => `"${c}"`).join(", ");
    const error = await s.core.store.write(run(`INSERT INTO tasks (id, ${cols}) SELECT 'tsk_duplicate', ${cols} FROM tasks WHERE id = ?`, child)).then(
      () => null,
      (e: unknown) => e,
    );
    expect(isUniqueViolation(error)).toBe(true);
  });

  test("the tasks take the plan's agent, unless one names its own; a plan that names none leaves them to the project's choice", async () => {
    const plan = { tasks: [{ title: "Write it", prompt: "p" }, { title: "Review it", prompt: "p", agent: "claude" }] };
    const withAgent = await apply(await completedPlan(plan, w.project.id, { agent: "codex" }));
    expect(withAgent.status).toBe(201);
    expect(withAgent.body.tasks.map((t: { agent: string | null }) => t.agent)).toEqual(["codex", "claude"]);
    const withoutAgent = await apply(await completedPlan(plan));
    expect(withoutAgent.body.tasks.map((t: { agent: string | null }) => t.agent)).toEqual([null, "claude"]);
    // The plan as the API shows it keeps the item's agent, so a person sees it before applying.
    const shown = await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${withAgent.body.tasks[0].parentId}`, { token: w.viewer.accessToken });
    expect(shown.body.plan.tasks[1].agent).toBe("claude");
  });

  test("an empty plan applies to nothing: 200 {tasks: []}", async () => {
    const id = await completedPlan({ tasks: [] });
    const r = await apply(id);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ tasks: [] });
  });
});

describe("refusals", () => {
  test("not a plan -> 400", async () => {
    const t = await makeTask(s, w.owner, w.project.id);
    await putInState(s, t.id, "completed");
    const r = await apply(t.id);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
  });

  for (const status of ["queued", "running", "paused", "needs_input", "needs_approval", "failed", "cancelled"] as const) {
    test(`a plan that is ${status} -> 409 conflict`, async () => {
      const t = await makeTask(s, w.owner, w.project.id, { kind: "plan" });
      if (status !== "queued") await putInState(s, t.id, status, { plan: JSON.stringify(PLAN) });
      const r = await apply(t.id);
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe("conflict");
      expect(await children(t.id)).toHaveLength(0);
    });
  }

  test("a completed plan without a task list -> 409", async () => {
    const id = await completedPlan(null);
    expect((await apply(id)).status).toBe(409);
    const bad = await completedPlan({ tasks: [{ title: "", prompt: "x" }] });
    const r = await apply(bad);
    expect(r.status).toBe(409);
    expect(JSON.stringify(r.body.error.details)).toContain("plan.tasks.0.title");
  });

  test("the plan's project was archived -> 409, nothing created", async () => {
    const p = await makeProject(s, w.owner, "archived-later");
    const id = await completedPlan(PLAN, p.id);
    await s.api("DELETE", `/orgs/${w.owner.orgId}/projects/${p.id}`, { token: w.owner.accessToken });
    expect((await apply(id)).status).toBe(409);
    expect(await children(id)).toHaveLength(0);
  });

  test("a body with fields -> 400 naming them, nothing created: apply-plan picks no tasks, it applies the whole plan", async () => {
    const id = await completedPlan();
    for (const body of [{ tasks: [0, 2] }, { indexes: [1], dryRun: true }]) {
      const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks/${id}/apply-plan`, { token: w.member.accessToken, body });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe("validation_failed");
      expect(r.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual(Object.keys(body).sort());
    }
    expect(await children(id)).toHaveLength(0);
    // An empty object is no request of anything: the plan applies.
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks/${id}/apply-plan`, { token: w.member.accessToken, body: {} });
    expect(r.status).toBe(201);
    expect(await children(id)).toHaveLength(3);
  });

  test("a plan proposing a review in a project without a repository -> 400 naming the review items, nothing created; applied once the project has one", async () => {
    const project = await makeProject(s, w.owner, `bare-${Math.random().toString(36).slice(2, 8)}`);
    const review = { title: "Review it", prompt: "p", kind: "review", review: { base: "main", head: "feature/x" } };
    const id = await completedPlan({ tasks: [{ title: "Write it", prompt: "p" }, review, review] }, project.id);
    const r = await apply(id);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
    expect(r.body.error.message).toBe("the plan proposes a review, and its project has no repository to review: add one to the project, then apply the plan");
    expect(r.body.error.details).toEqual([1, 2].map((i) => ({ field: `plan.tasks.${i}.kind`, message: "review needs a project with a repository" })));
    expect(await children(id)).toHaveLength(0);
    const added = await s.api("POST", `/orgs/${w.owner.orgId}/projects/${project.id}/repositories`, { token: w.owner.accessToken, body: { url: "https://example.com/acme/app.git" } });
    expect(added.status).toBe(201);
    expect((await apply(id)).status).toBe(201);
    expect(await children(id)).toHaveLength(3);
  });

  test("an applied plan is not run again: restart -> 409 conflict, nothing changed (its next plan would not match the tasks made)", async () => {
    const id = await completedPlan();
    const made = (await apply(id)).body.tasks.map((t: { id: string }) => t.id);
    const before = await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}`, { token: w.owner.accessToken });
    const seq = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}/events`, { token: w.owner.accessToken })).body.items.at(-1).seq;
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks/${id}/actions`, { token: w.member.accessToken, body: { action: "restart" } });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("conflict");
    expect(r.body.error.message).toContain("its tasks were created");
    const after = await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}`, { token: w.owner.accessToken });
    expect(after.body).toEqual(before.body);
    expect((await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}/events?after=${seq}`, { token: w.owner.accessToken })).body.items).toEqual([]);
    expect((await apply(id)).body.tasks.map((t: { id: string }) => t.id)).toEqual(made);
    // A plan nobody applied yet may run again.
    const fresh = await completedPlan();
    expect((await s.api("POST", `/orgs/${w.owner.orgId}/tasks/${fresh}/actions`, { token: w.member.accessToken, body: { action: "restart" } })).status).toBe(200);
  });

  test("viewer 403, another org 404, another org's token 403, unknown task 404", async () => {
    const id = await completedPlan();
    expect((await apply(id, w.viewer.accessToken)).status).toBe(403);
    expect((await apply(id, w.viewerToken)).status).toBe(403);
    expect((await apply(id, w.other.accessToken)).status).toBe(404);
    expect((await apply(id, w.other.accessToken, w.other.orgId)).status).toBe(404);
    expect((await apply(id, w.otherToken)).status).toBe(403);
    expect((await apply(id, w.otherToken, w.other.orgId)).status).toBe(404);
    expect((await apply("tsk_01m819v1yqhsryfjy69tbbabjs")).status).toBe(404);
    expect(await children(id)).toHaveLength(0);
  });
});

describe("parsePlan (what a worker may report)", () => {
  test("normalises a good plan", () => {
    expect(parsePlan({ tasks: [{ title: " t ", prompt: "p", kind: "review", review: { base: "main", head: "x" }, agent: "codex" }] })).toEqual({
      tasks: [{ title: "t", prompt: "p", kind: "review", review: { base: "main", head: "x" }, agent: "codex" }],
    });
  });
  test("a title an agent wrote over several lines, or with escapes, is made one line", () => {
    expect(parsePlan({ tasks: [{ title: " Add\n\tthe cache \u001b[31mnow\u001b[0m\u001b]0;title\u0007\r\n", prompt: "p" }] }).tasks[0]!.title).toBe("Add the cache now");
  });
  test("drops the fields the plan schema does not name, an item's and its refs' alike", () => {
    const plan = { notes: "n", tasks: [{ title: "t", prompt: "p", kind: "review", review: { base: "main", head: "x", extra: 1 }, description: "d" }] };
    expect(parsePlan(plan)).toEqual({ tasks: [{ title: "t", prompt: "p", kind: "review", review: { base: "main", head: "x" } }] });
    expect(plan.tasks[0]!.description).toBe("d"); // the caller's value is left as it was
  });
  test("a refusal is the SPEC's 400 naming each item's field at fault and saying what it takes", () => {
    let refusal: unknown;
    try {
      parsePlan({ tasks: [{ title: "\n\t", prompt: "p" }, { title: "t", prompt: "p", review: { base: "main", head: "x" } }, { title: "t", prompt: "p", priority: "SOON" }] });
    } catch (err) {
      refusal = (err as ApiError).toBody();
    }
    const title = "must be 1 to 200 characters, not only spaces and control characters (made one line)";
    expect(refusal).toEqual({
      error: {
        code: "validation_failed",
        message: `the request body is invalid: plan.tasks.0.title ${title}; plan.tasks.1.review only with kind review; plan.tasks.2.priority must be one of LOW, MEDIUM, HIGH, URGENT`,
        details: [
          { field: "plan.tasks.0.title", message: title },
          { field: "plan.tasks.1.review", message: "only with kind review" },
          { field: "plan.tasks.2.priority", message: "must be one of LOW, MEDIUM, HIGH, URGENT" },
        ],
      },
    });
  });
  const bad: [string, unknown][] = [
    ["not an object", "plan"],
    ["a title of only control characters", { tasks: [{ title: "\n\t\u0007", prompt: "p" }] }],
    ["no tasks", {}],
    ["tasks not a list", { tasks: {} }],
    ["a task without prompt", { tasks: [{ title: "t" }] }],
    ["a title of 201", { tasks: [{ title: "x".repeat(201), prompt: "p" }] }],
    ["a bad priority", { tasks: [{ title: "t", prompt: "p", priority: "high" }] }],
    ["a bad kind", { tasks: [{ title: "t", prompt: "p", kind: "epic" }] }],
    ["an unknown agent", { tasks: [{ title: "t", prompt: "p", agent: "gpt" }] }],
    ["a review without refs", { tasks: [{ title: "t", prompt: "p", kind: "review" }] }],
    ["refs on a task of another kind", { tasks: [{ title: "t", prompt: "p", review: { base: "main", head: "x" } }] }],
    ["a ref git would read as an option", { tasks: [{ title: "t", prompt: "p", kind: "review", review: { base: "main", head: "-x" } }] }],
    ["a prompt of only NULs", { tasks: [{ title: "t", prompt: "\u0000" }] }],
    ["101 tasks", { tasks: Array.from({ length: 101 }, () => ({ title: "t", prompt: "p" })) }],
  ];
  for (const [name, plan] of bad) {
    test(`refuses ${name}`, () => {
      expect(() => parsePlan(plan)).toThrow();
    });
  }
});
