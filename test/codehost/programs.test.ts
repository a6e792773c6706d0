// The codehost and project services as database programs, below the routes: a cached project
// answers without a query, and a pull request event finds its task by number when its head is
// not an ao/<taskId> branch (the text match that replaced json_extract).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeProject, makeTask, makeWorld, type World } from "../tasks/fixtures";
import { get, run, type Q } from "../../src/db/query";
import { forgetProjects, projectCachedQ } from "../../src/modules/projects/cache";
import { appEvent } from "../../src/modules/codehost/webhooks";

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
});
afterAll(() => s.stop());

/** Runs a program on the server's database (either store), counting its queries. */
async function counted<T>(program: Q<T>): Promise<{ value: T; queries: number }> {
  let queries = 0;
  function* counting(): Q<T> {
    let step = program.next();
    while (!step.done) {
      queries++;
      let result: unknown;
      try {
        result = yield step.value;
      } catch (error) {
        step = program.throw(error);
        continue;
      }
      step = program.next(result);
    }
    return step.value;
  }
  const value = await s.core.store.read(counting());
  return { value, queries };
}

describe("projectCachedQ", () => {
  test("a miss reads, a hit answers without a query, forgetProjects empties it", async () => {
    const p = await makeProject(s, w.owner, "cached");
    const name = () => projectCachedQ(s.core, `test-name:${p.id}`, function* () {
      return (yield* get<{ name: string }>("SELECT name FROM projects WHERE id = ?", p.id))?.name ?? null;
    });
    expect(await counted(name())).toEqual({ value: "cached", queries: 1 });
    expect(await counted(name())).toEqual({ value: "cached", queries: 0 });
    forgetProjects(s.core);
    expect(await counted(name())).toEqual({ value: "cached", queries: 1 });
  });

  test("null is not cached: the next look reads again", async () => {
    const nothing = () => projectCachedQ(s.core, "test-none", function* () {
      return (yield* get<{ name: string }>("SELECT name FROM projects WHERE id = ?", "prj_none"))?.name ?? null;
    });
    expect(await counted(nothing())).toEqual({ value: null, queries: 1 });
    expect(await counted(nothing())).toEqual({ value: null, queries: 1 });
  });
});

describe("appEvent: pull_request", () => {
  test("a task is found by its pull request's number when the head is not ao/<taskId>; other numbers are not taken", async () => {
    const p = await makeProject(s, w.owner, "pulls");
    const task = await makeTask(s, w.owner, p.id);
    const other = await makeTask(s, w.owner, p.id);
    const now = new Date().toISOString();
    await s.core.store.write(
      run(
        "INSERT INTO codehost_installations (id, org_id, account_login, account_type, account_id, repository_selection, suspended, created_at, updated_at) VALUES (?, ?, 'acme', 'Organization', 1, 'all', 0, ?, ?)",
        4242,
        w.owner.orgId,
        now,
        now,
      ),
    );
    const info = (number: number) => JSON.stringify({ number, url: `https://github.com/acme/widget/pull/${number}`, state: "open", headBranch: "feature", repository: "acme/widget" });
    await s.core.store.write(run("UPDATE tasks SET pull_request = ? WHERE id = ?", info(7), task.id));
    // 70 starts with 7: the match must end at the number.
    await s.core.store.write(run("UPDATE tasks SET pull_request = ? WHERE id = ?", info(70), other.id));
    const payload = {
      action: "closed",
      installation: { id: 4242 },
      repository: { full_name: "Acme/Widget" },
      pull_request: { number: 7, merged: true, head: { ref: "feature" } },
      sender: { login: "octocat" },
    };
    const result = await s.core.store.write(appEvent(s.core, "pull_request", payload));
    expect(result.handled).toBe("pull request #7 is merged");
    expect(result.changes.map((c) => c.after.id)).toEqual([task.id]);
    const stored = async (id: string) =>
      JSON.parse((await s.core.store.read(get<{ pull_request: string }>("SELECT pull_request FROM tasks WHERE id = ?", id)))!.pull_request);
    expect((await stored(task.id)).state).toBe("merged");
    expect((await stored(other.id)).state).toBe("open");
  });
});
