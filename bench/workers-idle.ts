// What idle workers cost the server: 1,000 paired workers connected and heartbeating every 10 s
// (the default), no tasks. Server CPU (user + system, from /proc) over the measuring window,
// against the same window with no worker connected. Target: under 5% of one core.
//   bun bench/workers-idle.ts [--workers 1000] [--seconds 30] [--binary dist/ao]
import { parseArgs } from "node:util";
import { conditions, identity, startAo } from "./tasks-support";
import { SimWorker, cpuMs, pairWorkers } from "./workers-support";

const { values } = parseArgs({
  options: {
    workers: { type: "string", default: "1000" },
    seconds: { type: "string", default: "30" },
    binary: { type: "string" },
  },
});
const n = Number(values.workers);
const seconds = Number(values.seconds);

console.log(`# workers-idle · ${conditions()}`);
const ao = await startAo(values.binary);
const who = await identity(ao.url);
const t0 = performance.now();
const paired = await pairWorkers(ao.url, who.accessToken, who.orgId, n);
console.log(`paired ${n} workers in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

async function window(secs: number) {
  const before = cpuMs(ao.pid);
  const start = performance.now();
  await Bun.sleep(secs * 1000);
  return (cpuMs(ao.pid) - before) / (performance.now() - start);
}

await Bun.sleep(2000);
const baseline = await window(seconds);
const workers = paired.map((p) => new SimWorker(ao.url, p, 1, () => {}));
const c0 = performance.now();
for (let i = 0; i < workers.length; i += 50) await Promise.all(workers.slice(i, i + 50).map((w) => w.connect(10_000)));
console.log(`connected ${n} workers in ${((performance.now() - c0) / 1000).toFixed(1)} s`);
await Bun.sleep(12_000); // every worker's heartbeat has started (they are spread over 10 s)
const idle = await window(seconds);
for (const w of workers) w.close();
await ao.stop();

const pct = (v: number) => `${(v * 100).toFixed(2)}%`;
console.log(`
| what | server CPU (share of one core) |
|---|---|
| no worker connected, ${seconds} s | ${pct(baseline)} |
| ${n} idle workers, heartbeat every 10 s, ${seconds} s | ${pct(idle)} |
| cost of the idle workers | ${pct(idle - baseline)} (target < 5%: ${idle - baseline < 0.05 ? "met" : "NOT met"}) |`);
process.exit(0);
