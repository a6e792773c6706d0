// The codehost and project services as database programs, below the routes: a cached project
// answers without a query, and a pull request event finds its task by number when its head is
// not an ao/<taskId> branch (the text match that replaced json_extract).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeProject, makeTask, makeWorld, type World } from "../tasks/fixtures";
import { drive, get, type Op, type Q } from "../../src/db/query";
import type { SqliteStore } from "../../src/db/store";
import { forgetProjects, projectCachedQ } from "../../src/modules/projects/cache";
import { appEvent } from "../../src/modules/codehost/webhooks";

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
});
afterAll(() => s.stop());

/** Runs a program on the server's database, counting its queries. */
function counted<T>(program: Q<T>): { value: T; queries: number } {
  let queries = 0;
  const exec = (s.core.store as SqliteStore).statements.exec;
  const value = drive(program, (op: Op) => (queries++, exec(op)));
  return { value, queries };
}

describe("projectCachedQ", () => {
  test("a miss reads, a hit answers without a query, forgetProjects empties it", async () => {
    const p = await makeProject(s, w.owner, "cached");
    const name = () => projectCachedQ(s.core, `test-name:${p.id}`, function* () {
      return (yield* get<{ name: string }>("SELECT name FROM projects WHERE id = ?", p.id))?.name ?? null;
    });
    expect(counted(name())).toEqual({ value: "cached", queries: 1 });
    expect(counted(name())).toEqual({ value: "cached", queries: 0 });
    forgetProjects(s.core);
    expect(counted(name())).toEqual({ value: "cached", queries: 1 });
  });

  test("null is not cached: the next look reads again", () => {
    const nothing = () => projectCachedQ(s.core, "test-none", function* () {
      return (yield* get<{ name: string }>("SELECT name FROM projects WHERE id = ?", "prj_none"))?.name ?? null;
    });
    expect(counted(nothing())).toEqual({ value: null, queries: 1 });
    expect(counted(nothing())).toEqual({ value: null, queries: 1 });
  });
});

describe("appEvent: pull_request", () => {
  test("a task is found by its pull request's number when the head is not ao/<taskId>; other numbers are not taken", async () => {
    const p = await makeProject(s, w.owner, "pulls");
    const task = await makeTask(s, w.owner, p.id);
    const other = await makeTask(s, w.owner, p.id);
    const now = new Date().toISOString();
    s.core.sqlite
      .query("INSERT INTO codehost_installations (id, org_id, account_login, account_type, account_id, repository_selection, suspended, created_at, updated_at) VALUES (?, ?, 'acme', 'Organization', 1, 'all', 0, ?, ?)")
      .run(4242, w.owner.orgId, now, now);
    const info = (number: number) => JSON.stringify({ number, url: `https://github.com/acme/widget/pull/${number}`, state: "open", headBranch: "feature", repository: "acme/widget" });
    s.core.sqlite.query("UPDATE tasks SET pull_request = ? WHERE id = ?").run(info(7), task.id);
    // 70 starts with 7: the match must end at the number.
    s.core.sqlite.query("UPDATE tasks SET pull_request = ? WHERE id = ?").run(info(70), other.id);
    const payload = {
      action: "closed",
      installation: { id: 4242 },
      repository: { full_name: "Acme/Widget" },
      pull_request: { number: 7, merged: true, head: { ref: "feature" } },
      sender: { login: "octocat" },
    };
    const result = s.core.store.syncWrite(appEvent(s.core, "pull_request", payload));
    expect(result.handled).toBe("pull request #7 is merged");
    expect(result.changes.map((c) => c.after.id)).toEqual([task.id]);
    const stored = (id: string) => JSON.parse(s.core.sqlite.query<{ pull_request: string }, [string]>("SELECT pull_request FROM tasks WHERE id = ?").get(id)!.pull_request);
    expect(stored(task.id).state).toBe("merged");
    expect(stored(other.id).state).toBe("open");
  });
});
