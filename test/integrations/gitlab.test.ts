// GitLab deliveries at POST /hooks/:id, with payloads in the shapes of GitLab's webhook
// documentation (fixtures/gitlab-*.json): X-Gitlab-Token, Issue / Note / Merge Request hooks,
// label changes, commands, bots, duplicates.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { get } from "../../src/db/query";
import { countTasksOf, deliver, makeIntegration, makeWorld, taskRow, type World } from "./fixtures";

const fixture = (name: string) => JSON.parse(readFileSync(join(import.meta.dir, "fixtures", name), "utf8"));

let s: TestServer;
let w: World;
let gl: { id: string; secret: string };
let seq = 0;

beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
  gl = await makeIntegration(s, w.owner, { kind: "gitlab", name: "GitLab", projectId: w.projectId });
  // A merge request's review task needs a repository in the project to review.
  expect((await s.api("POST", `/orgs/${w.owner.orgId}/projects/${w.projectId}/repositories`, { token: w.owner.accessToken, body: { url: "https://gitlab.example.com/acme/app.git" } })).status).toBe(201);
});
afterAll(() => s.stop());

function send(event: string, payload: unknown, opts: { token?: string; uuid?: string; idempotencyKey?: string; id?: string } = {}) {
  const headers: Record<string, string> = {
    "x-gitlab-event": event,
    "x-gitlab-event-uuid": opts.uuid ?? `uuid-${Date.now()}-${++seq}`,
    "user-agent": "GitLab/18.0.0",
  };
  if (opts.token !== null) headers["x-gitlab-token"] = opts.token ?? gl.secret;
  if (opts.idempotencyKey) headers["idempotency-key"] = opts.idempotencyKey;
  return deliver(s, opts.id ?? gl.id, typeof payload === "string" ? payload : JSON.stringify(payload), headers);
}

describe("Issue Hook", () => {
  test("the label added (changes.labels) -> 201 task; again -> duplicate", async () => {
    const payload = fixture("gitlab-issue-hook.json");
    const r = await send("Issue Hook", payload);
    expect(r.status).toBe(201);
    const row = await taskRow(s, r.body.taskId);
    expect(row.title).toBe(payload.object_attributes.title);
    expect(row.prompt).toContain(payload.object_attributes.description);
    expect(row.prompt).toContain(payload.object_attributes.url);
    expect(row.created_by_type).toBe("integration");
    expect(JSON.parse(row.source)).toMatchObject({
      integrationId: gl.id,
      integrationKind: "gitlab",
      item: { type: "gitlab_issue", id: "301", url: payload.object_attributes.url, number: 23 },
    });
    expect(await send("Issue Hook", payload)).toEqual({ status: 200, body: { status: "duplicate", taskId: r.body.taskId } });
  });

  test("an issue opened with the label -> task; Confidential Issue Hook too", async () => {
    const payload = fixture("gitlab-issue-hook.json");
    delete payload.changes;
    payload.object_attributes.action = "open";
    payload.object_attributes.id = 302;
    expect((await send("Issue Hook", payload)).status).toBe(201);
    payload.object_attributes.id = 303;
    expect((await send("Confidential Issue Hook", payload)).status).toBe(201);
  });

  const ignoredCases: [string, (p: any) => void][] = [
    ["the label was already there", (p) => p.changes.labels.previous.push(p.changes.labels.current[0])],
    ["another label was added", (p) => (p.changes.labels.current[0].title = "frontend")],
    ["only the title changed", (p) => delete p.changes.labels],
    ["the label was removed", (p) => ([p.changes.labels.previous, p.changes.labels.current] = [p.changes.labels.current, []])],
  ];
  test.each(ignoredCases)("%s -> 200 ignored", async (_, change) => {
    const payload = fixture("gitlab-issue-hook.json");
    payload.object_attributes.id = 400 + ++seq;
    change(payload);
    expect(await send("Issue Hook", payload)).toEqual({ status: 200, body: { status: "ignored", reason: 'the label "ao" was not added' } });
  });

  test("a configured label other than the default", async () => {
    const custom = await makeIntegration(s, w.owner, { kind: "gitlab", name: "custom", projectId: w.projectId, config: { label: "API" } });
    const payload = fixture("gitlab-issue-hook.json");
    // changes.labels: API was there before and ao replaced it: "API" was not added.
    const r = await send("Issue Hook", payload, { id: custom.id, token: custom.secret });
    expect(r.body.status).toBe("ignored");
    [payload.changes.labels.previous, payload.changes.labels.current] = [payload.changes.labels.current, payload.changes.labels.previous];
    expect((await send("Issue Hook", payload, { id: custom.id, token: custom.secret })).status).toBe(201);
  });
});

