// Projects (SPEC §8): create, list (pages, archived), get, update, archive, roles.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeProject, makeWorld, type World } from "../tasks/fixtures";
import { all, get } from "../../src/db/query";

let s: TestServer;
let w: World;
let org: string;
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
  org = w.owner.orgId;
});
afterAll(() => s.stop());

const projectCount = async () => (await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM projects")))!.n;

const api = (method: string, path: string, body?: unknown, token = w.owner.accessToken) => s.api(method, `/orgs/${org}${path}`, { token, body });

describe("create and read", () => {
  test("201 with the project record; GET gives the same", async () => {
    const r = await api("POST", "/projects", {
      name: "  Web app  ",
      knowledge: "Bun + Elysia. Run `bun test`.",
      policy: { maxParallel: 2 },
      repositories: [{ url: "https://github.com/acme/web.git" }, { url: "git@github.com:acme/docs.git", branch: "trunk", name: "handbook" }],
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      orgId: org,
      name: "Web app",
      knowledge: "Bun + Elysia. Run `bun test`.",
      policy: { maxParallel: 2 },
      archived: false,
    });
    expect(r.body.id).toMatch(/^prj_/);
    expect(r.body.repositories).toEqual([
      { id: expect.stringMatching(/^rep_/), url: "https://github.com/acme/web.git", name: "web", branch: "main", primary: true },
      { id: expect.stringMatching(/^rep_/), url: "git@github.com:acme/docs.git", name: "handbook", branch: "trunk", primary: false },
    ]);
    const got = await api("GET", `/projects/${r.body.id}`, undefined, w.viewer.accessToken);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(r.body);
  });

  test("defaults: empty knowledge and policy, no repositories", async () => {
    const r = await api("POST", "/projects", { name: "bare" });
    expect(r.body).toMatchObject({ name: "bare", knowledge: "", policy: {}, repositories: [], archived: false });
  });

  const bad: [string, unknown][] = [
    ["no name", {}],
    ["empty name", { name: "" }],
    ["blank name", { name: "   " }],
    ["name of 101", { name: "x".repeat(101) }],
    ["control characters", { name: "a\u0007b" }],
    ["policy not an object", { name: "p1", policy: "strict" }],
    ["knowledge not text", { name: "p2", knowledge: 5 }],
    ["a NUL in the knowledge (not storable on PostgreSQL; refused on both)", { name: "p5", knowledge: "a\u0000b" }],
    ["a bad repository URL", { name: "p3", repositories: [{ url: "http://github.com/a/b" }] }],
    ["a bad branch", { name: "p4", repositories: [{ url: "https://github.com/a/b", branch: "a..b" }] }],
  ];
  for (const [name, body] of bad) {
    test(`400: ${name}, nothing created`, async () => {
      const before = await projectCount();
      const r = await api("POST", "/projects", body);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe("validation_failed");
      expect(await projectCount()).toBe(before);
    });
  }

  test("a duplicate live name is 409; the same name in another org is fine; an archived one frees its name", async () => {
    await makeProject(s, w.owner, "dup");
    const again = await api("POST", "/projects", { name: "dup" });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("conflict");
    expect((await s.api("POST", `/orgs/${w.other.orgId}/projects`, { token: w.other.accessToken, body: { name: "dup" } })).status).toBe(201);
    const listed = (await api("GET", "/projects?limit=200")).body.items.find((p: { name: string }) => p.name === "dup");
    await api("DELETE", `/projects/${listed.id}`);
    expect((await api("POST", "/projects", { name: "dup" })).status).toBe(201);
  });

  test("unknown project 404", async () => {
    expect((await api("GET", "/projects/prj_01m819v1ygz3m9djq19vdk2xkt")).status).toBe(404);
  });
});

describe("list", () => {
  test("newest first in keyset pages; archived hidden unless archived=true", async () => {
    const made: string[] = [];
    for (let i = 0; i < 7; i++) made.push((await makeProject(s, w.owner, `list-${i}`)).id);
    await api("DELETE", `/projects/${made[2]}`);
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const r = await api("GET", `/projects?limit=3${cursor ? `&cursor=${cursor}` : ""}`, undefined, w.viewer.accessToken);
      expect(r.status).toBe(200);
      ids.push(...r.body.items.map((p: { id: string }) => p.id));
      cursor = r.body.nextCursor;
    } while (cursor);
    const stored = await s.core.store.read(all<{ id: string; archived: number }>("SELECT id, archived FROM projects WHERE org_id = ? ORDER BY id DESC", org));
    expect(ids).toEqual(stored.filter((p) => !p.archived).map((p) => p.id));
    expect(ids).not.toContain(made[2]);
    const withArchived = await api("GET", "/projects?archived=true&limit=200");
    expect(withArchived.body.items.map((p: { id: string }) => p.id)).toEqual(stored.map((p) => p.id));
    expect(withArchived.body.items.find((p: { id: string }) => p.id === made[2]).archived).toBe(true);
  });

  test("400 for a bad cursor or limit", async () => {
    expect((await api("GET", "/projects?cursor=zzz")).status).toBe(400);
    expect((await api("GET", "/projects?limit=0")).status).toBe(400);
    expect((await api("GET", `/projects?cursor=${Buffer.from("tsk_01m819v1yqhsryfjy69tbbabjs").toString("base64url")}`)).status).toBe(400);
  });

  test("never shows another org's projects", async () => {
    const r = await api("GET", "/projects?archived=true&limit=200");
    expect(r.body.items.every((p: { orgId: string }) => p.orgId === org)).toBe(true);
    expect(r.body.items.map((p: { id: string }) => p.id)).not.toContain(w.otherProject.id);
  });
});

