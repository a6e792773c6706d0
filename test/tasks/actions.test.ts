// POST /orgs/:orgId/tasks/:taskId/actions: every action in every state (SPEC §5 table), the
// timeline each action leaves, reason and input rules, and who may act.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeProject, makeTask, makeWorld, putInState, type World } from "./fixtures";
import type { TaskStatus } from "../../src/db/schema";
import { all, get } from "../../src/db/query";

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
});
afterAll(() => s.stop());

const STATUSES: TaskStatus[] = ["queued", "running", "paused", "needs_input", "needs_approval", "completed", "failed", "cancelled"];
const ACTIONS = ["pause", "resume", "cancel", "retry", "restart", "input", "approve", "deny"] as const;

// The SPEC's table, written out independently of src/modules/tasks/machine.ts:
// action -> status it is allowed from -> status it leads to. Missing cells are refused.
// (paused tasks here were paused from running by a worker that is still there.)
const EXPECTED: Record<(typeof ACTIONS)[number], Partial<Record<TaskStatus, TaskStatus>>> = {
  pause: { queued: "paused", running: "paused", needs_input: "paused", needs_approval: "paused" },
  resume: { paused: "running" },
  cancel: { queued: "cancelled", running: "cancelled", paused: "cancelled", needs_input: "cancelled", needs_approval: "cancelled" },
  retry: { failed: "queued", cancelled: "queued" },
  restart: {
    running: "queued",
    paused: "queued",
    needs_input: "queued",
    needs_approval: "queued",
    completed: "queued",
    failed: "queued",
    cancelled: "queued",
  },
  input: { needs_input: "running", running: "running" },
  approve: { needs_approval: "running" },
  deny: { needs_approval: "running" },
};

const allowedIn = (status: TaskStatus) => ACTIONS.filter((a) => EXPECTED[a][status] !== undefined);

async function taskIn(status: TaskStatus) {
  const t = await makeTask(s, w.owner, w.project.id);
  if (status !== "queued") await putInState(s, t.id, status);
  return t.id as string;
}

const act = (taskId: string, body: Record<string, unknown>, token = w.member.accessToken) =>
  s.api("POST", `/orgs/${w.owner.orgId}/tasks/${taskId}/actions`, { token, body });

