// Contradictory bodies are refused, not half applied (issue 8 item 2): where a body offers
// alternatives (add or move a repository, kind review or not, the input action or another, the
// worker's needs_* targets or another, after or cursor, github/gitlab or signed JSON settings,
// the web client's cookie or a body token), a body that mixes them is 400 validation_failed naming
// the fields, and nothing changes.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { newOrg } from "../helpers/identity";
import { FAST, ProtocolClient, addRepositoryRow, createTaskApi, makeWorker, orgWithProject, workerApi } from "../workers/helpers";
import { makeIntegration, svcSignature } from "../integrations/fixtures";
import { all } from "../../src/db/query";

let s: TestServer;
let p: Awaited<ReturnType<typeof orgWithProject>>;
let other: Awaited<ReturnType<typeof orgWithProject>>;
let movable: string;

beforeAll(async () => {
  s = await startTestServer({ workerTimeouts: FAST });
  p = await orgWithProject(s);
  other = await orgWithProject(s, p.session);
  const added = await s.api("POST", `/orgs/${p.orgId}/projects/${other.projectId}/repositories`, { token: p.token, body: { url: "https://example.test/a/movable.git" } });
  expect(added.status).toBe(201);
  movable = added.body.repository.id;
});
afterAll(() => s.stop());

/** Everything these requests could change, as one comparable value. */
async function snapshot() {
  const q = (sql: string) => s.core.store.read(all(sql));
  return {
    tasks: await q("SELECT id, status, kind, review, needs FROM tasks ORDER BY id"),
    events: await q("SELECT task_id, seq FROM task_events ORDER BY task_id, seq"),
    repositories: await q("SELECT id, project_id, url, name, branch, is_primary FROM repositories ORDER BY id"),
    integrations: await q("SELECT id, config FROM integrations ORDER BY id"),
  };
}

async function refused(method: string, path: string, body: unknown, fields: string[], opts: { token?: string; headers?: Record<string, string> } = {}) {
  const before = await snapshot();
  const r = await s.api(method, path, { token: opts.token ?? p.token, body, headers: opts.headers });
  expect([r.status, r.body?.error?.code]).toEqual([400, "validation_failed"]);
  expect(r.body.error.details.map((d: { field: string }) => d.field).sort()).toEqual([...fields].sort());
  expect(await snapshot()).toEqual(before);
  return r.body.error as { message: string; details: { field: string; message: string }[] };
}

describe("tasks", () => {
  const task = (extra: Record<string, unknown>) => ({ projectId: p.projectId, title: "t", prompt: "do it", ...extra });

  test("review with kind task, or with no kind (task), is refused naming review", async () => {
    const e = await refused("POST", `/orgs/${p.orgId}/tasks`, task({ kind: "task", review: { base: "main", head: "fix" } }), ["review"]);
    expect(e.details[0].message).toContain("only with kind review");
    await refused("POST", `/orgs/${p.orgId}/tasks`, task({ review: { base: "main", head: "fix" } }), ["review"]);
    await refused("POST", `/orgs/${p.orgId}/tasks`, task({ kind: "plan", review: { base: "main", head: "fix" } }), ["review"]);
  });

  test("a review with its range, and a task without one, are still created", async () => {
    const reviewed = await orgWithProject(s, p.session);
    await addRepositoryRow(s, p.orgId, reviewed.projectId, "https://example.test/a/reviewed.git");
    const review = task({ kind: "review", review: { base: "main", head: "fix" }, projectId: reviewed.projectId });
    expect((await s.api("POST", `/orgs/${p.orgId}/tasks`, { token: p.token, body: review })).status).toBe(201);
    expect((await s.api("POST", `/orgs/${p.orgId}/tasks`, { token: p.token, body: task({ kind: "task" }) })).status).toBe(201);
  });

  test("input with an action other than input is refused; the task stays as it was", async () => {
    const t = await createTaskApi(s, p);
    const e = await refused("POST", `/orgs/${p.orgId}/tasks/${t.id}/actions`, { action: "cancel", input: "never mind" }, ["input"]);
    expect(e.details[0].message).toContain("only with action input");
    expect((await s.api("POST", `/orgs/${p.orgId}/tasks/${t.id}/actions`, { token: p.token, body: { action: "cancel", reason: "r" } })).status).toBe(200);
  });

  test("events with both after and cursor are refused", async () => {
    const t = await createTaskApi(s, p);
    const r = await s.api("GET", `/orgs/${p.orgId}/tasks/${t.id}/events?after=0&cursor=1`, { token: p.token });
    expect([r.status, r.body.error.details[0].field]).toEqual([400, "cursor"]);
    expect((await s.api("GET", `/orgs/${p.orgId}/tasks/${t.id}/events?after=0`, { token: p.token })).status).toBe(200);
  });
});

