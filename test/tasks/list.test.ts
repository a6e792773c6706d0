// GET /orgs/:orgId/tasks (keyset pages, filters) and GET .../events (ascending seq pages).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeProject, makeTask, makeWorld, putInState, type World } from "./fixtures";
import { changeTask } from "../../src/modules/tasks/store";
import { get } from "../../src/db/query";

let s: TestServer;
let w: World;
let org: string;
let projectB: { id: string };
const created: string[] = [];

beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
  org = w.owner.orgId;
  projectB = await makeProject(s, w.owner, "second");
  for (let i = 0; i < 25; i++) {
    const t = await makeTask(s, w.owner, i % 5 === 0 ? projectB.id : w.project.id, { title: `task ${i}`, ...(i % 3 === 0 ? { kind: "plan" } : {}) });
    created.push(t.id);
  }
  await putInState(s, created[3], "running");
  await putInState(s, created[7], "running");
  await putInState(s, created[8], "failed");
  // A task in the other org must never show up here.
  await makeTask(s, w.other, w.otherProject.id);
});
afterAll(() => s.stop());

const list = (query: string, token = w.viewer.accessToken) => s.api("GET", `/orgs/${org}/tasks${query}`, { token });

async function walk(query: string, limit: number, from: string | null = null): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = from;
  for (let guard = 0; guard < 100; guard++) {
    const r = await list(`?limit=${limit}${query}${cursor ? `&cursor=${cursor}` : ""}`);
    expect(r.status).toBe(200);
    expect(r.body.items.length).toBeLessThanOrEqual(limit);
    ids.push(...r.body.items.map((t: { id: string }) => t.id));
    cursor = r.body.nextCursor;
    if (!cursor) return ids;
  }
  throw new Error("pagination did not end");
}

describe("list tasks", () => {
  test("default page: newest first, at most 50, nextCursor null at the end", async () => {
    const r = await list("");
    expect(r.status).toBe(200);
    expect(r.body.items.map((t: { id: string }) => t.id)).toEqual([...created].reverse());
    expect(r.body.nextCursor).toBeNull();
    expect(r.body.items[0]).toMatchObject({ orgId: org, artifacts: [] });
  });

  test("pages of 4 visit every task once, in order", async () => {
    expect(await walk("", 4)).toEqual([...created].reverse());
  });

  test("a cursor stays valid while tasks are inserted (keyset, not offset)", async () => {
    const first = await list("?limit=10");
    const seen = first.body.items.map((t: { id: string }) => t.id);
    // New tasks arrive between pages: they are newer than the cursor, so they never shift it.
    const fresh: string[] = [];
    for (let i = 0; i < 5; i++) fresh.push((await makeTask(s, w.owner, w.project.id)).id);
    const rest = await walk("", 10, first.body.nextCursor);
    expect([...seen, ...rest]).toEqual([...created].reverse());
    expect(rest.some((id) => fresh.includes(id))).toBe(false);
    // And a fresh walk sees them first.
    expect((await list("?limit=5")).body.items.map((t: { id: string }) => t.id)).toEqual([...fresh].reverse());
    created.push(...fresh);
  });

  // Filters: [query, predicate over the creation index]
  test("filters: status, projectId, kind, parentId, combined", async () => {
    const byStatus = await walk("&status=running", 1);
    expect(byStatus).toEqual([created[7], created[3]]);
    expect(await walk("&status=failed", 50)).toEqual([created[8]]);
    const inB = await walk(`&projectId=${projectB.id}`, 2);
    expect(inB).toEqual(created.slice(0, 25).filter((_, i) => i % 5 === 0).reverse());
    const plans = await walk("&kind=plan", 3);
    expect(plans).toEqual(created.slice(0, 25).filter((_, i) => i % 3 === 0).reverse());
    const both = await walk(`&kind=plan&projectId=${projectB.id}`, 50);
    expect(both).toEqual(created.slice(0, 25).filter((_, i) => i % 15 === 0).reverse());
    expect(await walk("&parentId=tsk_01m819v1yqhsryfjy69tbbabjs", 50)).toEqual([]);
    expect(await walk(`&projectId=${w.otherProject.id}`, 50)).toEqual([]);
  });

  const bad: [string, string][] = [
    ["limit 0", "?limit=0"],
    ["limit 201", "?limit=201"],
    ["limit not a number", "?limit=ten"],
    ["limit fractional", "?limit=1.5"],
    ["cursor garbage", "?cursor=!!!"],
    ["cursor of random base64", `?cursor=${Buffer.from("hello").toString("base64url")}`],
    ["cursor naming a project id", `?cursor=${Buffer.from("prj_01m819v1ygz3m9djq19vdk2xkt").toString("base64url")}`],
    ["unknown status", "?status=done"],
    ["unknown kind", "?kind=epic"],
  ];
  for (const [name, query] of bad) {
    test(`400: ${name}`, async () => {
      const r = await list(query);
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe("validation_failed");
    });
  }

  test("limit 200 is allowed", async () => {
    expect((await list("?limit=200")).status).toBe(200);
  });
});

describe("timeline events", () => {
  let id: string;
  beforeAll(async () => {
    id = created[0];
    // 29 more events after the creation event: seq 1..30.
    await changeTask(s.core, null, id, () => ({
      events: Array.from({ length: 29 }, (_, i) => ({ type: "log", data: { line: `line ${i + 2}` } })),
    }));
  });

  const events = (query: string, token = w.viewer.accessToken) => s.api("GET", `/orgs/${org}/tasks/${id}/events${query}`, { token });

  test("ascending seq, pages by after and nextCursor", async () => {
    const first = await events("?limit=10");
    expect(first.status).toBe(200);
    expect(first.body.items.map((e: { seq: number }) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(first.body.nextCursor).toBe("10");
    const second = await events(`?after=${first.body.nextCursor}&limit=15`);
    expect(second.body.items.map((e: { seq: number }) => e.seq)).toEqual(Array.from({ length: 15 }, (_, i) => i + 11));
    const third = await events(`?cursor=${second.body.nextCursor}&limit=15`);
    expect(third.body.items.map((e: { seq: number }) => e.seq)).toEqual([26, 27, 28, 29, 30]);
    expect(third.body.nextCursor).toBeNull();
    expect(third.body.items[0]).toEqual({ seq: 26, type: "log", at: expect.any(String), data: { line: "line 26" } });
  });

  test("polling past the end gives an empty page", async () => {
    const r = await events("?after=30");
    expect(r.body).toEqual({ items: [], nextCursor: null });
  });

  for (const [name, query] of [
    ["after negative", "?after=-1"],
    ["after text", "?after=abc"],
    ["limit 0", "?limit=0"],
    ["cursor text", "?cursor=abc"],
  ]) {
    test(`400: ${name}`, async () => {
      expect((await events(query)).status).toBe(400);
    });
  }

  test("another org's task -> 404", async () => {
    const theirs = (await s.core.store.read(get<{ id: string }>("SELECT id FROM tasks WHERE org_id = ?", w.other.orgId)))!.id;
    const r = await s.api("GET", `/orgs/${org}/tasks/${theirs}/events`, { token: w.owner.accessToken });
    expect(r.status).toBe(404);
  });
});
