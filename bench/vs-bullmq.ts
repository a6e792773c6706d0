// ao against BullMQ on Redis, side by side in one run (issue 14). Starts its own Redis (Debian's
// redis-server, AOF everysec, its own directory and pidfile under /var/tmp/bench-redis/, stopped
// at the end) and its own `ao serve`, then alternates the two (ABAB, the same duration each):
//   lifecycle  ao: create over HTTP with an aot_ token, offer, claim, 10 events, complete, 64 in
//              flight, 50 simulated workers (bench/workers-sim.ts) sending claim, events and
//              completion on their sockets as `ao worker` does (--worker-requests http: over HTTP,
//              as before 2026-11-26); BullMQ: the peers harness's
//              lifecycle phase (jobs enqueued first, then one worker at concurrency 50 drains
//              them, each job making 10 awaited writes: job.log x5, job.updateProgress x5).
//   drain      (not run unless named in --phases) the like-for-like of BullMQ's lifecycle: ao's
//              workers leave, N tasks are created with nobody to take them, then 50 workers of
//              capacity 1 (BullMQ's concurrency 50) connect and drain them: offer, claim, 10
//              events, complete. Timed from the workers' start to the last completion; BullMQ's
//              lifecycle phase is run beside it.
//   latency    at a fixed rate: ao create -> offer received at a worker; BullMQ add -> handler
//              start. Both counted from when the request was sent (the harness's definition).
//   CPU        ao: the server process's CPU time per lifecycle; BullMQ: redis-server's and the
//              worker process's CPU time per job.
// The peers harness (/work/shared/peers, BullMQ 6.7 + ioredis, run with the Node of its own
// node_modules) must have been installed with `npm install` in a copy passed as --peers.
//   bun bench/vs-bullmq.ts --peers /work/peers-run [--seconds 10] [--reps 3] [--rate 500]
//                          [--phases lifecycle,latency,drain] [--worker-requests socket|http]
//                          [--binary dist/ao] [--server ao|bare] [--help]
// --server bare runs bench/lifecycle-bare-server.ts in ao's place (the same clients, protocol, rows
// and schema, nothing else): the ceiling of this design on this machine, beside BullMQ.
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { conditions, freePort, identity, startAo } from "./tasks-support";
import { cpuMs, pairWorkers, percentiles } from "./workers-support";
import { startFleet } from "./workers-fleet";
import { busyPct, machineTicks, median, peerOptions, peerSystem, peersDir } from "./peers-support";
import { execWithServerAllocator } from "../src/server/allocator";
import { BARE_IDENTITY, barePaired, startBare } from "./lifecycle-bare-server";

// This process (which creates ao's tasks) and the simulated workers it starts are Bun processes
// sharing the two cores with the server: they run with the allocator setting `ao serve` gives
// itself, so the load generator takes no more of the machine than it must. The server inherits
// the setting and keeps it. `MIMALLOC_PURGE_HOLES=1` before the command measures Bun's default.
execWithServerAllocator();

const { values } = parseArgs({ options: { ...peerOptions, server: { type: "string", default: "ao" } } });
const bare = values.server === "bare";
/** The name of the server measured, in the output. */
const AO = bare ? "bare" : "ao";
const seconds = Number(values.seconds);
const reps = Number(values.reps);
const rate = Number(values.rate);
const phases = new Set(values.phases!.split(","));
const PEERS = peersDir(values, import.meta.path, "bullmq");
if (!Bun.which("redis-server")) {
  console.error("redis-server is missing: apt-get install -y redis-server");
  process.exit(2);
}
const sleep = (ms: number) => Bun.sleep(ms);
const load = () => loadavg().map((x) => x.toFixed(2)).join(" ");

// ---------------------------------------------------------------- Redis (AOF everysec)
const redisPort = freePort();
const redisDir = `/var/tmp/bench-redis/vs-bullmq-${process.pid}`;
const redisPidfile = join(redisDir, "redis.pid");
mkdirSync(redisDir, { recursive: true });
const started = Bun.spawnSync([
  "redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "--port", String(redisPort), "--save", "", "--appendonly", "yes",
  "--appendfsync", "everysec", "--dir", redisDir, "--pidfile", redisPidfile, "--logfile", join(redisDir, "redis.log"),
]);
if (started.exitCode !== 0) throw new Error(`redis-server did not start: ${started.stderr}`);
for (let i = 0; i < 100 && !existsSync(redisPidfile); i++) await sleep(50);
const redisPid = Number(readFileSync(redisPidfile, "utf8").trim());