describe("the state table, cell by cell", () => {
  for (const action of ACTIONS) {
    for (const status of STATUSES) {
      const to = EXPECTED[action][status];
      test(`${action} from ${status} -> ${to ?? "409 invalid_transition"}`, async () => {
        const id = await taskIn(status);
        const body = { action, ...(action === "input" ? { input: "use main" } : {}), ...(action === "deny" ? { reason: "too risky" } : {}) };
        const r = await act(id, body);
        if (to) {
          expect(r.status).toBe(200);
          expect(r.body.id).toBe(id);
          expect(r.body.status).toBe(to);
          const events = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}/events`, { token: w.viewer.accessToken })).body.items;
          const actionEvent = events.find((e: { type: string }) => e.type === "action");
          expect(actionEvent).toMatchObject({ actor: { type: "user", id: w.member.userId }, data: { action } });
          if (to !== status) expect(events.at(-1)).toMatchObject({ type: "status", data: { from: status, to } });
          // seqs are 1..n with no gaps
          expect(events.map((e: { seq: number }) => e.seq)).toEqual(events.map((_: unknown, i: number) => i + 1));
        } else {
          expect(r.status).toBe(409);
          expect(r.body.error.code).toBe("invalid_transition");
          expect(r.body.error.details).toEqual({ status, allowedActions: allowedIn(status) });
          const row = (await s.core.store.read(get<{ status: string; last_seq: number }>("SELECT status, last_seq FROM tasks WHERE id = ?", id)))!;
          expect(row.status).toBe(status);
        }
      });
    }
  }
});

describe("resume goes back where pause left it", () => {
  test("paused from queued -> queued", async () => {
    const id = await taskIn("queued");
    expect((await act(id, { action: "pause" })).body.status).toBe("paused");
    expect((await act(id, { action: "resume" })).body.status).toBe("queued");
  });

  test("paused from needs_input (worker still there) -> needs_input", async () => {
    const id = await taskIn("needs_input");
    await act(id, { action: "pause" });
    const r = await act(id, { action: "resume" });
    expect(r.body.status).toBe("needs_input");
    expect(r.body.needs).toEqual({ kind: "input", message: "Which branch?" });
  });

  test("paused from running but the worker is gone -> queued", async () => {
    const id = await taskIn("running");
    await act(id, { action: "pause" });
    await putInState(s, id, "paused", { worker_id: null, paused_from: "running" });
    expect((await act(id, { action: "resume" })).body.status).toBe("queued");
  });
});

describe("what actions leave behind", () => {
  test("cancel sets finishedAt; retry and restart clear the worker and needs", async () => {
    const id = await taskIn("needs_input");
    const cancelled = await act(id, { action: "cancel", reason: "not needed" });
    expect(cancelled.body).toMatchObject({ status: "cancelled", needs: null });
    expect(cancelled.body.finishedAt).not.toBeNull();
    const retried = await act(id, { action: "retry" });
    expect(retried.body).toMatchObject({ status: "queued", workerId: null, finishedAt: null, needs: null });
  });

  test("a new attempt does not wear the last one's results: restart and retry clear summary, needs, plan and startedAt", async () => {
    const plan = (await makeTask(s, w.owner, w.project.id, { kind: "plan" })).id as string;
    await putInState(s, plan, "completed", { summary: "planned", plan: JSON.stringify({ tasks: [{ title: "a", prompt: "b" }] }), started_at: new Date().toISOString() });
    const restarted = await act(plan, { action: "restart" });
    expect(restarted.body).toMatchObject({ status: "queued", summary: null, needs: null, plan: null, startedAt: null, finishedAt: null });
    const failed = await taskIn("failed");
    await putInState(s, failed, "failed", { summary: "half done", started_at: new Date().toISOString() });
    const retried = await act(failed, { action: "retry" });
    expect(retried.body).toMatchObject({ status: "queued", summary: null, startedAt: null });
    // The timeline still has what the last attempt reported.
    const events = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${failed}/events`, { token: w.owner.accessToken })).body.items;
    expect(events.map((e: { type: string; data: any }) => `${e.type} ${e.data.to ?? e.data.action}`)).toEqual(["status queued", "status failed", "status failed", "action retry", "status queued"]);
  });

  test("an archived project runs no more work: retry and restart 409 until it is restored; other actions still apply", async () => {
    const project = await makeProject(s, w.owner, "archived-actions");
    const failed = (await makeTask(s, w.owner, project.id)).id as string;
    await putInState(s, failed, "failed");
    const running = (await makeTask(s, w.owner, project.id)).id as string;
    await putInState(s, running, "running");
    const projectPath = `/orgs/${w.owner.orgId}/projects/${project.id}`;
    expect((await s.api("DELETE", projectPath, { token: w.owner.accessToken })).status).toBe(200);
    for (const [id, action] of [[failed, "retry"], [failed, "restart"], [running, "restart"]] as const) {
      const r = await act(id, { action });
      expect(r.status).toBe(409);
      expect(r.body.error).toMatchObject({ code: "conflict", message: `the project is archived and runs no more work: restore it first (PATCH {archived: false}) to ${action} its tasks` });
    }
    const rows = await s.core.store.read(all<{ status: string; last_seq: number }>("SELECT status, last_seq FROM tasks WHERE id IN (?, ?) ORDER BY id", failed, running));
    expect(rows.map((r) => r.status).sort()).toEqual(["failed", "running"]);
    // Stopping work is still allowed, and a restored project takes its tasks back.
    expect((await act(running, { action: "cancel" })).body.status).toBe("cancelled");
    expect((await s.api("PATCH", projectPath, { token: w.owner.accessToken, body: { archived: false } })).status).toBe(200);
    expect((await act(failed, { action: "retry" })).body.status).toBe("queued");
  });

  test("deny carries the reason, input carries the text, in the action event", async () => {
    const id = await taskIn("needs_approval");
    await act(id, { action: "deny", reason: "do not push to main" });
    await putInState(s, id, "needs_input");
    await act(id, { action: "input", input: "use the release branch" });
    const events = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}/events`, { token: w.owner.accessToken })).body.items;
    const actions = events.filter((e: { type: string }) => e.type === "action").map((e: { data: unknown }) => e.data);
    expect(actions).toEqual([
      { action: "deny", reason: "do not push to main" },
      { action: "input", input: "use the release branch" },
    ]);
  });

  test("updatedAt moves with every change", async () => {
    const id = await taskIn("running");
    const before = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}`, { token: w.owner.accessToken })).body.updatedAt;
    await Bun.sleep(3);
    const after = (await act(id, { action: "pause" })).body.updatedAt;
    expect(after > before).toBe(true);
  });
});

