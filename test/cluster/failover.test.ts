// A real `ao worker` given both servers of a two-server service (one PostgreSQL database): while it
// is idle its server stops and it moves to the other, which offers it new tasks; while it runs a
// task its server stops and the task's timeline (written while the worker was moving) and its
// completion land on the other, every event once, in order; tasks created there run on it. A new
// worker whose first server is down pairs with the next.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCluster, type Cluster } from "../helpers/cluster";
import type { TestServer } from "../helpers/server";
import { createAdmin } from "../helpers/identity";
import { createTaskApi, orgWithProject, until } from "../workers/helpers";
import { preparedWorker, WorkerProcess } from "../e2e/worker-helpers";

// "gated" writes a line, waits for the test to open its gate (made once the server is stopped),
// then writes lines that can only reach the service through the other server.
const AGENT = `
case "$AO_TASK_TITLE" in
  gated)
    echo "before the gate"
    while [ ! -e "$GATE/$AO_TASK_ID" ]; do sleep 0.05; done
    i=0; while [ $i -lt 30 ]; do echo "line $i"; i=$((i+1)); done
    echo "::ao::summary made it through"
    ;;
  *)
    echo "quick $AO_TASK_ID"
    echo "::ao::summary quick"
    ;;
esac
`;

const NO_REPOSITORY = "the project has no repository: an empty directory";

let cluster: Cluster;
let tmp: string;
let worker: WorkerProcess;
let newcomer: WorkerProcess | undefined;
let workerId: string;
let p: Awaited<ReturnType<typeof orgWithProject>>;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-failover-"));
  writeFileSync(join(tmp, "agent.sh"), AGENT);
  // Heartbeats a second apart: a claim answered slowly on a busy machine is still listed by the
  // worker's heartbeats within the server's grace of two.
  cluster = await startCluster(2, { workerTimeouts: { offerMs: 2000, offlineMs: 5000, heartbeatMs: 1000 } });
  const [a, b] = cluster.servers;
  const owner = await createAdmin(a);
  p = await orgWithProject(a, owner);
  const dataDir = join(tmp, "worker");
  // The credential names server A; the worker must find it as well when it moves to B.
  ({ workerId } = await preparedWorker(a, p.orgId, dataDir));
  worker = new WorkerProcess(
    ["--server", a.url, "--server", b.url, "--data-dir", dataDir, "--kill-grace-ms", "500", "--exec", `sh ${join(tmp, "agent.sh")}`],
    { GATE: tmp },
  );
  const [, id, server] = await worker.waitFor(/connected as (wkr_\w+) \((\S+)\)/, 20_000);
  expect({ id, server }).toEqual({ id: workerId, server: a.url });
}, 60_000);

afterAll(async () => {
  await Promise.all([worker?.stop(), newcomer?.stop()]);
  await cluster?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const task = async (s: TestServer, id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}`, { token: p.token })).body;
const finished = (s: TestServer, id: string) =>
  until(async () => {
    const t = await task(s, id);
    return (t.status === "completed" || t.status === "failed") && t;
  }, 30_000, 50);

/** The timeline as short labels; its seqs must run 1, 2, 3... with no gap. */
async function timeline(s: TestServer, id: string): Promise<string[]> {
  const items = (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}/events?limit=200`, { token: p.token })).body.items as any[];
  expect(items.map((e) => e.seq)).toEqual(items.map((_, i) => i + 1));
  return items.map((e) => (e.type === "log" ? e.data.line : e.type === "status" ? `status ${e.data.to}` : e.type));
}

/** Waits for the worker to leave `from` for `to` and be connected there, reading output from `since`. */
async function moved(from: TestServer, to: TestServer, since: number) {
  await worker.waitFor(new RegExp(`moving from ${from.url} to ${to.url}`), 20_000, since);
  await worker.waitFor(new RegExp(`connected as ${workerId} \\(${to.url}\\)`), 20_000, since);
}

describe("a worker with two servers outlives either", () => {
  test("idle: server A stops; the worker moves to B, and a task created on B runs on it", async () => {
    const [a, b] = cluster.servers;
    const since = worker.output.length;
    await a.stop();
    await moved(a, b, since);
    const t = await createTaskApi(b, p, { title: "after A" });
    expect(await finished(b, t.id)).toMatchObject({ status: "completed", summary: "quick", workerId, attempt: 1 });
    expect(await timeline(b, t.id)).toEqual(["status queued", "status running", NO_REPOSITORY, `quick ${t.id}`, "status completed"]);
  }, 60_000);

  test("running: its server stops mid-task; the rest of the timeline and the completion land on the other, once each", async () => {
    const [a, b] = cluster.servers;
    // A comes back on its old address; the worker stays on B until B stops.
    const again = await cluster.add({ port: Number(new URL(a.url).port) });
    expect(again.url).toBe(a.url);
    const t = await createTaskApi(b, p, { title: "gated" });
    await until(async () => (await timeline(again, t.id)).includes("before the gate"), 20_000, 50);
    const since = worker.output.length;
    await b.stop();
    // The agent writes on while the worker finds that B is gone.
    writeFileSync(join(tmp, t.id), "");
    await moved(b, again, since);
    expect(await finished(again, t.id)).toMatchObject({ status: "completed", summary: "made it through", workerId, attempt: 1 });
    expect(await timeline(again, t.id)).toEqual([
      "status queued",
      "status running",
      NO_REPOSITORY,
      "before the gate",
      ...Array.from({ length: 30 }, (_, i) => `line ${i}`),
      "status completed",
    ]);
    // New work created on the server it moved to runs on it.
    const next = await createTaskApi(again, p, { title: "after B" });
    expect(await finished(again, next.id)).toMatchObject({ status: "completed", summary: "quick", workerId });
  }, 90_000);

  test("pairing: the first server listed is down; the worker pairs with the next, and its credential names that one", async () => {
    const [, b, again] = cluster.servers;
    const dataDir = join(tmp, "newcomer");
    newcomer = new WorkerProcess(["--server", `${b.url},${again.url}`, "--data-dir", dataDir, "--name", "newcomer", "--exec", "true"]);
    const [, code] = await newcomer.waitFor(/code: ([A-Z]{4}-[A-Z]{4})/, 20_000);
    expect(newcomer.output).toContain(`moving from ${b.url} to ${again.url}`);
    expect(newcomer.output).toContain(`pairing with ${again.url}`);
    expect((await again.api("POST", "/pairing/approve", { token: p.token, body: { userCode: code, orgId: p.orgId } })).status).toBe(200);
    const [, id] = await newcomer.waitFor(new RegExp(`connected as (wkr_\\w+) \\(${again.url}\\)`), 30_000);
    expect(JSON.parse(readFileSync(join(dataDir, "credential.json"), "utf8"))).toMatchObject({ server: again.url, workerId: id, orgId: p.orgId });
  }, 60_000);
});
