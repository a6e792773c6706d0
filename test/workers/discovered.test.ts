// Discovered repositories follow what workers report (POST /worker/repos, the full list each
// time): one that no worker has any more is no longer listed, a dismissed one stays dismissed,
// and a revoked worker's repositories stop counting.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, newOrg, type Session } from "../helpers/identity";
import { makeWorker, workerApi } from "./helpers";
import { all, run } from "../../src/db/query";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(() => s.stop());

const listed = async (org: Session) => (await s.api("GET", `/orgs/${org.orgId}/discovered`, { token: org.accessToken })).body.items as any[];
const rowsOf = (org: Session) => s.core.store.read(all<{ url: string; status: string }>("SELECT url, status FROM discovered_repositories WHERE org_id = ? ORDER BY url", org.orgId));

async function reporter(org: Session, name: string) {
  const w = await makeWorker(s, org.orgId, { name });
  const call = workerApi(s, w.credential);
  return {
    id: w.workerId,
    report: async (...repos: [path: string, url: string][]) => {
      const r = await call("POST", "/worker/repos", { repos: repos.map(([path, url]) => ({ path, url })) });
      expect(r.status).toBe(200);
      return r.body;
    },
  };
}

const A = "https://git.example.test/team/alpha.git";
const B = "https://git.example.test/team/beta.git";

describe("a discovered repository lasts while a worker has it", () => {
  test("listed with the workers that have it; gone when the last one no longer reports it; listed anew when reported again", async () => {
    const org = await newOrg(s);
    const one = await reporter(org, "one");
    const two = await reporter(org, "two");
    await one.report(["/w1/alpha", A], ["/w1/beta", B]);
    await two.report(["/w2/alpha", A]);
    const first = await listed(org);
    expect(first.map((d) => [d.url, d.workers.map((x: any) => x.workerId).sort()]).sort()).toEqual([
      [A, [one.id, two.id].sort()],
      [B, [one.id]],
    ]);

    // One moves alpha away and deletes beta: alpha stays (two has it), beta goes.
    await one.report();
    const second = await listed(org);
    expect(second.map((d) => [d.url, d.workers])).toEqual([[A, [{ workerId: two.id, path: "/w2/alpha", seenAt: expect.any(String) }]]]);
    expect((await rowsOf(org)).map((r) => r.url)).toEqual([A]);

    // The last holder of alpha no longer has it: not listed with workers: [], not listed at all.
    await two.report();
    expect(await listed(org)).toEqual([]);
    expect((await rowsOf(org))).toEqual([]);

    // A worker that has it again brings it back.
    await two.report(["/w2/alpha-again", A]);
    expect((await listed(org)).map((d) => [d.url, d.workers.map((x: any) => x.path)])).toEqual([[A, ["/w2/alpha-again"]]]);
  });

  test("a dismissed repository that no worker has stays dismissed when it is reported again", async () => {
    const org = await newOrg(s);
    const one = await reporter(org, "one");
    await one.report(["/w1/alpha", A]);
    const [alpha] = await listed(org);
    expect((await s.api("POST", `/orgs/${org.orgId}/discovered/dismiss`, { token: org.accessToken, body: { ids: [alpha.id] } })).status).toBe(200);
    await one.report();
    expect((await rowsOf(org))).toEqual([{ url: A, status: "dismissed" }]);
    await one.report(["/w1/alpha", A]);
    expect(await listed(org)).toEqual([]);
  });

  test("revoking a worker takes back what it reported; what others have stays", async () => {
    const org = await newOrg(s);
    const one = await reporter(org, "one");
    const two = await reporter(org, "two");
    await one.report(["/w1/alpha", A], ["/w1/beta", B]);
    await two.report(["/w2/beta", B]);
    expect((await s.api("DELETE", `/orgs/${org.orgId}/workers/${one.id}`, { token: org.accessToken })).status).toBe(200);
    const after = await listed(org);
    expect(after.map((d) => [d.url, d.workers.map((x: any) => x.workerId)])).toEqual([[B, [two.id]]]);
    expect((await rowsOf(org)).map((r) => r.url)).toEqual([B]);
  });

  test("a row left without workers by an earlier version is not listed", async () => {
    const org = await newOrg(s);
    const one = await reporter(org, "one");
    await one.report(["/w1/alpha", A], ["/w1/beta", B]);
    await s.core.store.write(run("UPDATE discovered_repositories SET sightings = '[]' WHERE org_id = ? AND url = ?", org.orgId, A));
    expect((await listed(org)).map((d) => d.url)).toEqual([B]);
  });
});

describe("who may act on them", () => {
  test("any member, viewers too (the seed's table: member): a viewer accepts one into a project, another as a project of its own, dismisses a third, and runs a readiness check", async () => {
    const org = await newOrg(s);
    const viewer = await addMember(s, org, "viewer");
    const one = await reporter(org, "one");
    const C = "https://git.example.test/team/gamma.git";
    await one.report(["/w1/alpha", A], ["/w1/beta", B], ["/w1/gamma", C]);
    const byUrl = Object.fromEntries((await listed(org)).map((d) => [d.url, d.id]));
    const project = await s.api("POST", `/orgs/${org.orgId}/projects`, { token: org.accessToken, body: { name: "home" } });
    const as = (path: string, body: unknown) => s.api("POST", `/orgs/${org.orgId}${path}`, { token: viewer.accessToken, body });
    const into = await as("/discovered/accept", { ids: [byUrl[A]], projectId: project.body.id });
    expect(into.status).toBe(200);
    expect(into.body.projects[0].repositories.map((r: { url: string }) => r.url)).toEqual([A]);
    const own = await as("/discovered/accept", { ids: [byUrl[B]] });
    expect([own.status, own.body.projects[0].repositories[0].url]).toEqual([200, B]);
    expect(await as("/discovered/dismiss", { ids: [byUrl[C]] })).toMatchObject({ status: 200, body: { dismissed: [byUrl[C]] } });
    expect(await rowsOf(org)).toEqual([
      { url: A, status: "accepted" },
      { url: B, status: "accepted" },
      { url: C, status: "dismissed" },
    ]);
    // Readiness: past the permission, to the project's own answer (no worker has its primary repository's clone).
    const readiness = await as(`/projects/${project.body.id}/readiness`, {});
    expect([readiness.status, readiness.body.error.code]).toEqual([409, "conflict"]);
  });
});
