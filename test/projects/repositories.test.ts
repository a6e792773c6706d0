// Repositories (SPEC §8): add by URL, move in, rename / branch / primary, split; exactly one
// primary per project that has any, on both sides of every move.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeProject, makeWorld, type World } from "../tasks/fixtures";
import { all, get } from "../../src/db/query";

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
const fresh = (urls: string[] = []) => makeProject(s, w.owner, `repo-test-${++n}`, { repositories: urls.map((url) => ({ url })) });
const primaries = async (projectId: string) =>
  (await s.core.store.read(all<{ id: string }>("SELECT id FROM repositories WHERE project_id = ? AND is_primary = 1", projectId))).map((r) => r.id);

describe("add by URL", () => {
  const good: [string, string][] = [
    ["https://github.com/acme/web.git", "web"],
    ["https://github.com/acme/api", "api"],
    ["https://gitlab.example.com:8443/group/sub/tool.git", "tool"],
    ["git@github.com:acme/scp-like.git", "scp-like"],
    ["github.com:acme/no-user", "no-user"],
    ["ssh://git@github.com/acme/ssh-form.git", "ssh-form"],
    ["ssh://git@git.example.com:2222/srv/repos/with-port.git", "with-port"],
    ["git@git.example.com:/srv/absolute.git", "absolute"],
  ];
  test("accepted URLs, with the name derived from the URL; the first becomes primary", async () => {
    const p = await fresh();
    for (const [url, name] of good) {
      const r = await api("POST", `/projects/${p.id}/repositories`, { url });
      expect([url, r.status]).toEqual([url, 201]);
      expect(r.body.repository).toMatchObject({ url, name, branch: "main" });
      expect(r.body.project.id).toBe(p.id);
    }
    const project = (await api("GET", `/projects/${p.id}`)).body;
    expect(project.repositories).toHaveLength(good.length);
    expect(project.repositories.filter((r: { primary: boolean }) => r.primary).map((r: { url: string }) => r.url)).toEqual([good[0][0]]);
    expect(project.repositories[0].primary).toBe(true);
  });

  test("name and branch may be given", async () => {
    const p = await fresh();
    const r = await api("POST", `/projects/${p.id}/repositories`, { url: "https://github.com/acme/x.git", name: "frontend", branch: "release/2.0" });
    expect(r.body.repository).toMatchObject({ name: "frontend", branch: "release/2.0", primary: true });
  });

  const bad: [string, unknown][] = [
    ["http (not https)", { url: "http://github.com/a/b.git" }],
    ["a password in the URL", { url: "https://user:secret@github.com/a/b.git" }],
    ["a token as https user", { url: "https://ghp_token@github.com/a/b.git" }],
    ["git://", { url: "git://github.com/a/b.git" }],
    ["file://", { url: "file:///etc/passwd" }],
    ["a local path", { url: "/srv/repo.git" }],
    ["a relative path", { url: "../repo" }],
    ["an option as host", { url: "-oProxyCommand=touch /tmp/x:a/b" }],
    ["an option as path", { url: "git@github.com:-upload-pack=x" }],
    ["a Windows drive", { url: "C:/repos/x" }],
    ["no path", { url: "https://github.com/" }],
    ["a query string", { url: "https://github.com/a/b?x=1" }],
    ["spaces", { url: "https://github.com/a b/c" }],
    ["an ext:: transport", { url: "ext::sh -c touch% /tmp/pwned" }],
    ["dot-dot segments", { url: "https://github.com/a/../../b" }],
    ["empty", { url: "" }],
    ["too long", { url: `https://github.com/${"a".repeat(2100)}` }],
    ["not a string", { url: 42 }],
    ["a bad branch", { url: "https://github.com/a/b", branch: "-delete" }],
    ["a branch with spaces", { url: "https://github.com/a/b", branch: "my branch" }],
    ["a bad name", { url: "https://github.com/a/b", name: "../up" }],
    ["neither url nor move", { name: "x" }],
  ];
  for (const [name, body] of bad) {
    test(`400: ${name}`, async () => {
      const p = await fresh();
      const r = await api("POST", `/projects/${p.id}/repositories`, body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe("validation_failed");
      expect(await s.core.store.read(get("SELECT 1 FROM repositories WHERE project_id = ?", p.id))).toBeUndefined();
    });
  }

  test("the same URL twice in one project is 409; in two projects it is fine", async () => {
    const p = await fresh(["https://github.com/acme/once.git"]);
    const r = await api("POST", `/projects/${p.id}/repositories`, { url: "https://github.com/acme/once.git" });
    expect(r.status).toBe(409);
    const q = await fresh();
    expect((await api("POST", `/projects/${q.id}/repositories`, { url: "https://github.com/acme/once.git" })).status).toBe(201);
  });

  test("so is the same repository spelled another way (host case, .git, ssh), added, moved in or listed twice at creation; nothing is written", async () => {
    const p = await fresh(["https://github.com/acme/spelled.git"]);
    for (const url of ["https://GitHub.com/acme/spelled", "https://github.com/acme/spelled", "git@github.com:acme/spelled.git", "ssh://git@github.com/acme/spelled"]) {
      const r = await api("POST", `/projects/${p.id}/repositories`, { url });
      expect([url, r.status, r.body.error.message, r.body.error.details]).toEqual([url, 409, "this project already has a repository with this URL", { field: "url" }]);
    }
    const other = await fresh(["git@github.com:acme/spelled.git"]);
    const moved = await api("POST", `/projects/${p.id}/repositories`, { fromProjectId: other.id, repositoryId: other.repositories[0].id });
    expect([moved.status, moved.body.error.details]).toEqual([409, { field: "repositoryId" }]);
    const both = await api("POST", "/projects", { name: `twice-${++n}`, repositories: [{ url: "https://github.com/acme/twice.git" }, { url: "https://github.com/Acme/twice" }] }, w.owner.accessToken);
    expect([both.status, both.body.error.details]).toEqual([409, { field: "repositories.1.url" }]);
    expect((await api("GET", `/projects/${p.id}`)).body.repositories.map((r: { url: string }) => r.url)).toEqual(["https://github.com/acme/spelled.git"]);
    expect((await api("GET", `/projects/${other.id}`)).body.repositories.map((r: { url: string }) => r.url)).toEqual(["git@github.com:acme/spelled.git"]);
    // Another repository of the same owner is another repository.
    expect((await api("POST", `/projects/${p.id}/repositories`, { url: "https://github.com/acme/spelled-too" })).status).toBe(201);
  });

  test("an archived project takes no repositories: 409", async () => {
    const p = await fresh();
    await api("DELETE", `/projects/${p.id}`, undefined, w.owner.accessToken);
    expect((await api("POST", `/projects/${p.id}/repositories`, { url: "https://github.com/a/b" })).status).toBe(409);
  });
});

describe("make primary, rename, change branch", () => {
  test("making one primary unsets the other", async () => {
    const p = await fresh(["https://github.com/a/one", "https://github.com/a/two", "https://github.com/a/three"]);
    const [one, two, three] = p.repositories;
    expect(await primaries(p.id)).toEqual([one.id]);
    const r = await api("PATCH", `/projects/${p.id}/repositories/${three.id}`, { primary: true });
    expect(r.status).toBe(200);
    expect(r.body.repository).toMatchObject({ id: three.id, primary: true });
    expect(await primaries(p.id)).toEqual([three.id]);
    // The primary is listed first.
    expect(r.body.project.repositories.map((x: { id: string }) => x.id)).toEqual([three.id, one.id, two.id]);
    // Making the primary primary again changes nothing.
    expect((await api("PATCH", `/projects/${p.id}/repositories/${three.id}`, { primary: true })).status).toBe(200);
    expect(await primaries(p.id)).toEqual([three.id]);
  });

  test("unsetting the only primary is 409; unsetting a non-primary is a no-op", async () => {
    const p = await fresh(["https://github.com/a/one", "https://github.com/a/two"]);
    const [one, two] = p.repositories;
    const r = await api("PATCH", `/projects/${p.id}/repositories/${one.id}`, { primary: false });
    expect(r.status).toBe(409);
    expect((await api("PATCH", `/projects/${p.id}/repositories/${two.id}`, { primary: false })).status).toBe(200);
    expect(await primaries(p.id)).toEqual([one.id]);
  });

  test("rename and change branch", async () => {
    const p = await fresh(["https://github.com/a/one"]);
    const r = await api("PATCH", `/projects/${p.id}/repositories/${p.repositories[0].id}`, { name: "core", branch: "develop" });
    expect(r.body.repository).toMatchObject({ name: "core", branch: "develop", primary: true, url: "https://github.com/a/one" });
    for (const body of [{ name: "" }, { name: "a/b" }, { branch: "" }, { branch: "a..b" }, { branch: "x.lock" }, { primary: "yes" }]) {
      expect((await api("PATCH", `/projects/${p.id}/repositories/${p.repositories[0].id}`, body)).status).toBe(400);
    }
  });

  test("a repository of another project (or unknown) is 404 under this one", async () => {
    const p = await fresh(["https://github.com/a/one"]);
    const q = await fresh(["https://github.com/a/two"]);
    expect((await api("PATCH", `/projects/${p.id}/repositories/${q.repositories[0].id}`, { name: "x" })).status).toBe(404);
    expect((await api("PATCH", `/projects/${p.id}/repositories/rep_01m819v1yh4kj1exevnvcjgs4y`, { name: "x" })).status).toBe(404);
  });
});

describe("move in", () => {
  test("keeps the id; the source's primary passes to its oldest remaining; the target keeps its primary", async () => {
    const src = await fresh(["https://github.com/a/s1", "https://github.com/a/s2", "https://github.com/a/s3"]);
    const dst = await fresh(["https://github.com/a/d1"]);
    const moving = src.repositories[0]; // the source's primary
    const r = await api("POST", `/projects/${dst.id}/repositories`, { fromProjectId: src.id, repositoryId: moving.id });
    expect(r.status).toBe(201);
    expect(r.body.repository).toMatchObject({ id: moving.id, url: moving.url, primary: false });
    expect(await primaries(dst.id)).toEqual([dst.repositories[0].id]);
    expect(await primaries(src.id)).toEqual([src.repositories[1].id]);
    expect((await api("GET", `/projects/${src.id}`)).body.repositories.map((x: { id: string }) => x.id)).not.toContain(moving.id);
  });

  test("into an empty project it becomes primary; the source left empty has no primary", async () => {
    const src = await fresh(["https://github.com/a/only"]);
    const dst = await fresh();
    const r = await api("POST", `/projects/${dst.id}/repositories`, { fromProjectId: src.id, repositoryId: src.repositories[0].id });
    expect(r.body.repository.primary).toBe(true);
    expect(await primaries(src.id)).toEqual([]);
    expect((await api("GET", `/projects/${src.id}`)).body.repositories).toEqual([]);
  });

  test("refusals: same project 409, URL already there 409, unknown 404, other org 404, archived target 409", async () => {
    const src = await fresh(["https://github.com/a/dup", "https://github.com/a/other"]);
    const dst = await fresh(["https://github.com/a/dup"]);
    const move = (to: string, from: string, repositoryId: string) => api("POST", `/projects/${to}/repositories`, { fromProjectId: from, repositoryId });
    expect((await move(src.id, src.id, src.repositories[0].id)).status).toBe(409);
    expect((await move(dst.id, src.id, src.repositories[0].id)).status).toBe(409);
    expect((await move(dst.id, src.id, "rep_01m819v1yh4kj1exevnvcjgs4y")).status).toBe(404);
    expect((await move(dst.id, "prj_01m819v1ygz3m9djq19vdk2xkt", src.repositories[0].id)).status).toBe(404);
    expect((await move(dst.id, dst.id, src.repositories[1].id)).status).toBe(404);
    const theirs = await makeProject(s, w.other, `theirs-${++n}`, { repositories: [{ url: "https://github.com/them/secret" }] });
    expect((await move(dst.id, theirs.id, theirs.repositories[0].id)).status).toBe(404);
    expect(await primaries(theirs.id)).toEqual([theirs.repositories[0].id]);
    await api("DELETE", `/projects/${dst.id}`, undefined, w.owner.accessToken);
    expect((await move(dst.id, src.id, src.repositories[1].id)).status).toBe(409);
    // Moving out of an archived project is allowed (rescuing a repository).
    const live = await fresh();
    expect((await move(live.id, dst.id, dst.repositories[0].id)).status).toBe(201);
  });
});

describe("split", () => {
  test("201 {project}: a new project named after the repository holds it (same id, primary); the old one fixes its primary", async () => {
    const p = await fresh(["https://github.com/a/main-repo", "https://github.com/a/tools"]);
    const [mainRepo, tools] = p.repositories;
    const r = await api("POST", `/projects/${p.id}/repositories/${mainRepo.id}/split`);
    expect(r.status).toBe(201);
    expect(r.body.project).toMatchObject({ orgId: org, name: "main-repo", archived: false });
    expect(r.body.project.id).not.toBe(p.id);
    expect(r.body.project.repositories).toEqual([{ ...mainRepo, primary: true }]);
    expect(r.body.from.repositories).toEqual([{ ...tools, primary: true }]);
    expect(await primaries(p.id)).toEqual([tools.id]);
    expect(await primaries(r.body.project.id)).toEqual([mainRepo.id]);
  });

  test("a taken name gets a suffix; a name may be given; a taken given name is 409", async () => {
    const a = await fresh(["https://github.com/a/same"]);
    const b = await fresh(["https://github.com/b/same"]);
    const c = await fresh(["https://github.com/c/same", "https://github.com/c/more"]);
    expect((await api("POST", `/projects/${a.id}/repositories/${a.repositories[0].id}/split`)).body.project.name).toBe("same");
    expect((await api("POST", `/projects/${b.id}/repositories/${b.repositories[0].id}/split`)).body.project.name).toBe("same-2");
    expect((await api("POST", `/projects/${c.id}/repositories/${c.repositories[1].id}/split`, { name: "same" })).status).toBe(409);
    const named = await api("POST", `/projects/${c.id}/repositories/${c.repositories[1].id}/split`, { name: "Tooling" });
    expect(named.status).toBe(201);
    expect(named.body.project.name).toBe("Tooling");
  });

  test("unknown repository 404; archived project 409; viewer 403", async () => {
    const p = await fresh(["https://github.com/a/x"]);
    expect((await api("POST", `/projects/${p.id}/repositories/rep_01m819v1yh4kj1exevnvcjgs4y/split`)).status).toBe(404);
    expect((await api("POST", `/projects/${p.id}/repositories/${p.repositories[0].id}/split`, undefined, w.viewer.accessToken)).status).toBe(403);
    await api("DELETE", `/projects/${p.id}`, undefined, w.owner.accessToken);
    expect((await api("POST", `/projects/${p.id}/repositories/${p.repositories[0].id}/split`)).status).toBe(409);
  });
});

describe("roles on repositories (project.update)", () => {
  test("viewer and viewer's token 403 on add and patch; nothing changes", async () => {
    const p = await fresh(["https://github.com/a/x"]);
    for (const token of [w.viewer.accessToken, w.viewerToken]) {
      expect((await api("POST", `/projects/${p.id}/repositories`, { url: "https://github.com/a/y" }, token)).status).toBe(403);
      expect((await api("PATCH", `/projects/${p.id}/repositories/${p.repositories[0].id}`, { name: "z" }, token)).status).toBe(403);
    }
    expect((await api("GET", `/projects/${p.id}`)).body.repositories).toEqual(p.repositories);
  });
});
