// How soon a callback leaves after a task's state change (target: within 1 s). A real server
// (in this process, so the change can be made through the task store the way a worker report
// makes it) with a signed JSON integration calling back to a loopback receiver. Latency is from
// the commit of the change to the callback's arrival at the receiver.
//   bun bench/integrations-callbacks.ts [--sequential 200] [--burst 1000]
// (a) one task at a time; (b) a burst: many tasks completing at the same moment.
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startServer } from "../src/server/serve";
import { setupTokenOf } from "../src/server/bootstrap";
import { changeTask } from "../src/modules/tasks/store";
import { conditions, ms, summarise } from "./tasks-support";

const { values } = parseArgs({ options: { sequential: { type: "string", default: "200" }, burst: { type: "string", default: "1000" } } });
const sequential = Number(values.sequential);
const burst = Number(values.burst);

const dataDir = mkdtempSync(join(tmpdir(), "ao-bench-cb-"));
const quiet = { info() {}, warn() {}, error: (m: string, f?: Record<string, unknown>) => console.error(m, f) };
const ao = await startServer({ port: 0, host: "127.0.0.1", dataDir, allowPrivateCallbacks: true, logger: quiet });

const arrivals = new Map<string, number>();
let waiting: { n: number; resolve: () => void } | null = null;
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    const body = (await req.json()) as { taskId: string };
    arrivals.set(body.taskId, performance.now());
    if (waiting && arrivals.size >= waiting.n) waiting.resolve();
    return new Response("ok");
  },
});
const arrived = (n: number) =>
  arrivals.size >= n ? Promise.resolve() : new Promise<void>((resolve) => (waiting = { n, resolve }));

async function api(method: string, path: string, token: string | null, body?: unknown) {
  const res = await fetch(`${ao.url}/api/v1${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(json)}`);
  return json;
}

try {
  const email = "bench@example.test";
  const password = "bench password 123";
  const setup = await api("POST", "/setup", null, { token: setupTokenOf(ao.core), email, password, orgName: "bench" });
  const { accessToken } = await api("POST", "/auth/login", null, { email, password });
  const orgId = setup.org.id;
  const project = await api("POST", `/orgs/${orgId}/projects`, accessToken, { name: "bench" });
  const integration = await api("POST", `/orgs/${orgId}/integrations`, accessToken, {
    kind: "signed_json",
    name: "bench",
    projectId: project.id,
    callbackUrl: `http://127.0.0.1:${receiver.port}/callback`,
  });

  async function newTask(i: number): Promise<string> {
    const body = JSON.stringify({ title: `bench ${i}`, prompt: "x", ref: `r-${i}` });
    const t = Math.floor(Date.now() / 1000);
    const v1 = createHmac("sha256", integration.secret).update(`${t}.${body}`).digest("hex");
    const res = await fetch(`${ao.url}/api/v1/hooks/${integration.id}`, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "x-svc-signature": `t=${t},v1=${v1}`, "x-svc-delivery": `b-${i}` },
    });
    return ((await res.json()) as { taskId: string }).taskId;
  }
  const complete = (taskId: string) => {
    changeTask(ao.core, null, taskId, () => ({ patch: { status: "running", worker_id: "wkr_bench", attempt: 1 }, events: [] }));
    changeTask(ao.core, null, taskId, () => ({ patch: { status: "completed", summary: "done", worker_id: null }, events: [] }));
    return performance.now(); // committed: the outbox row is in the database
  };

  // (a) one at a time
  const seqIds: string[] = [];
  for (let i = 0; i < sequential; i++) seqIds.push(await newTask(i));
  const seqLatency: number[] = [];
  for (const id of seqIds) {
    const committed = complete(id);
    await arrived(arrivals.size + 1);
    seqLatency.push(arrivals.get(id)! - committed);
  }

  // (b) a burst: every task completes in a tight loop (one transaction each)
  const burstIds: string[] = [];
  for (let i = 0; i < burst; i++) burstIds.push(await newTask(sequential + i));
  const committedAt = new Map<string, number>();
  for (const id of burstIds) committedAt.set(id, complete(id));
  await arrived(sequential + burst);
  const burstLatency = burstIds.map((id) => arrivals.get(id)! - committedAt.get(id)!);

  const a = summarise(seqLatency, 0, 1);
  const b = summarise(burstLatency, 0, 1);
  console.log(`conditions: ${conditions()} · server in process, receiver on loopback`);
  console.log(`(a) ${sequential} tasks one at a time: commit -> callback arrives p50 ${ms(a.p50)}, p99 ${ms(a.p99)}, max ${ms(a.max)}`);
  console.log(`(b) ${burst} tasks completing at once: p50 ${ms(b.p50)}, p99 ${ms(b.p99)}, max ${ms(b.max)}`);
  console.log(`target (every callback within 1 s): ${Math.max(a.max, b.max) < 1000 ? "met" : "NOT met"}`);
} finally {
  receiver.stop(true);
  await ao.stop();
  rmSync(dataDir, { recursive: true, force: true });
}
