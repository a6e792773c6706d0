// Removing a repository from a project (DELETE .../repositories/:repositoryId): the primary passes
// to the next one added, tasks keep their record, workers' clones of it stop being tracked and a
// repository accepted from a worker's workspace is listed as discovered again.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeProject, makeTask, makeWorld, type World } from "../tasks/fixtures";
import { makeWorker, workerApi } from "../workers/helpers";
import { all } from "../../src/db/query";

let s: TestServer;
let w: World;
let org: string;
let n = 0;
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
  org = w.owner.orgId;
});
afterAll(() => s.stop());

const api = (method: string, path: string, body?: unknown, token = w.member.accessToken) => s.api(method, `/orgs/${org}${path}`, { token, body });
const fresh = (urls: string[] = []) => makeProject(s, w.owner, `remove-test-${++n}`, { repositories: urls.map((url) => ({ url })) });
const remove = (projectId: string, repositoryId: string, token?: string) => api("DELETE", `/projects/${projectId}/repositories/${repositoryId}`, undefined, token);
const rows = (projectId: string) =>
  s.core.store.read(all<{ id: string; is_primary: number }>("SELECT id, is_primary FROM repositories WHERE project_id = ? ORDER BY id", projectId));

describe("remove a repository", () => {
  test("a non-primary: 200 {project without it, repository}; the primary stays", async () => {
    const p = await fresh(["https://github.com/a/one", "https://github.com/a/two", "https://github.com/a/three"]);
    const [one, two, three] = p.repositories;
    const r = await remove(p.id, two.id);
    expect(r.status).toBe(200);
    expect(r.body.repository).toEqual({ ...two, primary: false });
    expect(r.body.project.repositories).toEqual([one, three]);
    expect(r.body.project.updatedAt >= p.updatedAt).toBe(true);
    expect(await rows(p.id)).toEqual([
      { id: one.id, is_primary: 1 },
      { id: three.id, is_primary: 0 },
    ]);
    // Gone: a second removal and any change to it are 404.
    expect((await remove(p.id, two.id)).status).toBe(404);
    expect((await api("PATCH", `/projects/${p.id}/repositories/${two.id}`, { name: "x" })).status).toBe(404);
  });

  test("the primary: the next one added becomes primary; the last one leaves a project without repositories", async () => {
    const p = await fresh(["https://github.com/a/first", "https://github.com/a/second", "https://github.com/a/third"]);
    const [first, second, third] = p.repositories;
    const r = await remove(p.id, first.id);
    expect(r.status).toBe(200);
    expect(r.body.project.repositories).toEqual([{ ...second, primary: true }, third]);
    expect((await rows(p.id)).filter((x) => x.is_primary).map((x) => x.id)).toEqual([second.id]);
    expect((await remove(p.id, second.id)).body.project.repositories).toEqual([{ ...third, primary: true }]);
    expect((await remove(p.id, third.id)).body.project.repositories).toEqual([]);
    expect((await api("GET", `/projects/${p.id}`)).body.repositories).toEqual([]);
  });

  test("tasks already created keep their record and timeline; new tasks are still taken", async () => {
    const p = await fresh(["https://github.com/a/kept"]);
    const t = await makeTask(s, w.member, p.id);
    const before = (await api("GET", `/tasks/${t.id}`)).body;
    const events = (await api("GET", `/tasks/${t.id}/events`)).body.items;
    expect((await remove(p.id, p.repositories[0].id)).status).toBe(200);
    expect((await api("GET", `/tasks/${t.id}`)).body).toEqual(before);
    expect((await api("GET", `/tasks/${t.id}/events`)).body.items).toEqual(events);
    expect((await makeTask(s, w.member, p.id)).status).toBe("queued");
  });

  test("a worker's clone record of it goes; a repository accepted from a worker's workspace is discovered again", async () => {
    const worker = await makeWorker(s, org);
    const url = "https://git.example.test/team/found.git";
    expect((await workerApi(s, worker.credential)("POST", "/worker/repos", { repos: [{ path: "/ws/found", url }] })).body).toEqual({ known: 0, discovered: 1 });
    const found = (await api("GET", "/discovered", undefined, w.owner.accessToken)).body.items.find((d: { url: string }) => d.url === url);
    const p = await fresh(["https://github.com/a/stays"]);
    const accepted = await api("POST", "/discovered/accept", { ids: [found.id], projectId: p.id }, w.owner.accessToken);
    expect(accepted.status).toBe(200);
    const repo = accepted.body.projects[0].repositories.find((x: { url: string }) => x.url === url);
    expect((await api("GET", `/projects/${p.id}/repositories/${repo.id}/clones`)).body.items).toMatchObject([{ workerId: worker.workerId, status: "cloned" }]);
    expect((await api("GET", "/discovered")).body.items.map((d: { id: string }) => d.id)).not.toContain(found.id);

    expect((await remove(p.id, repo.id)).status).toBe(200);
    expect(await s.core.store.read(all("SELECT 1 FROM worker_repositories WHERE repository_id = ?", repo.id))).toEqual([]);
    expect((await api("GET", `/projects/${p.id}/repositories/${repo.id}/clones`)).status).toBe(404);
    const again = (await api("GET", "/discovered")).body.items.find((d: { id: string }) => d.id === found.id);
    expect(again).toMatchObject({ url, workers: [{ workerId: worker.workerId, path: "/ws/found" }] });
    // And it can be accepted again.
    expect((await api("POST", "/discovered/accept", { ids: [found.id], projectId: p.id }, w.owner.accessToken)).status).toBe(200);
  });
});