describe("update and archive", () => {
  test("PATCH name, knowledge, policy; updatedAt moves", async () => {
    const p = await makeProject(s, w.owner, "patch-me");
    await Bun.sleep(2);
    const r = await api("PATCH", `/projects/${p.id}`, { name: "patched", knowledge: "k", policy: { a: 1 } }, w.member.accessToken);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ id: p.id, name: "patched", knowledge: "k", policy: { a: 1 } });
    expect(r.body.updatedAt > p.updatedAt).toBe(true);
    const partial = await api("PATCH", `/projects/${p.id}`, { knowledge: "k2" });
    expect(partial.body).toMatchObject({ name: "patched", knowledge: "k2", policy: { a: 1 } });
  });

  test("PATCH to a taken name is 409; to a bad name 400", async () => {
    await makeProject(s, w.owner, "taken");
    const p = await makeProject(s, w.owner, "renamer");
    expect((await api("PATCH", `/projects/${p.id}`, { name: "taken" })).status).toBe(409);
    expect((await api("PATCH", `/projects/${p.id}`, { name: "" })).status).toBe(400);
    expect((await api("PATCH", `/projects/${p.id}`, { name: "renamer" })).status).toBe(200);
  });

  test("DELETE archives (200, archived true, idempotent); PATCH archived:false restores", async () => {
    const p = await makeProject(s, w.owner, "old");
    const d = await api("DELETE", `/projects/${p.id}`, undefined, w.admin.accessToken);
    expect(d.status).toBe(200);
    expect(d.body.archived).toBe(true);
    expect((await api("DELETE", `/projects/${p.id}`)).body.archived).toBe(true);
    expect((await api("GET", `/projects/${p.id}`)).body.archived).toBe(true);
    const restored = await api("PATCH", `/projects/${p.id}`, { archived: false });
    expect(restored.body.archived).toBe(false);
    expect((await api("PATCH", `/projects/${p.id}`, { archived: true })).status).toBe(400);
  });

  test("restoring into a name taken meanwhile is 409", async () => {
    const p = await makeProject(s, w.owner, "phoenix");
    await api("DELETE", `/projects/${p.id}`);
    await makeProject(s, w.owner, "phoenix");
    expect((await api("PATCH", `/projects/${p.id}`, { archived: false })).status).toBe(409);
  });
});

describe("roles", () => {
  // [route, caller, expected]
  const rows: [string, string, number][] = [
    ["create", "member", 201],
    ["create", "viewer", 403],
    ["create", "viewerToken", 403],
    ["create", "ownerToken", 201],
    ["update", "member", 200],
    ["update", "viewer", 403],
    ["delete", "admin", 200],
    ["delete", "member", 403],
    ["delete", "viewer", 403],
    ["get", "viewer", 200],
    ["list", "viewerToken", 200],
  ];
  for (const [route, who, expected] of rows) {
    test(`${route} as ${who} -> ${expected}`, async () => {
      const token = who.endsWith("Token") ? (w as unknown as Record<string, string>)[who] : (w as unknown as Record<string, { accessToken: string }>)[who].accessToken;
      const p = await makeProject(s, w.owner, `roles-${route}-${who}`);
      const r =
        route === "create"
          ? await api("POST", "/projects", { name: `made-by-${who}` }, token)
          : route === "update"
            ? await api("PATCH", `/projects/${p.id}`, { knowledge: "x" }, token)
            : route === "delete"
              ? await api("DELETE", `/projects/${p.id}`, undefined, token)
              : route === "get"
                ? await api("GET", `/projects/${p.id}`, undefined, token)
                : await api("GET", "/projects", undefined, token);
      expect(r.status).toBe(expected);
      if (route === "delete") expect((await api("GET", `/projects/${p.id}`)).body.archived).toBe(expected === 200);
    });
  }
});