describe("Note Hook", () => {
  test("a new comment starting with /ao -> task; the same note again -> duplicate", async () => {
    const payload = fixture("gitlab-note-hook-issue.json");
    const r = await send("Note Hook", payload);
    expect(r.status).toBe(201);
    const row = await taskRow(s, r.body.taskId);
    expect(row.title).toBe("add a retry to the flaky upload test");
    expect(row.prompt).toContain("Uploads fail now and then");
    expect(row.prompt).toContain(payload.object_attributes.url);
    expect(await send("Note Hook", payload)).toEqual({ status: 200, body: { status: "duplicate", taskId: r.body.taskId } });
  });

  const ignoredCases: [string, (p: any) => void, string][] = [
    ["no command", (p) => (p.object_attributes.note = "Looks good to me"), "the comment does not start with /ao"],
    ["an edit of a comment", (p) => (p.object_attributes.action = "update"), "note action update is of no interest"],
    ["a system note", (p) => (p.object_attributes.system = true), "system notes are of no interest"],
    ["a project bot", (p) => (p.user.username = "project_5_bot_3f2a9c"), "the comment's author is a bot"],
    ["a group bot", (p) => (p.user.username = "group_4_bot_a1b2"), "the comment's author is a bot"],
    ["GitLab's support bot", (p) => (p.user.username = "support-bot"), "the comment's author is a bot"],
    ["a service account", (p) => (p.user.username = "service_account_group_4_x"), "the comment's author is a bot"],
  ];
  test.each(ignoredCases)("%s -> 200 ignored", async (_, change, reason) => {
    const payload = fixture("gitlab-note-hook-issue.json");
    payload.object_attributes.id = 2000 + ++seq;
    change(payload);
    expect(await send("Note Hook", payload)).toEqual({ status: 200, body: { status: "ignored", reason } });
  });

  test("a note from before GitLab 16.11 (no action field) still counts as new", async () => {
    const payload = fixture("gitlab-note-hook-issue.json");
    payload.object_attributes.id = 3000;
    delete payload.object_attributes.action;
    expect((await send("Note Hook", payload)).status).toBe(201);
  });

  test("a configured command", async () => {
    const custom = await makeIntegration(s, w.owner, { kind: "gitlab", name: "cmd", projectId: w.projectId, config: { command: "@agent" } });
    const payload = fixture("gitlab-note-hook-issue.json");
    expect((await send("Note Hook", payload, { id: custom.id, token: custom.secret })).body.status).toBe("ignored");
    payload.object_attributes.note = "@agent please bisect";
    expect((await send("Note Hook", payload, { id: custom.id, token: custom.secret })).status).toBe(201);
  });
});

describe("Merge Request Hook", () => {
  test("the label added -> review task from source_branch into target_branch", async () => {
    const payload = fixture("gitlab-merge-request-hook.json");
    const r = await send("Merge Request Hook", payload);
    expect(r.status).toBe(201);
    const row = await taskRow(s, r.body.taskId);
    expect(row.kind).toBe("review");
    expect(JSON.parse(row.review)).toEqual({ base: "main", head: "ms-viewport" });
    expect(await send("Merge Request Hook", payload)).toEqual({ status: 200, body: { status: "duplicate", taskId: r.body.taskId } });
  });

  test("a branch git would take for an option or refuse -> 400 naming it, no task", async () => {
    const before = await countTasksOf(s, gl.id);
    for (const [target, source, field] of [
      ["-x", "feature", "object_attributes.target_branch"],
      ["main", "--upload-pack=touch /tmp/pwn", "object_attributes.source_branch"],
    ]) {
      const payload = fixture("gitlab-merge-request-hook.json");
      payload.object_attributes.id += 9000;
      payload.object_attributes.target_branch = target;
      payload.object_attributes.source_branch = source;
      const r = await send("Merge Request Hook", payload);
      expect([r.status, r.body.error.code, r.body.error.details[0].field]).toEqual([400, "validation_failed", field]);
    }
    expect(await countTasksOf(s, gl.id)).toBe(before);
  });
});

describe("authentication and dedupe by delivery", () => {
  test("wrong, missing or near-miss token -> 401; no task", async () => {
    const payload = fixture("gitlab-issue-hook.json");
    payload.object_attributes.id = 7000;
    for (const token of ["aos_wrong", gl.secret.slice(0, -1), gl.secret + "x", gl.secret.toLowerCase(), "", null]) {
      const r = await send("Issue Hook", payload, { token: token as string });
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe("unauthorized");
    }
    expect(await countTasksOf(s, gl.id)).toBeGreaterThan(0);
    expect(await s.core.store.read(get("SELECT 1 FROM tasks WHERE source LIKE '%\"id\":\"7000\"%'"))).toBeUndefined();
  });

  test("an event of no interest (Push Hook) -> ignored", async () => {
    const r = await send("Push Hook", { object_kind: "push", ref: "refs/heads/main", commits: [], total_commits_count: 0 });
    expect(r).toEqual({ status: 200, body: { status: "ignored", reason: "event Push Hook is of no interest" } });
  });

  test("Idempotency-Key (same across GitLab's retries) dedupes before the event UUID", async () => {
    const payload = fixture("gitlab-note-hook-issue.json");
    payload.object_attributes.id = 8000;
    const first = await send("Note Hook", payload, { idempotencyKey: "idem-1", uuid: "u-1" });
    expect(first.status).toBe(201);
    const row = await taskRow(s, first.body.taskId);
    expect(JSON.parse(row.source).deliveryId).toBe("idem-1");
    // A retry: same Idempotency-Key, new event uuid, and the note changed id (to prove the key alone dedupes).
    payload.object_attributes.id = 8001;
    expect(await send("Note Hook", payload, { idempotencyKey: "idem-1", uuid: "u-2" })).toEqual({ status: 200, body: { status: "duplicate", taskId: first.body.taskId } });
  });

  test("disabled -> ignored", async () => {
    await s.api("PATCH", `/orgs/${w.owner.orgId}/integrations/${gl.id}`, { token: w.owner.accessToken, body: { enabled: false } });
    const payload = fixture("gitlab-issue-hook.json");
    payload.object_attributes.id = 9000;
    expect(await send("Issue Hook", payload)).toEqual({ status: 200, body: { status: "ignored", reason: "the integration is disabled" } });
    await s.api("PATCH", `/orgs/${w.owner.orgId}/integrations/${gl.id}`, { token: w.owner.accessToken, body: { enabled: true } });
    expect((await send("Issue Hook", payload)).status).toBe(201);
  });
});
