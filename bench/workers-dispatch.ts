// Dispatch speed with 50 connected workers. Three processes: `ao serve`; the 50 simulated
// workers (bench/workers-sim.ts: protocol clients that claim each offer, optionally post 10
// events, and report completed); and this one, which creates the tasks. Timestamps are
// epoch-based high-resolution clocks, comparable across the processes.
//   (a) tasks created at a fixed 500/s (open loop): create -> offer received, and
//       create -> claimed (the claim's 200 at the worker); targets p99 < 5 ms and < 10 ms;
//   (b) full lifecycle throughput: create, offer, claim, 10 events, complete, with 64 tasks in
//       flight; target >= 1,000 tasks/s.
//   bun bench/workers-dispatch.ts [--rate 500] [--seconds 10] [--workers 50] [--binary dist/ao] [--help]
import { parseArgs } from "node:util";
import { call, conditions, helpIfAsked, identity, startAo } from "./tasks-support";
import { cpuMs, pairWorkers, percentiles } from "./workers-support";
import { startFleet } from "./workers-fleet";

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "500" },
    seconds: { type: "string", default: "10" },
    workers: { type: "string", default: "50" },
    inflight: { type: "string", default: "64" },
    binary: { type: "string" },
    help: { type: "boolean" },
  },
});
helpIfAsked(values.help, import.meta.path);
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const nWorkers = Number(values.workers);
const inflight = Number(values.inflight);

console.log(`# workers-dispatch · ${conditions()}`);
const ao = await startAo(values.binary);
const who = await identity(ao.url);
const paired = await pairWorkers(ao.url, who.accessToken, who.orgId, nWorkers);

const fleet = await startFleet(ao.url, who, paired);
const { sim, ask } = fleet;

// ---------------------------------------------------------------- (a) fixed rate
async function fixedRate(r: number, secs: number) {
  await ask({ cmd: "dump" });
  // Latency counts from when the create was due, so a slow server cannot hide its queue.
  const dueAt = new Map((await fleet.atRate(r, secs)).map((c) => [c.id, c.due]));
  await Bun.sleep(500);
  const dump = await ask({ cmd: "dump" });
  fleet.errors += dump.errors;
  const since = (pairs: [string, number][]) => pairs.filter(([id]) => dueAt.has(id)).map(([id, t]) => t - dueAt.get(id)!);
  return { offer: percentiles(since(dump.offered)), claim: percentiles(since(dump.claimed)), created: dueAt.size };
}

await fixedRate(rate, 2); // warm up
let cpu0 = cpuMs(ao.pid);
const a = await fixedRate(rate, seconds);
const cpuA = (cpuMs(ao.pid) - cpu0) / a.created;

// ---------------------------------------------------------------- (b) lifecycle throughput
sim.send({ cmd: "events", n: 10 });
async function lifecycle(secs: number) {
  const { done, elapsed } = await fleet.closedLoop(secs, inflight);
  return { completed: done, perSec: done / elapsed };
}
await lifecycle(2); // warm up
await Bun.sleep(500);
cpu0 = cpuMs(ao.pid);
const b = await lifecycle(seconds);
const cpuB = (cpuMs(ao.pid) - cpu0) / b.completed;
await Bun.sleep(1000);

sim.send({ cmd: "exit" });
await sim.exited;
const check = await call(ao.url, "GET", `/orgs/${who.orgId}/tasks?status=queued&limit=1`, who.accessToken);
await ao.stop();

const f = (v: number) => `${v.toFixed(2)} ms`;
console.log(`
${nWorkers} workers (capacity 8 each), ${seconds} s per run, errors ${fleet.errors}, queued at the end ${check.items.length}

| what | n | p50 | p90 | p99 | max | target |
|---|---|---|---|---|---|---|
| create -> offer received, ${rate} tasks/s | ${a.offer.n} | ${f(a.offer.p50)} | ${f(a.offer.p90)} | ${f(a.offer.p99)} | ${f(a.offer.max)} | p99 < 5 ms: ${a.offer.p99 < 5 ? "met" : "NOT met"} |
| create -> claimed, ${rate} tasks/s | ${a.claim.n} | ${f(a.claim.p50)} | ${f(a.claim.p90)} | ${f(a.claim.p99)} | ${f(a.claim.max)} | p99 < 10 ms: ${a.claim.p99 < 10 ? "met" : "NOT met"} |

server CPU per task: ${cpuA.toFixed(2)} ms at ${rate}/s (create, claim, complete); ${cpuB.toFixed(2)} ms in the lifecycle run (with 10 events)
full lifecycle (create, offer, claim, 10 events, complete), ${inflight} in flight: ${b.perSec.toFixed(0)} tasks/s (${b.completed} in ${seconds} s); target >= 1,000/s: ${b.perSec >= 1000 ? "met" : "NOT met"}`);
process.exit(0);
