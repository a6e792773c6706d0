// Cross-org isolation for every task and project route: a person or token of another org gets
// 404 (or 403 for a token naming an org it does not belong to), sees nothing, changes nothing.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeProject, makeTask, makeWorld, putInState, type World } from "./fixtures";
import { storeArtifact } from "../../src/modules/tasks/artifacts";
import { all } from "../../src/db/query";

let s: TestServer;
let w: World;
// Our org's resources, which the other org must not reach.
let ids: { project: string; repo: string; repo2: string; task: string; plan: string; otherProjectOfTheirs: string; theirRepo: string };

beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
  const p = await makeProject(s, w.owner, "ours", { repositories: [{ url: "https://github.com/us/a" }, { url: "https://github.com/us/b" }] });
  const task = await makeTask(s, w.owner, p.id);
  await storeArtifact(s.core, w.owner.orgId, task.id, "report.txt", new Blob(["ours"]), 1);
  const plan = await makeTask(s, w.owner, p.id, { kind: "plan" });
  await putInState(s, plan.id, "completed", { plan: JSON.stringify({ tasks: [{ title: "t", prompt: "p" }] }) });
  const theirs = await makeProject(s, w.other, "theirs-2", { repositories: [{ url: "https://github.com/them/x" }] });
  ids = { project: p.id, repo: p.repositories[0].id, repo2: p.repositories[1].id, task: task.id, plan: plan.id, otherProjectOfTheirs: theirs.id, theirRepo: theirs.repositories[0].id };
});
afterAll(() => s.stop());

// Every route, with our ids; {org} is replaced by the org in the path.
const routes: [string, (org: string) => string, () => unknown][] = [
  ["GET", (o) => `/orgs/${o}/tasks`, () => undefined],
  ["POST", (o) => `/orgs/${o}/tasks`, () => ({ projectId: ids.project, title: "t", prompt: "p" })],
  ["GET", (o) => `/orgs/${o}/tasks/${ids.task}`, () => undefined],
  ["GET", (o) => `/orgs/${o}/tasks/${ids.task}/events`, () => undefined],
  ["POST", (o) => `/orgs/${o}/tasks/${ids.task}/actions`, () => ({ action: "cancel" })],
  ["GET", (o) => `/orgs/${o}/tasks/${ids.task}/artifacts/report.txt`, () => undefined],
  ["POST", (o) => `/orgs/${o}/tasks/${ids.plan}/apply-plan`, () => undefined],
  ["GET", (o) => `/orgs/${o}/projects`, () => undefined],
  ["POST", (o) => `/orgs/${o}/projects`, () => ({ name: "intruder" })],
  ["GET", (o) => `/orgs/${o}/projects/${ids.project}`, () => undefined],
  ["PATCH", (o) => `/orgs/${o}/projects/${ids.project}`, () => ({ name: "pwned" })],
  ["DELETE", (o) => `/orgs/${o}/projects/${ids.project}`, () => undefined],
  ["POST", (o) => `/orgs/${o}/projects/${ids.project}/repositories`, () => ({ url: "https://github.com/evil/x" })],
  ["POST", (o) => `/orgs/${o}/projects/${ids.otherProjectOfTheirs}/repositories`, () => ({ fromProjectId: ids.project, repositoryId: ids.repo })],
  ["PATCH", (o) => `/orgs/${o}/projects/${ids.project}/repositories/${ids.repo2}`, () => ({ primary: true })],
  ["POST", (o) => `/orgs/${o}/projects/${ids.project}/repositories/${ids.repo}/split`, () => undefined],
];

/** Everything about our org that a route could change. */
async function snapshot() {
  const org = w.owner.orgId;
  return JSON.stringify([
    await s.core.store.read(all("SELECT id, status, last_seq, updated_at FROM tasks WHERE org_id = ? ORDER BY id", org)),
    await s.core.store.read(all("SELECT id, name, archived, updated_at FROM projects WHERE org_id = ? ORDER BY id", org)),
    await s.core.store.read(all("SELECT id, project_id, name, is_primary FROM repositories WHERE org_id = ? ORDER BY id", org)),
  ]);
}

const leaks = (body: unknown) => {
  const text = JSON.stringify(body);
  return [ids.task, ids.project, ids.repo, ids.plan, w.owner.orgId].some((id) => text.includes(id));
};

describe("another org's person and token", () => {
  for (const [method, path, body] of routes) {
    const label = `${method} ${path.toString().replace(/^.*?`(.*)`$/s, "$1").replace("${o}", ":orgId").replace(/\$\{ids\.(\w+)\}/g, ":$1")}`;
    test(label, async () => {
      const before = await snapshot();
      // Their person, naming our org: not a member -> 404 (the org's existence is not revealed).
      const a = await s.api(method, path(w.owner.orgId), { token: w.other.accessToken, body: body() });
      expect([label, "person/our org", a.status]).toEqual([label, "person/our org", 404]);
      // Their token, naming our org: a token works only in its own org -> 403.
      const b = await s.api(method, path(w.owner.orgId), { token: w.otherToken, body: body() });
      expect([label, "token/our org", b.status]).toEqual([label, "token/our org", 403]);
      // Their person and token, in their own org, with our ids: 404 (lists: nothing of ours; creates: refused or theirs).
      for (const token of [w.other.accessToken, w.otherToken]) {
        const c = await s.api(method, path(w.other.orgId), { token, body: body() });
        if (method === "GET" && (path("x").endsWith("/tasks") || path("x").endsWith("/projects"))) {
          expect(c.status).toBe(200);
        } else if (label === "POST /orgs/:orgId/tasks") {
          expect(c.status).toBe(400); // our project is not a project of theirs
        } else if (label === "POST /orgs/:orgId/projects") {
          expect(c.status === 201 || c.status === 409).toBe(true); // a project of their own
        } else {
          expect([label, "their org", c.status]).toEqual([label, "their org", 404]);
        }
        expect(leaks(c.body)).toBe(false);
      }
      expect(leaks(a.body) || leaks(b.body)).toBe(false);
      expect(await snapshot()).toBe(before);
    });
  }
});

describe("the same routes work for us (so the refusals above are not an accident)", () => {
  test("our owner reaches every resource", async () => {
    for (const [method, path] of routes.filter(([m]) => m === "GET")) {
      const r = await s.api(method, path(w.owner.orgId), { token: w.owner.accessToken });
      expect([path(w.owner.orgId), r.status]).toEqual([path(w.owner.orgId), 200]);
    }
  });
});