describe("refusals change nothing", () => {
  test("viewer and viewer's token 403", async () => {
    const p = await fresh(["https://github.com/a/x"]);
    for (const token of [w.viewer.accessToken, w.viewerToken]) {
      const r = await remove(p.id, p.repositories[0].id, token);
      expect(r.status).toBe(403);
      expect(r.body.error.code).toBe("forbidden");
    }
    expect(await rows(p.id)).toEqual([{ id: p.repositories[0].id, is_primary: 1 }]);
  });

  test("another org's repository is 404 from everywhere; unknown and another project's repository 404", async () => {
    const theirs = await makeProject(s, w.other, `theirs-${++n}`, { repositories: [{ url: "https://github.com/them/secret" }] });
    const repoId = theirs.repositories[0].id;
    // Through our org, under their project id or one of ours.
    const ours = await fresh(["https://github.com/a/ours"]);
    for (const r of [await remove(theirs.id, repoId), await remove(ours.id, repoId, w.owner.accessToken)]) {
      expect(r.status).toBe(404);
      expect(r.body.error.code).toBe("not_found");
    }
    // Their people on our project, and our people on their org's path.
    expect((await s.api("DELETE", `/orgs/${w.other.orgId}/projects/${ours.id}/repositories/${ours.repositories[0].id}`, { token: w.other.accessToken })).status).toBe(404);
    expect((await s.api("DELETE", `/orgs/${w.other.orgId}/projects/${theirs.id}/repositories/${repoId}`, { token: w.owner.accessToken })).status).toBe(404);
    expect(await rows(theirs.id)).toEqual([{ id: repoId, is_primary: 1 }]);
    expect(await rows(ours.id)).toHaveLength(1);

    const other = await fresh(["https://github.com/a/elsewhere"]);
    expect((await remove(ours.id, other.repositories[0].id)).status).toBe(404);
    expect((await remove(ours.id, "rep_01m819v1yh4kj1exevnvcjgs4y")).status).toBe(404);
    expect((await remove("prj_01m819v1ygz3m9djq19vdk2xkt", ours.repositories[0].id)).status).toBe(404);
    expect(await rows(other.id)).toHaveLength(1);
  });

  test("an archived project: 409 conflict", async () => {
    const p = await fresh(["https://github.com/a/archived"]);
    await api("DELETE", `/projects/${p.id}`, undefined, w.owner.accessToken);
    const r = await remove(p.id, p.repositories[0].id);
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe("conflict");
    expect(await rows(p.id)).toHaveLength(1);
  });

  test("no credential: 401 before anything else", async () => {
    const p = await fresh(["https://github.com/a/anon"]);
    const r = await s.api("DELETE", `/orgs/${org}/projects/${p.id}/repositories/${p.repositories[0].id}`);
    expect(r.status).toBe(401);
    expect(await rows(p.id)).toHaveLength(1);
  });
});
