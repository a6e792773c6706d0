// The in-memory caches of the hot paths (issue 14): worker credentials, API tokens, project
// policies and the project a claim carries. Each test first makes the server cache the row (a
// request that reads it), then changes it, and checks that the very next request sees the change:
// through the API (the in-process writers clear the cache) and through a second connection to the
// same file, as another process such as the admin CLI would write (PRAGMA data_version).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { makeToken, newOrg } from "../helpers/identity";
import { STEADY, ProtocolClient, createTaskApi, makeWorker, orgWithProject, workerApi } from "./helpers";
import { principalFromApiToken } from "../../src/modules/auth/principal";
import { all, type Op } from "../../src/db/query";

let s: TestServer;

beforeAll(async () => {
  s = await startTestServer({ workerTimeouts: STEADY });
});
afterAll(() => s.stop());

// A write by another process is seen through SQLite's PRAGMA data_version; on PostgreSQL only
// the servers' own writers make the caches forget (over the bus), so those tests are SQLite's.
/** A write through another connection to the server's database file. */
function fromOutside(sql: string, ...args: (string | number | null)[]) {
  const other = new Database(join(s.dataDir, "ao.db"));
  try {
    other.query(sql).run(...args);
  } finally {
    other.close();
  }
}

async function claimOffered(c: ProtocolClient, credential: string, taskId: string) {
  const offer = await c.next("offer", (m) => m.taskId === taskId);
  const r = await workerApi(s, credential)("POST", `/worker/tasks/${taskId}/claim`, { offerId: offer.offerId });
  expect(r.status).toBe(200);
  c.running.push({ taskId, attempt: r.body.attempt }); // its heartbeats report it, so it is not taken as lost
  return r.body;
}

describe("worker credentials", () => {
  test("revoked through the API: the next request with the cached credential is 401, and nothing changes", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const w = await makeWorker(s, p.orgId);
    const api = workerApi(s, w.credential);
    expect((await api("GET", "/worker/me")).status).toBe(200);
    expect((await api("GET", "/worker/me")).status).toBe(200); // served from the cache
    expect((await s.api("DELETE", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token })).status).toBe(200);
    const after = await api("GET", "/worker/me");
    expect(after.status).toBe(401);
    expect(after.body.error.code).toBe("unauthorized");
    expect((await api("POST", "/worker/repos", { repositories: [] })).status).toBe(401);
  });

  test.skipIf(onPostgres)("revoked by another process on the same database: refused on the next request", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const w = await makeWorker(s, p.orgId);
    const api = workerApi(s, w.credential);
    expect((await api("GET", "/worker/me")).status).toBe(200);
    fromOutside("UPDATE workers SET revoked_at = ? WHERE id = ?", new Date().toISOString(), w.workerId);
    expect((await api("GET", "/worker/me")).status).toBe(401);
  });

  test("a label change through the API reaches the next claim's eligibility and the record", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const w = await makeWorker(s, p.orgId, { name: "before" });
    const api = workerApi(s, w.credential);
    expect((await api("GET", "/worker/me")).body.name).toBe("before");
    expect((await s.api("PATCH", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token, body: { name: "after" } })).status).toBe(200);
    expect((await api("GET", "/worker/me")).body.name).toBe("after");
  });
});

