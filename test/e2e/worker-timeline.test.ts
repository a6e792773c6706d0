// The timeline of an attempt run by a real `ao worker` (exec agent) reads in the order things
// happened: the worker's checkout line, the agent's lines, the artifacts it left, the final status.
// A new attempt starts without the last one's results on the record; the timeline keeps them.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { addRepositoryRow, createTaskApi, orgWithProject, until } from "../workers/helpers";
import { bareFrom, gitRepo, preparedWorker, sh, startWorker, type WorkerProcess } from "./worker-helpers";

// Quick on purpose: the agent is done long before the worker's event batch would go out by itself.
const AGENT = `
echo "first line"
echo "second line"
printf 'report' > "$AO_ARTIFACTS_DIR/report.txt"
echo "::ao::summary $AO_TASK_KIND done"
[ "$AO_TASK_TITLE" = again ] && echo "::ao::summary attempt $AO_TASK_ATTEMPT done"
if [ "$AO_TASK_TITLE" = collide ]; then printf 'spaced' > "$AO_ARTIFACTS_DIR/my report.txt"; printf 'underscored' > "$AO_ARTIFACTS_DIR/my_report.txt"; fi
true
`;

let s: TestServer;
let tmp: string;
let owner: Session;
let worker: WorkerProcess;
let p: Awaited<ReturnType<typeof orgWithProject>>;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-worker-timeline-"));
  writeFileSync(join(tmp, "agent.sh"), AGENT);
  s = await startTestServer({ workerTimeouts: { offerMs: 2000, offlineMs: 3000, heartbeatMs: 300 } });
  owner = await createAdmin(s);
  p = await orgWithProject(s, owner);
  const source = gitRepo(join(tmp, "src"), { "README.md": "# demo\n" });
  sh(source, "git", "checkout", "-q", "-b", "feature");
  writeFileSync(join(source, "feature.txt"), "new\n");
  sh(source, "git", "add", "-A");
  sh(source, "git", "commit", "-q", "-m", "feature work");
  const bare = bareFrom(source, join(tmp, "repo.git"));
  await addRepositoryRow(s, p.orgId, p.projectId, `file://${bare}`);
  const dataDir = join(tmp, "worker");
  await preparedWorker(s, p.orgId, dataDir);
  worker = startWorker(s, dataDir, ["--exec", `sh ${join(tmp, "agent.sh")}`]);
  await worker.waitFor(/connected as/);
});

afterAll(async () => {
  await worker?.stop();
  await s.stop();
  rmSync(tmp, { recursive: true, force: true });
});

async function finished(id: string) {
  return until(async () => {
    const t = (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}`, { token: p.token })).body;
    return (t.status === "completed" || t.status === "failed") && t;
  }, 20_000, 50);
}

/** The timeline as short labels, in seq order. */
async function timeline(id: string): Promise<string[]> {
  const page = (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}/events?limit=200`, { token: p.token })).body;
  expect(page.items.map((e: any) => e.seq)).toEqual(page.items.map((_: unknown, i: number) => i + 1));
  return page.items.map((e: any) => {
    if (e.type === "log") return e.data.line.startsWith("cloned ") ? "cloned" : e.data.line;
    if (e.type === "artifact") return `artifact ${e.data.name}`;
    if (e.type === "status") return `status ${e.data.to}`;
    return e.type;
  });
}

describe("the timeline of an attempt is in the order things happened", () => {
  for (const kind of ["task", "review"] as const) {
    test(`${kind}: queued, running, the checkout line, the agent's lines, its artifact, completed`, async () => {
      const t = await createTaskApi(s, p, { title: `ordered ${kind}`, kind, ...(kind === "review" ? { review: { base: "main", head: "feature" } } : {}) });
      expect(await finished(t.id)).toMatchObject({ status: "completed", summary: `${kind} done` });
      expect(await timeline(t.id)).toEqual([
        "status queued",
        "status running",
        "cloned",
        "first line",
        "second line",
        "artifact report.txt",
        "status completed",
      ]);
    });
  }
});

test("two files whose names make the same artifact name are both kept, the second numbered", async () => {
  const t = await createTaskApi(s, p, { title: "collide" });
  expect(await finished(t.id)).toMatchObject({ status: "completed" });
  expect((await timeline(t.id)).filter((l) => l.startsWith("artifact "))).toEqual(["artifact my_report.txt", "artifact my_report-2.txt", "artifact report.txt"]);
  for (const [name, body] of [["my_report.txt", "spaced"], ["my_report-2.txt", "underscored"]]) {
    const r = await fetch(`${s.url}/api/v1/orgs/${p.orgId}/tasks/${t.id}/artifacts/${name}`, { headers: { authorization: `Bearer ${p.token}` } });
    expect(await r.text()).toBe(body);
  }
});

describe("a new attempt does not wear the last one's results", () => {
  test("restart: while the new attempt is queued and running the record has no summary; the timeline keeps attempt 1's", async () => {
    const t = await createTaskApi(s, p, { title: "again" });
    expect(await finished(t.id)).toMatchObject({ attempt: 1, summary: "attempt 1 done" });
    // Every record the server publishes from the restart on, read off a live socket.
    const ws = new WebSocket(s.url.replace("http", "ws") + "/api/v1/ws", { headers: { authorization: `Bearer ${p.token}` } } as any);
    const records: any[] = [];
    let subscribed!: () => void;
    const ready = new Promise<void>((resolve) => (subscribed = resolve));
    ws.onmessage = (m) => {
      const msg = JSON.parse(String(m.data));
      if (msg.type === "subscribed") subscribed();
      if (msg.type === "task.updated" && msg.task.id === t.id) records.push(msg.task);
    };
    await new Promise((resolve) => (ws.onopen = resolve));
    ws.send(JSON.stringify({ type: "subscribe", orgId: p.orgId, taskId: t.id }));
    await ready;
    const restarted = await s.api("POST", `/orgs/${p.orgId}/tasks/${t.id}/actions`, { token: p.token, body: { action: "restart" } });
    expect(restarted.body).toMatchObject({ status: "queued", summary: null, needs: null, startedAt: null });
    await until(() => records.some((r) => r.status === "completed"), 20_000, 50);
    ws.close();
    const unfinished = records.filter((r) => r.status !== "completed");
    expect(unfinished.map((r) => r.status)).toEqual(expect.arrayContaining(["queued", "running"]));
    for (const r of unfinished) expect(r).toMatchObject({ summary: null, needs: null });
    expect(records.at(-1)).toMatchObject({ status: "completed", attempt: 2, summary: "attempt 2 done" });
    const events = (await s.api("GET", `/orgs/${p.orgId}/tasks/${t.id}/events?limit=200`, { token: p.token })).body.items;
    const completions = events.filter((e: any) => e.type === "status" && e.data.to === "completed").map((e: any) => e.data.summary);
    expect(completions).toEqual(["attempt 1 done", "attempt 2 done"]);
  }, 40_000);
});
