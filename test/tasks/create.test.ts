// POST /orgs/:orgId/tasks and GET /orgs/:orgId/tasks/:taskId: validation, roles, records.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeProject, makeWorld, type World } from "./fixtures";
import { LINE_MESSAGE, TEXT_MESSAGE } from "../../src/lib/text";
import { all, get } from "../../src/db/query";
import { Value } from "@sinclair/typebox/value";
import { TaskRecord } from "../../src/modules/tasks/model";

let s: TestServer;
let w: World;
/** A project with a repository, for reviews (w.project has none). */
let reviewed: { id: string };
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
  reviewed = await makeProject(s, w.owner, "reviewed", { repositories: [{ url: "https://example.com/acme/app.git" }] });
});
afterAll(() => s.stop());

const taskCount = async () => (await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM tasks")))!.n;

const base = () => ({ projectId: w.project.id, title: "Fix the login page", prompt: "The button does nothing." });

describe("create a task", () => {
  test("the full record comes back, 201, with defaults; GET shows the same", async () => {
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: base() });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      orgId: w.owner.orgId,
      projectId: w.project.id,
      title: "Fix the login page",
      prompt: "The button does nothing.",
      priority: "MEDIUM",
      kind: "task",
      review: null,
      status: "queued",
      attempt: 0,
      workerId: null,
      worker: null,
      parentId: null,
      createdBy: { type: "user", id: w.owner.userId, name: "Admin" },
      summary: null,
      needs: null,
      plan: null,
      artifacts: [],
      startedAt: null,
      finishedAt: null,
    });
    expect(r.body.id).toMatch(/^tsk_[0-9a-z]{26}$/);
    expect(Date.parse(r.body.createdAt)).toBeGreaterThan(0);
    const got = await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${r.body.id}`, { token: w.viewer.accessToken });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(r.body);
    const events = await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${r.body.id}/events`, { token: w.viewer.accessToken });
    expect(events.body.items).toEqual([
      { seq: 1, type: "status", at: r.body.createdAt, actor: { type: "user", id: w.owner.userId, name: "Admin" }, data: { from: null, to: "queued" } },
    ]);
  });

  test("review and plan kinds, priorities", async () => {
    const review = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, {
      token: w.member.accessToken,
      body: { ...base(), projectId: reviewed.id, kind: "review", review: { base: "main", head: "feature/x" }, priority: "HIGH" },
    });
    expect(review.status).toBe(201);
    expect(review.body).toMatchObject({ kind: "review", review: { base: "main", head: "feature/x" }, priority: "HIGH" });
    for (const priority of ["LOW", "MEDIUM", "HIGH", "URGENT"]) {
      const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.member.accessToken, body: { ...base(), kind: "plan", priority } });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ kind: "plan", priority });
    }
  });

  test("a token creates as itself", async () => {
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.ownerToken, body: base() });
    expect(r.status).toBe(201);
    expect(r.body.createdBy.type).toBe("token");
    expect(r.body.createdBy.id).toMatch(/^tok_/);
  });

  // The create's answer is documented but not checked by Elysia on the way out (for speed): this
  // checks it against the schema of the OpenAPI document, for each kind and kind of caller.
  test("every create answers a task record as the OpenAPI document describes it, without other fields", async () => {
    const bodies = [base(), { ...base(), projectId: reviewed.id, kind: "review", review: { base: "main", head: "feature/y" } }, { ...base(), kind: "plan", priority: "URGENT" }];
    for (const body of bodies) {
      for (const token of [w.owner.accessToken, w.ownerToken]) {
        const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token, body });
        expect(r.status).toBe(201);
        expect([...Value.Errors(TaskRecord, r.body)].map((e) => `${e.path}: ${e.message}`)).toEqual([]);
      }
    }
  });

  // Each row: a body that must be refused with 400 validation_failed naming the field.
  const bad: [string, () => Record<string, unknown>, string][] = [
    ["no projectId", () => ({ title: "t", prompt: "p" }), "projectId"],
    ["no title", () => ({ projectId: w.project.id, prompt: "p" }), "title"],
    ["no prompt", () => ({ projectId: w.project.id, title: "t" }), "prompt"],
    ["empty title", () => ({ ...base(), title: "" }), "title"],
    ["blank title", () => ({ ...base(), title: "   " }), "title"],
    ["title of 201", () => ({ ...base(), title: "x".repeat(201) }), "title"],
    ["title of two lines", () => ({ ...base(), title: "first\nsecond" }), "title"],
    ["title with a tab", () => ({ ...base(), title: "a\tb" }), "title"],
    ["title with a terminal escape", () => ({ ...base(), title: "\u001b]0;owned\u0007fix" }), "title"],
    ["title with a C1 control", () => ({ ...base(), title: "a\u009bb" }), "title"],
    ["title with a line separator", () => ({ ...base(), title: "a\u2028b" }), "title"],
    ["title with a paragraph separator", () => ({ ...base(), title: "a\u2029b" }), "title"],
    ["empty prompt", () => ({ ...base(), prompt: "" }), "prompt"],
    ["blank prompt", () => ({ ...base(), prompt: " \n\t " }), "prompt"],
    ["prompt of 100001", () => ({ ...base(), prompt: "x".repeat(100_001) }), "prompt"],
    ["lower-case priority", () => ({ ...base(), priority: "high" }), "priority"],
    ["unknown priority", () => ({ ...base(), priority: "CRITICAL" }), "priority"],
    ["unknown kind", () => ({ ...base(), kind: "epic" }), "kind"],
    ["review without review", () => ({ ...base(), kind: "review" }), "review"],
    ["review without head", () => ({ ...base(), kind: "review", review: { base: "main" } }), "review.head"],
    ["title a number", () => ({ ...base(), title: 42 }), "title"],
    ["unknown project", () => ({ ...base(), projectId: "prj_01m819v1ygz3m9djq19vdk2xkt" }), "projectId"],
    ["project of another org", () => ({ ...base(), projectId: w.otherProject.id }), "projectId"],
  ];
  for (const [name, body, field] of bad) {
    test(`400: ${name}`, async () => {
      const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: body() });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe("validation_failed");
      expect(JSON.stringify(r.body.error.details)).toContain(field);
    });
  }

  test("a title that is not one line is refused saying so, and nothing is created", async () => {
    const before = await taskCount();
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { ...base(), title: "one\r\ntwo" } });
    expect(r.status).toBe(400);
    expect(r.body.error.details).toEqual([{ field: "title", message: LINE_MESSAGE }]);
    expect(await taskCount()).toBe(before);
  });

  test("a prompt of only spaces and line breaks is refused saying so; one with text around them is kept as it is", async () => {
    const before = await taskCount();
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { ...base(), prompt: "   \n  " } });
    expect(r.status).toBe(400);
    expect(r.body.error.details).toEqual([{ field: "prompt", message: TEXT_MESSAGE }]);
    expect(await taskCount()).toBe(before);
    const kept = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { ...base(), prompt: "\n  indented\n" } });
    expect([kept.status, kept.body.prompt]).toEqual([201, "\n  indented\n"]);
  });

  test("a prompt with a NUL character is refused saying so on either database (PostgreSQL's text cannot hold one: it answered 500)", async () => {
    const before = await taskCount();
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { ...base(), prompt: "fix it\u0000now" } });
    expect([r.status, r.body.error?.code]).toEqual([400, "validation_failed"]);
    expect(r.body.error.details).toEqual([{ field: "prompt", message: TEXT_MESSAGE }]);
    expect(await taskCount()).toBe(before);
  });

  test("a title in any script, with symbols and emoji, is fine", async () => {
    const title = "Réparer l'API — 修复 — إصلاح 🚀 <b>&amp;</b>";
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { ...base(), title } });
    expect(r.status).toBe(201);
    expect(r.body.title).toBe(title);
  });

  test("prompt of exactly 100000 and title of 200 are fine", async () => {
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, {
      token: w.owner.accessToken,
      body: { ...base(), title: "t".repeat(200), prompt: "p".repeat(100_000) },
    });
    expect(r.status).toBe(201);
  });

  test("an unknown field is refused, naming it (a misspelled priority must not silently give MEDIUM)", async () => {
    const before = await taskCount();
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { ...base(), colour: "red" } });
    expect(r.status).toBe(400);
    expect(r.body.error.details).toEqual([expect.objectContaining({ field: "colour" })]);
    expect(await taskCount()).toBe(before);
  });

  test("malformed JSON is 400", async () => {
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: "{not json" });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
  });

  test("a review in a project without a repository: 400 naming kind and why, nothing created (it would review nothing)", async () => {
    const before = await taskCount();
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { ...base(), kind: "review", review: { base: "main", head: "feature/x" } } });
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({
      code: "validation_failed",
      message: "a review task needs a repository to review, and the project has none: add one to the project first",
      details: [{ field: "kind", message: "review needs a project with a repository" }],
    });
    expect(await taskCount()).toBe(before);
  });

  test("an archived project takes no new tasks: 409 conflict", async () => {
    const p = await makeProject(s, w.owner, "to-archive");
    expect((await s.api("DELETE", `/orgs/${w.owner.orgId}/projects/${p.id}`, { token: w.owner.accessToken })).status).toBe(200);
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { ...base(), projectId: p.id } });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("conflict");
  });

  // Who may create: [caller, expected status]
  const callers: [string, () => string | undefined, number][] = [
    ["owner", () => w.owner.accessToken, 201],
    ["admin", () => w.admin.accessToken, 201],
    ["member", () => w.member.accessToken, 201],
    ["viewer", () => w.viewer.accessToken, 403],
    ["viewer's token", () => w.viewerToken, 403],
    ["owner's token", () => w.ownerToken, 201],
    ["owner of another org", () => w.other.accessToken, 404],
    ["token of another org", () => w.otherToken, 403],
    ["nobody", () => undefined, 401],
    ["garbage bearer", () => "not-a-token", 401],
  ];
  for (const [who, token, status] of callers) {
    test(`${who} -> ${status}`, async () => {
      const before = await taskCount();
      const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: token(), body: base() });
      expect(r.status).toBe(status);
      const after = await taskCount();
      expect(after - before).toBe(status === 201 ? 1 : 0);
    });
  }

  test("parallel creates share commits, yet a refused one fails alone (group commit)", async () => {
    const archived = await makeProject(s, w.owner, "archived-for-batch");
    await s.api("DELETE", `/orgs/${w.owner.orgId}/projects/${archived.id}`, { token: w.owner.accessToken });
    const bodies = Array.from({ length: 60 }, (_, i) =>
      i % 3 === 1
        ? { ...base(), projectId: archived.id, title: `bad ${i}` }
        : i % 3 === 2
          ? { ...base(), projectId: "prj_01m819v1ygz3m9djq19vdk2xkt", title: `bad ${i}` }
          : { ...base(), title: `good ${i}` },
    );
    const answers = await Promise.all(bodies.map((body) => s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.ownerToken, body })));
    expect(answers.map((a) => a.status)).toEqual(bodies.map((_, i) => (i % 3 === 0 ? 201 : i % 3 === 1 ? 409 : 400)));
    const stored = (await s.core.store.read(all<{ title: string }>("SELECT title FROM tasks WHERE title LIKE 'good %' OR title LIKE 'bad %'")))
      .map((r) => r.title)
      .sort();
    expect(stored).toEqual(bodies.filter((_, i) => i % 3 === 0).map((b) => b.title).sort());
    for (const a of answers.filter((a) => a.status === 201)) {
      const events = await s.core.store.read(all<{ seq: number }>("SELECT seq FROM task_events WHERE task_id = ?", a.body.id));
      expect(events).toEqual([{ seq: 1 }]);
    }
  });

  test("GET of an unknown task is 404", async () => {
    const r = await s.api("GET", `/orgs/${w.owner.orgId}/tasks/tsk_01m819v1yqhsryfjy69tbbabjs`, { token: w.owner.accessToken });
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe("not_found");
  });
});