let ao: Awaited<ReturnType<typeof startAo>> | null = null;
let sim: ReturnType<typeof Bun.spawn> | null = null;
async function teardown() {
  try {
    sim?.kill();
  } catch {}
  await ao?.stop().catch(() => {});
  try {
    process.kill(redisPid, "SIGTERM");
    for (let i = 0; i < 100 && existsSync(`/proc/${redisPid}`); i++) await sleep(50);
  } catch {}
  rmSync(redisDir, { recursive: true, force: true });
}
process.on("SIGINT", () => void teardown().then(() => process.exit(130)));

// ---------------------------------------------------------------- the BullMQ roles
const bullmq = peerSystem(PEERS, "bull.mjs", { ...process.env, REDIS_PORT: String(redisPort), REDIS_PIDFILE: redisPidfile });
const bull = bullmq.role;

/** N jobs enqueued first (addBulk), then drained by one worker at concurrency 50. */
async function bullLifecycle(n: number) {
  await bullmq.reset();
  await bull(["enqueue", "--n", String(n), "--mode", "batch", "--task", "lifecycle"]);
  const r = await bull(["work", "--phase", "lifecycle", "--n", String(n)]);
  const secs = r.processMs / 1000;
  return {
    perSec: r.jobsPerSec as number,
    seconds: secs,
    redisCpuMsPerJob: ((r.cpu.serverCpuPct / 100) * r.processMs) / n,
    workerCpuMsPerJob: ((r.cpu.selfCpuPct / 100) * r.processMs) / n,
    busy: r.cpu.machineBusyPct as number,
  };
}

async function bullLatency() {
  const r = (await bullmq.latency(rate, seconds)).work;
  return { p50: r.latency.p50 as number, p99: r.latency.p99 as number, n: r.latency.n as number };
}

// ---------------------------------------------------------------- ao
console.log(`# vs-bullmq · ${conditions()}`);
console.log(`uptime before: ${readFileSync("/proc/loadavg", "utf8").trim()}`);
ao = bare ? await startBare() : await startAo(values.binary);
const who = bare ? BARE_IDENTITY : await identity(ao.url);
const paired = bare ? barePaired(Number(values.workers)) : await pairWorkers(ao.url, who.accessToken, who.orgId, Number(values.workers));

const requests = values["worker-requests"] === "http" ? "http" : "socket";
let fleet = await startFleet(ao.url, who, paired, requests);
sim = fleet.sim;
const ask = (msg: unknown) => fleet.ask(msg);

/**
 * CPU of ao's clients so far (ms): the simulated workers' process and this one, which creates the
 * tasks. BullMQ's figures count its worker process; these make ao's side comparable (README).
 */
const clientsCpuMs = (simPid: number) => cpuMs(simPid) + cpuMs(process.pid);

async function aoLifecycle(secs: number) {
  sim!.send({ cmd: "events", n: 10 });
  const cpu0 = cpuMs(ao!.pid);
  const clients0 = clientsCpuMs(sim!.pid);
  const m0 = machineTicks();
  const { base, created, done, elapsed } = await fleet.closedLoop(secs, Number(values.inflight));
  const result = {
    perSec: done / elapsed,
    cpuMsPerTask: (cpuMs(ao!.pid) - cpu0) / done,
    clientsMsPerTask: (clientsCpuMs(sim!.pid) - clients0) / done,
    busy: busyPct(m0, machineTicks()),
  };
  // Let the tasks in flight finish before the next run.
  for (let i = 0; i < 100 && fleet.completed - base < created; i++) await sleep(20);
  return result;
}