describe("API tokens", () => {
  test.skipIf(onPostgres)("a role lowered by another process applies to the next request (403), nothing created", async () => {
    const owner = await newOrg(s);
    const p = await orgWithProject(s, owner);
    const token = await makeToken(s, owner);
    const create = () => s.api("POST", `/orgs/${p.orgId}/tasks`, { token, body: { projectId: p.projectId, title: "t", prompt: "p" } });
    expect((await create()).status).toBe(201); // the token row is now cached
    const before = await s.api("GET", `/orgs/${p.orgId}/tasks?limit=100`, { token });
    fromOutside("UPDATE memberships SET role = 'viewer' WHERE org_id = ? AND user_id = ?", p.orgId, owner.userId);
    const refused = await create();
    expect(refused.status).toBe(403);
    const after = await s.api("GET", `/orgs/${p.orgId}/tasks?limit=100`, { token });
    expect(after.body.items.length).toBe(before.body.items.length);
  });

  test("deleted: the next request is 401", async () => {
    const owner = await newOrg(s);
    const made = await s.api("POST", "/me/tokens", { token: owner.accessToken, body: { name: "c", orgId: owner.orgId } });
    expect(made.status).toBe(201);
    expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: made.body.token })).status).toBe(200);
    expect((await s.api("DELETE", `/me/tokens/${made.body.id}`, { token: owner.accessToken })).status).toBeLessThan(300);
    expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: made.body.token })).status).toBe(401);
  });

  test("a read on its way while the token is deleted is not kept: the next request is 401", async () => {
    const owner = await newOrg(s);
    const made = await s.api("POST", "/me/tokens", { token: owner.accessToken, body: { name: "c", orgId: owner.orgId } });
    // A request's lookup, stepped by hand as a PostgreSQL read would be: it asks for the row...
    const lookup = principalFromApiToken(s.core, made.body.token);
    const query = lookup.next().value as Extract<Op, { sql: string }>;
    const row = await s.core.store.read(all<unknown>(query.sql, ...query.params));
    // ...the token is deleted before the answer arrives...
    expect((await s.api("DELETE", `/me/tokens/${made.body.id}`, { token: owner.accessToken })).status).toBeLessThan(300);
    // ...and the lookup ends with the row read before. That request was concurrent with the
    // revocation; the row must not outlive it in the cache.
    let step = lookup.next(row[0]);
    while (!step.done) step = lookup.next({ changes: 1 });
    expect(step.value).toMatchObject({ kind: "token", tokenId: made.body.id });
    expect((await s.api("GET", `/orgs/${owner.orgId}`, { token: made.body.token })).status).toBe(401);
  });
});

describe("people", () => {
  test("a new name reaches the next claim's co-author and the next answer to a token's create", async () => {
    const owner = await newOrg(s);
    const p = await orgWithProject(s, owner);
    const token = await makeToken(s, owner);
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential, { capacity: 4 });
    const create = () => s.api("POST", `/orgs/${p.orgId}/tasks`, { token, body: { projectId: p.projectId, title: "t", prompt: "p" } });
    const first = await create(); // the token row and, at the claim, its owner are now cached
    expect(first.body.createdBy.name).toStartWith(`${owner.email} (token `);
    expect((await claimOffered(c, w.credential, first.body.id)).task.createdBy).toEqual({ name: owner.email.split("@")[0], email: owner.email });
    expect((await s.api("PATCH", "/me", { token: owner.accessToken, body: { name: "Grace Hopper" } })).status).toBe(200);
    const second = await create();
    expect(second.body.createdBy.name).toStartWith("Grace Hopper (token ");
    expect((await claimOffered(c, w.credential, second.body.id)).task.createdBy).toEqual({ name: "Grace Hopper", email: owner.email });
    c.close();
  });

  test("a revoked token's queued task is claimed with no co-author, as before the token's owner was cached", async () => {
    const owner = await newOrg(s);
    const p = await orgWithProject(s, owner);
    const made = await s.api("POST", "/me/tokens", { token: owner.accessToken, body: { name: "ci", orgId: owner.orgId } });
    const create = () => s.api("POST", `/orgs/${p.orgId}/tasks`, { token: made.body.token, body: { projectId: p.projectId, title: "t", prompt: "p" } });
    const first = (await create()).body;
    const second = (await create()).body;
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential, { capacity: 1 });
    const claim = await claimOffered(c, w.credential, first.id);
    expect(claim.task.createdBy).toEqual({ name: owner.email.split("@")[0], email: owner.email });
    expect((await s.api("DELETE", `/me/tokens/${made.body.id}`, { token: owner.accessToken })).status).toBe(204);
    // The slot frees: the second task is offered and claimed after the revocation.
    expect((await workerApi(s, w.credential)("POST", `/worker/tasks/${first.id}/transition`, { leaseToken: claim.leaseToken, to: "completed" })).status).toBe(200);
    c.running.length = 0;
    expect((await claimOffered(c, w.credential, second.id)).task.createdBy).toBeNull();
    c.close();
  });
});