describe("bad requests change nothing", () => {
  const cases: [string, Record<string, unknown>, number, string][] = [
    ["unknown action", { action: "explode" }, 400, "validation_failed"],
    ["no action", {}, 400, "validation_failed"],
    ["reason of 2001 characters", { action: "cancel", reason: "x".repeat(2001) }, 400, "validation_failed"],
    ["reason of 2001 emoji", { action: "cancel", reason: "😀".repeat(2001) }, 400, "validation_failed"],
    ["reason not a string", { action: "cancel", reason: 7 }, 400, "validation_failed"],
    ["input without text", { action: "input" }, 400, "validation_failed"],
    ["input with empty text", { action: "input", input: "" }, 400, "validation_failed"],
    ["input of only spaces", { action: "input", input: "   " }, 400, "validation_failed"],
    ["input of only blank lines and tabs", { action: "input", input: "\n\t \r\n" }, 400, "validation_failed"],
  ];
  for (const [name, body, status, code] of cases) {
    test(`${name} -> ${status} ${code}`, async () => {
      const id = await taskIn("running");
      const r = await act(id, body);
      expect(r.status).toBe(status);
      expect(r.body.error.code).toBe(code);
      const row = (await s.core.store.read(get<{ status: string; last_seq: number }>("SELECT status, last_seq FROM tasks WHERE id = ?", id)))!;
      expect(row).toEqual({ status: "running", last_seq: 2 });
    });
  }

  test("a reason of exactly 2000 characters (or 2000 emoji) is fine", async () => {
    expect((await act(await taskIn("running"), { action: "cancel", reason: "x".repeat(2000) })).status).toBe(200);
    expect((await act(await taskIn("running"), { action: "cancel", reason: "😀".repeat(2000) })).status).toBe(200);
  });

  test("every refusal of a reason names the same limit, 2000 characters", async () => {
    for (const reason of [7, "x".repeat(2001), "x".repeat(9000), "😀".repeat(2001)]) {
      const r = await act(await taskIn("running"), { action: "cancel", reason });
      expect(r.status).toBe(400);
      expect(r.body.error.details).toEqual([{ field: "reason", message: expect.stringMatching(/at most 2000 characters$/) }]);
    }
  });

  test("unknown task -> 404", async () => {
    const r = await act("tsk_01m819v1yqhsryfjy69tbbabjs", { action: "cancel" });
    expect(r.status).toBe(404);
  });
});

describe("who may act (task.control)", () => {
  const callers: [string, () => string, number][] = [
    ["owner", () => w.owner.accessToken, 200],
    ["admin", () => w.admin.accessToken, 200],
    ["member", () => w.member.accessToken, 200],
    ["owner's token", () => w.ownerToken, 200],
    ["viewer", () => w.viewer.accessToken, 403],
    ["viewer's token", () => w.viewerToken, 403],
    ["owner of another org", () => w.other.accessToken, 404],
    ["token of another org", () => w.otherToken, 403],
  ];
  for (const [who, token, status] of callers) {
    test(`${who} -> ${status}`, async () => {
      const id = await taskIn("running");
      const r = await act(id, { action: "pause" }, token());
      expect(r.status).toBe(status);
      const row = (await s.core.store.read(get<{ status: string }>("SELECT status FROM tasks WHERE id = ?", id)))!;
      expect(row.status).toBe(status === 200 ? "paused" : "running");
    });
  }

  test("the token is the actor of its actions", async () => {
    const id = await taskIn("running");
    await act(id, { action: "pause" }, w.ownerToken);
    const events = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${id}/events?after=2`, { token: w.owner.accessToken })).body.items;
    expect(events[0].actor.type).toBe("token");
  });
});
