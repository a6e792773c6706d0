// The README's "Tasks, projects and live updates" curl example runs as written against a real
// server: it makes a project and a task, lists, pauses and reads the timeline.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeWorld, type World } from "./fixtures";
import { get } from "../../src/db/query";

const README = readFileSync(join(import.meta.dir, "..", "..", "README.md"), "utf8");
const MARKER = "# ao: tasks and projects with curl";

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
});
afterAll(() => s.stop());

const hasTools = ["bash", "curl", "jq"].every((t) => Bun.which(t) !== null);

test.skipIf(!hasTools)("the curl example works as written", async () => {
  const block = [...README.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) => b.includes(MARKER));
  expect(block).toBeDefined();
  const proc = Bun.spawn(["bash", "-euo", "pipefail", "-c", block!], {
    env: { PATH: process.env.PATH!, AO_SERVER: s.url, AO_TOKEN: w.ownerToken, ORG: w.owner.orgId },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
  expect(err).toBe("");
  expect(code).toBe(0);
  const lines = out.trim().split("\n");
  // list: the title, then nextCursor (null: one page); the pause's status; the timeline
  expect(lines).toEqual([
    "Fix the cart",
    "null",
    "paused",
    expect.stringMatching(/^\[1,"status",\{"from":null,"to":"queued"\}\]$/),
    expect.stringMatching(/^\[2,"action",\{"action":"pause","reason":"waiting for the design"\}\]$/),
    expect.stringMatching(/^\[3,"status",\{"from":"queued","to":"paused"\}\]$/),
  ]);
  const project = await s.core.store.read(
    get<{ name: string; url: string; is_primary: number }>(
      "SELECT p.name, r.url, r.is_primary FROM projects p JOIN repositories r ON r.project_id = p.id WHERE p.org_id = ? AND p.name = 'web-shop'",
      w.owner.orgId,
    ),
  );
  expect(project).toEqual({ name: "web-shop", url: "git@github.com:acme/web-shop.git", is_primary: 1 });
});