describe("projects", () => {
  test("a policy that starts requiring a label stops offers to unlabelled workers at once", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential, { capacity: 4 });
    const first = await createTaskApi(s, p);
    await claimOffered(c, w.credential, first.id); // the project's (empty) labels are cached
    const r = await s.api("PATCH", `/orgs/${p.orgId}/projects/${p.projectId}`, { token: p.token, body: { policy: { workerLabels: ["gpu"] } } });
    expect(r.status).toBe(200);
    const second = await createTaskApi(s, p);
    expect(await c.quiet("offer", 400)).toBe(true);
    const g = await makeWorker(s, p.orgId, { labels: ["gpu"] });
    const cg = await ProtocolClient.connect(s, g.credential);
    expect((await cg.next("offer")).taskId).toBe(second.id);
    cg.close();
    c.close();
  });

  test("the project a claim carries follows knowledge and repository changes", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential, { capacity: 4 });
    const t1 = await createTaskApi(s, p);
    const c1 = await claimOffered(c, w.credential, t1.id);
    expect(c1.project.knowledge).toBe("");
    expect(c1.project.repositories).toEqual([]);
    expect((await s.api("PATCH", `/orgs/${p.orgId}/projects/${p.projectId}`, { token: p.token, body: { knowledge: "use bun" } })).status).toBe(200);
    const added = await s.api("POST", `/orgs/${p.orgId}/projects/${p.projectId}/repositories`, { token: p.token, body: { url: "https://example.com/acme/app.git" } });
    expect(added.status).toBe(201);
    const t2 = await createTaskApi(s, p);
    const c2 = await claimOffered(c, w.credential, t2.id);
    expect(c2.project.knowledge).toBe("use bun");
    expect(c2.project.repositories.map((r: { url: string }) => r.url)).toEqual(["https://example.com/acme/app.git"]);
    c.close();
  });

  test("a task record's allowance follows a budget change on the next read (the policy is cached with the project)", async () => {
    const p = await orgWithProject(s, await newOrg(s), { budget: { perTaskUsd: 0.5 } });
    const task = await createTaskApi(s, p);
    const read = async () => (await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token })).body;
    expect((await read()).allowanceUsd).toBe(0.5);
    expect((await read()).allowanceUsd).toBe(0.5); // the policy from the cache
    const page = await s.api("GET", `/orgs/${p.orgId}/tasks`, { token: p.token });
    expect(page.body.items[0].allowanceUsd).toBe(0.5);
    expect((await s.api("PATCH", `/orgs/${p.orgId}/projects/${p.projectId}`, { token: p.token, body: { policy: { budget: { perTaskUsd: 2 } } } })).status).toBe(200);
    expect((await read()).allowanceUsd).toBe(2);
    expect((await s.api("GET", `/orgs/${p.orgId}/tasks`, { token: p.token })).body.items[0].allowanceUsd).toBe(2);
    if (!onPostgres) {
      fromOutside("UPDATE projects SET policy = ? WHERE id = ?", JSON.stringify({ budget: { perTaskUsd: 3 } }), p.projectId);
      expect((await read()).allowanceUsd).toBe(3);
    }
  });

  test.skipIf(onPostgres)("the project a claim carries follows a change by another process", async () => {
    const p = await orgWithProject(s, await newOrg(s));
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential, { capacity: 4 });
    const t1 = await createTaskApi(s, p);
    expect((await claimOffered(c, w.credential, t1.id)).project.knowledge).toBe(""); // the project is cached
    fromOutside("UPDATE projects SET knowledge = 'use node' WHERE id = ?", p.projectId);
    const t2 = await createTaskApi(s, p);
    expect((await claimOffered(c, w.credential, t2.id)).project.knowledge).toBe("use node");
    c.close();
  });
});