describe("repositories: add ({url}) or move in ({fromProjectId, repositoryId}), not both", () => {
  const path = () => `/orgs/${p.orgId}/projects/${p.projectId}/repositories`;

  test("url with a move names the move's fields; nothing is added or moved", async () => {
    const e = await refused("POST", path(), { url: "https://example.test/a/b.git", fromProjectId: other.projectId, repositoryId: movable }, ["fromProjectId", "repositoryId"]);
    expect(e.message).toContain("not both");
  });

  test("a move with name or branch names them", async () => {
    await refused("POST", path(), { fromProjectId: other.projectId, repositoryId: movable, name: "x", branch: "dev" }, ["name", "branch"]);
  });

  test("half a move names the missing half", async () => {
    await refused("POST", path(), { fromProjectId: other.projectId }, ["repositoryId"]);
    await refused("POST", path(), { repositoryId: movable }, ["fromProjectId"]);
  });

  test("neither form says what to give", async () => {
    const e = await refused("POST", path(), {}, ["url"]);
    expect(e.message).toBe("give either url (with name and branch if wanted), or fromProjectId and repositoryId");
  });

  test("an unknown field is refused by name", async () => {
    await refused("POST", path(), { url: "https://example.test/a/c.git", primary: true }, ["primary"]);
  });

  test("each form alone still works", async () => {
    const added = await s.api("POST", path(), { token: p.token, body: { url: "https://example.test/a/d.git", branch: "dev" } });
    expect(added.status).toBe(201);
    const moved = await s.api("POST", path(), { token: p.token, body: { fromProjectId: other.projectId, repositoryId: movable } });
    expect([moved.status, moved.body.repository.id]).toEqual([201, movable]);
  });
});

describe("integrations", () => {
  test("a label or command on a signed JSON integration is refused (they are for github and gitlab)", async () => {
    const body = { kind: "signed_json", name: "ci", projectId: p.projectId, config: { label: "ao" } };
    await refused("POST", `/orgs/${p.orgId}/integrations`, body, ["config.label"]);
    const made = await s.api("POST", `/orgs/${p.orgId}/integrations`, { token: p.token, body: { kind: "signed_json", name: "ci", projectId: p.projectId } });
    expect(made.status).toBe(201);
    await refused("PATCH", `/orgs/${p.orgId}/integrations/${made.body.id}`, { config: { command: "/go" } }, ["config.command"]);
  });
});

describe("signed JSON deliveries", () => {
  test("review with kind task is refused; no task is made", async () => {
    const hook = await makeIntegration(s, p.session, { kind: "signed_json", name: "json", projectId: p.projectId });
    const before = await snapshot();
    const raw = JSON.stringify({ title: "t", prompt: "p", kind: "task", review: { base: "main", head: "fix" } });
    const res = await fetch(`${s.url}/api/v1/hooks/${hook.id}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-signature": svcSignature(hook.secret, raw), "x-svc-delivery": crypto.randomUUID() },
      body: raw,
    });
    const body = (await res.json()) as any;
    expect([res.status, body.error.details.map((d: { field: string }) => d.field)]).toEqual([400, ["review"]]);
    expect((await snapshot()).tasks).toEqual(before.tasks);
  });
});

describe("sign-in", () => {
  test("a web client's refresh with a refreshToken in the body is refused (the cookie is the token)", async () => {
    await refused("POST", "/auth/refresh", { refreshToken: p.session.refreshToken }, ["refreshToken"], { token: "", headers: { "x-client": "web" } });
  });
});

describe("worker protocol", () => {
  test("needs with a target other than needs_input or needs_approval is refused; the task stays running", async () => {
    const q = await orgWithProject(s, await newOrg(s)); // its own org: no other queued task is offered
    const w = await makeWorker(s, q.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const t = await createTaskApi(s, q);
    const offer = await c.next("offer", (m) => m.taskId === t.id);
    const api = workerApi(s, w.credential);
    const claim = await api("POST", `/worker/tasks/${t.id}/claim`, { offerId: offer.offerId });
    expect(claim.status).toBe(200);
    const before = await snapshot();
    const r = await api("POST", `/worker/tasks/${t.id}/transition`, { leaseToken: claim.body.leaseToken, to: "completed", needs: { message: "sure?" } });
    expect([r.status, r.body.error.details.map((d: { field: string }) => d.field)]).toEqual([400, ["needs"]]);
    expect(await snapshot()).toEqual(before);
    expect((await api("POST", `/worker/tasks/${t.id}/transition`, { leaseToken: claim.body.leaseToken, to: "completed" })).status).toBe(200);
    c.close();
  });

  test("a plan item with review but kind task is refused naming it; the plan task stays running", async () => {
    const q = await orgWithProject(s, await newOrg(s));
    const w = await makeWorker(s, q.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const t = await createTaskApi(s, q, { kind: "plan" });
    const offer = await c.next("offer", (m) => m.taskId === t.id);
    const api = workerApi(s, w.credential);
    const claim = await api("POST", `/worker/tasks/${t.id}/claim`, { offerId: offer.offerId });
    const before = await snapshot();
    const plan = { tasks: [{ title: "a", prompt: "p" }, { title: "b", prompt: "p", kind: "task", review: { base: "main", head: "fix" } }] };
    const r = await api("POST", `/worker/tasks/${t.id}/transition`, { leaseToken: claim.body.leaseToken, to: "completed", plan });
    expect([r.status, r.body.error.details]).toEqual([400, [{ field: "plan.tasks.1.review", message: "only with kind review" }]]);
    expect(await snapshot()).toEqual(before);
    c.close();
  });
});
