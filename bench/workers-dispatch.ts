// Dispatch speed with 50 connected workers (simulated protocol clients in this process; the
// server is `ao serve` in its own process):
//   (a) tasks created at a fixed 500/s (open loop): create -> offer received, and
//       create -> claimed (the claim's 200 at the worker), p50/p99; targets p99 < 5 ms and < 10 ms;
//   (b) full lifecycle throughput: create, offer, claim, 10 events, complete, with 64 tasks in
//       flight; target >= 1,000 tasks/s.
//   bun bench/workers-dispatch.ts [--rate 500] [--seconds 10] [--workers 50] [--binary dist/ao]
import { parseArgs } from "node:util";
import { conditions, identity, startAo, call } from "./tasks-support";
import { SimWorker, cpuMs, pairWorkers, percentiles } from "./workers-support";

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "500" },
    seconds: { type: "string", default: "10" },
    workers: { type: "string", default: "50" },
    inflight: { type: "string", default: "64" },
    binary: { type: "string" },
  },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const nWorkers = Number(values.workers);
const inflight = Number(values.inflight);

console.log(`# workers-dispatch · ${conditions()}`);
const ao = await startAo(values.binary);
const who = await identity(ao.url);
const paired = await pairWorkers(ao.url, who.accessToken, who.orgId, nWorkers);

const createUrl = `${ao.url}/api/v1/orgs/${who.orgId}/tasks`;
const createHeaders = { authorization: `Bearer ${who.apiToken}`, "content-type": "application/json" };
const body = JSON.stringify({ projectId: who.projectId, title: "bench", prompt: "work" });
const create = async (): Promise<string> => {
  const res = await fetch(createUrl, { method: "POST", headers: createHeaders, body });
  const json = (await res.json()) as { id: string };
  if (res.status !== 201) throw new Error(`create -> ${res.status} ${JSON.stringify(json)}`);
  return json.id;
};

// ---------------------------------------------------------------- timings keyed by task id
const offeredAt = new Map<string, number>();
const claimedAt = new Map<string, number>();
const done = new Map<string, () => void>();
const finished = new Set<string>();
let eventsPerTask = 0;
let errors = 0;

async function work(w: SimWorker, m: { type: string; [k: string]: any }) {
  if (m.type !== "offer") return;
  offeredAt.set(m.taskId, performance.now());
  const claim = await w.api("POST", `/worker/tasks/${m.taskId}/claim`, { offerId: m.offerId });
  if (claim.status !== 200) {
    errors++;
    await claim.arrayBuffer();
    return;
  }
  claimedAt.set(m.taskId, performance.now());
  const { leaseToken } = (await claim.json()) as { leaseToken: string };
  if (eventsPerTask > 0) {
    const events = Array.from({ length: eventsPerTask }, (_, i) => ({ seq: i + 1, type: "log", data: { line: `line ${i + 1}` } }));
    const r = await w.api("POST", `/worker/tasks/${m.taskId}/events`, { leaseToken, events });
    if (r.status !== 200) errors++;
    await r.arrayBuffer();
  }
  const t = await w.api("POST", `/worker/tasks/${m.taskId}/transition`, { leaseToken, to: "completed", summary: "ok" });
  if (t.status !== 200) errors++;
  await t.arrayBuffer();
  finished.add(m.taskId);
  done.get(m.taskId)?.();
}

const workers = paired.map((p) => new SimWorker(ao.url, p, 8, (w, m) => void work(w, m).catch(() => errors++)));
await Promise.all(workers.map((w) => w.connect()));

// ---------------------------------------------------------------- (a) fixed rate
async function fixedRate(r: number, secs: number) {
  offeredAt.clear();
  claimedAt.clear();
  const sentAt = new Map<string, number>();
  const total = Math.round(r * secs);
  const pending: Promise<void>[] = [];
  const start = performance.now();
  let i = 0;
  while (i < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * r) / 1000) + 1);
    for (; i < due; i++) {
      // Latency counts from when the create was due, so a slow server cannot hide its queue.
      const scheduled = start + (i * 1000) / r;
      pending.push(create().then((id) => void sentAt.set(id, scheduled), () => void errors++));
    }
    await Bun.sleep(1);
  }
  await Promise.all(pending);
  await Bun.sleep(500);
  const toOffer: number[] = [];
  const toClaim: number[] = [];
  for (const [id, t0] of sentAt) {
    const o = offeredAt.get(id);
    const c = claimedAt.get(id);
    if (o !== undefined) toOffer.push(o - t0);
    if (c !== undefined) toClaim.push(c - t0);
  }
  return { offer: percentiles(toOffer), claim: percentiles(toClaim), created: sentAt.size, elapsed: (performance.now() - start) / 1000 };
}

await fixedRate(rate, 2); // warm up
let cpu0 = cpuMs(ao.pid);
const a = await fixedRate(rate, seconds);
const cpuA = (cpuMs(ao.pid) - cpu0) / a.created;

// ---------------------------------------------------------------- (b) lifecycle throughput
eventsPerTask = 10;
async function lifecycle(secs: number) {
  let completed = 0;
  const end = performance.now() + secs * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: inflight }, async () => {
      while (performance.now() < end) {
        const id = await create();
        if (!finished.has(id)) await new Promise<void>((resolve) => done.set(id, resolve));
        done.delete(id);
        completed++;
      }
    }),
  );
  return { completed, perSec: completed / ((performance.now() - start) / 1000) };
}
await lifecycle(2); // warm up
cpu0 = cpuMs(ao.pid);
const b = await lifecycle(seconds);
const cpuB = (cpuMs(ao.pid) - cpu0) / b.completed;

for (const w of workers) w.close();
const check = await call(ao.url, "GET", `/orgs/${who.orgId}/tasks?status=queued&limit=1`, who.accessToken);
await ao.stop();

const f = (v: number) => `${v.toFixed(2)} ms`;
console.log(`
${nWorkers} workers (capacity 8 each), ${seconds} s per run, errors ${errors}, queued at the end ${check.items.length}

| what | n | p50 | p90 | p99 | max | target |
|---|---|---|---|---|---|---|
| create -> offer received, ${rate} tasks/s | ${a.offer.n} | ${f(a.offer.p50)} | ${f(a.offer.p90)} | ${f(a.offer.p99)} | ${f(a.offer.max)} | p99 < 5 ms: ${a.offer.p99 < 5 ? "met" : "NOT met"} |
| create -> claimed, ${rate} tasks/s | ${a.claim.n} | ${f(a.claim.p50)} | ${f(a.claim.p90)} | ${f(a.claim.p99)} | ${f(a.claim.max)} | p99 < 10 ms: ${a.claim.p99 < 10 ? "met" : "NOT met"} |

server CPU per task: ${cpuA.toFixed(2)} ms at ${rate}/s (create, claim, complete); ${cpuB.toFixed(2)} ms in the lifecycle run (with 10 events)

full lifecycle (create, offer, claim, 10 events, complete), ${inflight} in flight: ${b.perSec.toFixed(0)} tasks/s (${b.completed} in ${seconds} s); target >= 1,000/s: ${b.perSec >= 1000 ? "met" : "NOT met"}`);
process.exit(0);