/** The workers leave, `n` tasks are created, then 50 workers of capacity 1 drain them (timed). */
async function aoDrain(n: number) {
  sim!.send({ cmd: "exit" });
  await sim!.exited;
  const errors = fleet.errors;
  let made = 0;
  await Promise.all(
    Array.from({ length: Number(values.inflight) }, async () => {
      while (made < n) {
        made++;
        await fleet.create().catch(() => void fleet.errors++);
      }
    }),
  );
  const queued = n - (fleet.errors - errors);
  const cpu0 = cpuMs(ao!.pid);
  const self0 = cpuMs(process.pid);
  const m0 = machineTicks();
  const t0 = performance.now();
  const drainer = await startFleet(ao!.url, who, paired, requests, { capacity: 1, events: 10 });
  sim = drainer.sim;
  await drainer.whenCompleted(queued);
  const secs = (performance.now() - t0) / 1000;
  const result = {
    perSec: queued / secs,
    seconds: secs,
    cpuMsPerTask: (cpuMs(ao!.pid) - cpu0) / queued,
    // The drainer's process started inside the timed span: all of its CPU is the drain's.
    clientsMsPerTask: (cpuMs(drainer.sim.pid) + cpuMs(process.pid) - self0) / queued,
    busy: busyPct(m0, machineTicks()),
  };
  // The fleet of the other phases comes back.
  const errorsSince = fleet.errors + (await drainer.ask({ cmd: "dump" })).errors;
  drainer.sim.send({ cmd: "exit" });
  await drainer.sim.exited;
  fleet = await startFleet(ao!.url, who, paired, requests);
  fleet.errors = errorsSince;
  sim = fleet.sim;
  return result;
}

async function aoLatency(r: number, secs: number) {
  sim!.send({ cmd: "events", n: 0 });
  await ask({ cmd: "dump" });
  const sentAt = new Map((await fleet.atRate(r, secs)).map((c) => [c.id, c.sent]));
  await sleep(500);
  const dump = await ask({ cmd: "dump" });
  fleet.errors += dump.errors;
  const offer = percentiles((dump.offered as [string, number][]).filter(([id]) => sentAt.has(id)).map(([id, t]) => t - sentAt.get(id)!));
  return { p50: offer.p50, p99: offer.p99, n: offer.n };
}

// ---------------------------------------------------------------- ABAB
type Life = { perSec: number; cpu: string; busy: number };
const life: { ao: Life[]; bull: Life[] } = { ao: [], bull: [] };
const drain: { ao: Life[]; bull: Life[] } = { ao: [], bull: [] };
const lat: { ao: { p50: number; p99: number; n: number }[]; bull: { p50: number; p99: number; n: number }[] } = { ao: [], bull: [] };
const loads: string[] = [];
const aoCpu: number[] = [];
try {
  // Warm-ups (not counted): ao's JIT and caches, and a BullMQ drain.
  if (phases.has("lifecycle")) await aoLifecycle(2);
  if (phases.has("latency")) await aoLatency(rate, 2);
  let bullN = Math.round(seconds * 3000);
  let aoDrainN = Math.round(seconds * 1500);
  for (let rep = 0; rep < reps; rep++) {
    if (phases.has("lifecycle")) {
      loads.push(`lifecycle rep ${rep + 1}: ${load()}`);
      await sleep(1000);
      const a = await aoLifecycle(seconds);
      life.ao.push({ perSec: a.perSec, cpu: `${a.cpuMsPerTask.toFixed(3)} ms server + ${a.clientsMsPerTask.toFixed(3)} ms clients`, busy: a.busy });
      aoCpu.push(a.cpuMsPerTask);
      const b = await bullLifecycle(bullN);
      life.bull.push({ perSec: b.perSec, cpu: `${b.redisCpuMsPerJob.toFixed(3)} ms redis + ${b.workerCpuMsPerJob.toFixed(3)} ms worker`, busy: b.busy });
      // The next BullMQ run drains about `seconds` worth of jobs at the rate just measured.
      bullN = Math.max(1000, Math.round(b.perSec * seconds));
      console.error(`lifecycle rep ${rep + 1}: ${AO} ${a.perSec.toFixed(0)}/s, BullMQ ${b.perSec.toFixed(0)}/s (${b.seconds.toFixed(1)} s)`);
    }
    if (phases.has("drain")) {
      loads.push(`drain rep ${rep + 1}: ${load()}`);
      await sleep(1000);
      const a = await aoDrain(aoDrainN);
      drain.ao.push({ perSec: a.perSec, cpu: `${a.cpuMsPerTask.toFixed(3)} ms server + ${a.clientsMsPerTask.toFixed(3)} ms clients`, busy: a.busy });
      aoDrainN = Math.max(1000, Math.round(a.perSec * seconds));
      const b = await bullLifecycle(bullN);
      drain.bull.push({ perSec: b.perSec, cpu: `${b.redisCpuMsPerJob.toFixed(3)} ms redis + ${b.workerCpuMsPerJob.toFixed(3)} ms worker`, busy: b.busy });
      bullN = Math.max(1000, Math.round(b.perSec * seconds));
      console.error(`drain rep ${rep + 1}: ${AO} ${a.perSec.toFixed(0)}/s (${a.seconds.toFixed(1)} s), BullMQ ${b.perSec.toFixed(0)}/s (${b.seconds.toFixed(1)} s)`);
    }
    if (phases.has("latency")) {
      loads.push(`latency rep ${rep + 1}: ${load()}`);
      await sleep(1000);
      const a = await aoLatency(rate, seconds);
      lat.ao.push(a);
      const b = await bullLatency();
      lat.bull.push(b);
      console.error(`latency rep ${rep + 1}: ${AO} p50 ${a.p50.toFixed(2)} p99 ${a.p99.toFixed(2)}; BullMQ p50 ${b.p50.toFixed(2)} p99 ${b.p99.toFixed(2)}`);
    }
  }
} finally {
  sim.send({ cmd: "exit" });
  await sim.exited;
  sim = null;
  await teardown();
}

const f = (v: number) => v.toFixed(2);
const lines: string[] = [`\nuptime after: ${readFileSync("/proc/loadavg", "utf8").trim()}; errors ${fleet.errors}`, ...loads.map((l) => `load average before ${l}`), ""];
/** ao's runs beside BullMQ's: each run's rate, machine load and CPU per task, then the medians and their ratio. */
function sideBySide(runs: { ao: Life[]; bull: Life[] }, labels: { rate: string; busy: string; cpu: string; name: string }): string[] {
  const each = (xs: Life[], f: (x: Life) => string) => xs.map(f).join(" / ");
  const a = median(runs.ao.map((x) => x.perSec));
  const b = median(runs.bull.map((x) => x.perSec));
  return [
    `| what | ${AO} (each run) | BullMQ, AOF everysec (each run) |`,
    "|---|---|---|",
    `| ${labels.rate} | ${each(runs.ao, (x) => x.perSec.toFixed(0))} /s | ${each(runs.bull, (x) => x.perSec.toFixed(0))} /s |`,
    `| ${labels.busy} | ${each(runs.ao, (x) => x.busy.toFixed(0))} | ${each(runs.bull, (x) => x.busy.toFixed(0))} |`,
    `| ${labels.cpu} | ${each(runs.ao, (x) => x.cpu)} | ${each(runs.bull, (x) => x.cpu)} |`,
    "",
    `${labels.name} medians: ${AO} ${a.toFixed(0)}/s, BullMQ ${b.toFixed(0)}/s, ratio ${AO}/BullMQ **${(a / b).toFixed(2)}**`,
  ];
}
if (life.ao.length) {
  lines.push(
    ...sideBySide(life, {
      rate: `lifecycle (create, offer/pickup, claim, 10 events, complete), ${seconds} s`,
      busy: "machine busy during the run (% of one core, 200 = both)",
      cpu: "CPU per lifecycle",
      name: "lifecycle",
    }),
    `${AO} server CPU per lifecycle, median: ${median(aoCpu).toFixed(3)} ms (goal <= 0.5 ms)`,
  );
}
if (drain.ao.length) {
  lines.push(
    "",
    ...sideBySide(drain, {
      rate: "drain: created first, then drained by 50 at a time (offer/pickup, claim, 10 events, complete)",
      busy: "machine busy during the drain",
      cpu: "CPU per drained task",
      name: "drain",
    }),
  );
}
if (lat.ao.length) {
  const m = (xs: { p50: number; p99: number }[], k: "p50" | "p99") => median(xs.map((x) => x[k]));
  lines.push(
    "",
    `pickup at ${rate}/s for ${seconds} s (${AO} create -> offer received; BullMQ add -> handler start; from send):`,
    `| run | ${AO} p50 / p99 | BullMQ p50 / p99 |`,
    `|---|---|---|`,
    ...lat.ao.map((x, i) => `| ${i + 1} | ${f(x.p50)} / ${f(x.p99)} ms (n ${x.n}) | ${f(lat.bull[i].p50)} / ${f(lat.bull[i].p99)} ms (n ${lat.bull[i].n}) |`),
    `| median | ${f(m(lat.ao, "p50"))} / ${f(m(lat.ao, "p99"))} ms | ${f(m(lat.bull, "p50"))} / ${f(m(lat.bull, "p99"))} ms |`,
    "",
    `pickup ratios ${AO}/BullMQ: p50 **${(m(lat.ao, "p50") / m(lat.bull, "p50")).toFixed(2)}**, p99 **${(m(lat.ao, "p99") / m(lat.bull, "p99")).toFixed(2)}** (<= 1.0 is the goal)`,
  );
}
console.log(lines.join("\n"));
process.exit(0);
