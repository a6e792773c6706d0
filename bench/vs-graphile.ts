// ao on PostgreSQL, with one server and with two, against graphile-worker on the same PostgreSQL
// cluster, and ao on SQLite for reference, side by side in one run (issue 13). Starts its own
// PostgreSQL (bench/postgres-support.ts: stock durability, fsync and synchronous_commit on, data on
// disk) with one database per system, and its own ao servers, then alternates the systems (the
// same duration each, the order rotated every repetition):
//   ao sqlite   one `ao serve` on its own SQLite file;
//   ao pg x1    one `ao serve` on PostgreSQL;
//   ao pg x2    two `ao serve` processes on one PostgreSQL database and one master key file, the
//               simulated workers dealt out over both and the tasks created on each in turn;
//   gw <prof>   graphile-worker 0.18 through the peers harness (gw.mjs), for each --gw-profiles
//               entry (default: concurrency 50; tuned: plus a local queue of 500 and unbatched
//               completions, which lock jobs ahead of time).
// Phases, as bench/vs-bullmq.ts measures them against BullMQ:
//   lifecycle  ao: create over HTTP with an aot_ token, offer, claim, 10 events, complete, 64 in
//              flight, 50 simulated workers (bench/workers-sim.ts, requests on their sockets as
//              `ao worker` sends them; --worker-requests http: over HTTP); graphile-worker: jobs enqueued
//              first, then one worker drains them, each job making 10 awaited inserts, each in its
//              own transaction.
//   latency    at a fixed rate: ao create -> offer received at a worker; graphile-worker addJob ->
//              handler start. Both counted from when the request was sent.
//   CPU        per lifecycle: ao's server processes, and PostgreSQL's (the postmaster and its
//              backends) where it is used; graphile-worker's worker process and PostgreSQL's.
// The load average is read before every run. PostgreSQL is CHECKPOINTed before every run on it.
// The peers harness (/work/shared/peers: graphile-worker + pg, run with the Node of its own
// node_modules) must have been installed with `npm install` in a copy passed as --peers.
//   bun bench/vs-graphile.ts --peers /work/peers-run [--seconds 10] [--reps 3] [--rate 500]
//        [--phases lifecycle,latency] [--systems sqlite,pg1,pg2,gw] [--gw-profiles default,tuned]
//        [--worker-requests socket|http] [--binary dist/ao] [--help]
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SQL } from "bun";
import { conditions, identity, startAo, type AoServer } from "./tasks-support";
import { cpuMs, pairWorkers, percentiles } from "./workers-support";
import { now, startFleet } from "./workers-fleet";
import { fdatasyncPerSec, startPostgres } from "./postgres-support";
import { busyPct, machineTicks, median, peerOptions, peerSystem, peersDir } from "./peers-support";

const { values } = parseArgs({
  options: {
    ...peerOptions,
    systems: { type: "string", default: "sqlite,pg1,pg2,gw" },
    "gw-profiles": { type: "string", default: "default,tuned" },
  },
});
const seconds = Number(values.seconds);
const reps = Number(values.reps);
const rate = Number(values.rate);
const phases = new Set(values.phases!.split(","));
const wanted = new Set(values.systems!.split(","));
const PEERS = peersDir(values, import.meta.path, wanted.has("gw") ? "graphile-worker" : null);
const sleep = (ms: number) => Bun.sleep(ms);
const load = () => loadavg()[0].toFixed(1);

// ---------------------------------------------------------------- PostgreSQL
console.log(`# vs-graphile · ${conditions()}`);
console.log(`uptime before: ${readFileSync("/proc/loadavg", "utf8").trim()}`);
const pg = await startPostgres();
console.log(`PostgreSQL ${pg.version}: ${pg.settings}`);

/** CHECKPOINT first, so that no checkpoint's writes from the previous run fall in the next. */
async function checkpoint() {
  const sql = new SQL(pg.url());
  try {
    await sql.unsafe("checkpoint");
  } finally {
    await sql.close();
  }
}

// ---------------------------------------------------------------- the graphile-worker roles
const gwUrl = wanted.has("gw") ? await pg.createDatabase("gw") : "";
// The harness's reset empties the job tables and CHECKPOINTs.
const graphile = peerSystem(PEERS, "gw.mjs", { ...process.env, DATABASE_URL: gwUrl, PG_PIDFILE: pg.pidfile, NO_LOG_SUCCESS: "1" });
const gw = graphile.role;

/** N jobs enqueued first (addJobs), then drained by one worker of the profile. */
async function gwLifecycle(profile: string, n: number): Promise<Life> {
  await graphile.reset();
  await gw(["enqueue", "--n", String(n), "--mode", "batch", "--task", "lifecycle"]);
  const r = await gw(["work", "--phase", "lifecycle", "--n", String(n), "--profile", profile]);
  if (r.ended !== n || r.events !== n * 10) console.error(`gw ${profile} lifecycle: ${r.ended}/${n} ended, ${r.events} events`);
  const ms = r.processMs as number;
  return {
    perSec: r.jobsPerSec,
    tasks: n,
    busy: r.cpu.machineBusyPct,
    cpu: `${(((r.cpu.serverCpuPct / 100) * ms) / n).toFixed(3)} ms PostgreSQL + ${(((r.cpu.selfCpuPct / 100) * ms) / n).toFixed(3)} ms worker`,
  };
}

async function gwLatency(profile: string): Promise<Lat> {
  const { work: r, produce: p } = await graphile.latency(rate, seconds, ["--profile", profile]);
  return { p50: r.latency.p50, p99: r.latency.p99, n: r.latency.n, answerP99: p.addCall.p99 };
}

// ---------------------------------------------------------------- ao
/** A lifecycle run: its rate, the machine's busy time, CPU per lifecycle, and how many lifecycles ran whole in it (drain included). */
type Life = { perSec: number; cpu: string; busy: number; tasks: number };
/** A pickup run: its percentiles over n tasks, and the p99 of the create (addJob) calls' answers. */
type Lat = { p50: number; p99: number; n: number; answerP99: number };

async function startSystem(label: string, servers: AoServer[], usesPostgres: boolean) {
  const urls = servers.map((s) => s.url);
  const who = await identity(urls[0]);
  const paired = await pairWorkers(urls[0], who.accessToken, who.orgId, Number(values.workers));
  const fleet = await startFleet(urls, who, paired, values["worker-requests"] === "http" ? "http" : "socket");
  const serversCpu = () => servers.reduce((sum, s) => sum + cpuMs(s.pid), 0);

  async function lifecycle(secs: number): Promise<Life> {
    fleet.sim.send({ cmd: "events", n: 10 });
    const cpu0 = serversCpu();
    const pg0 = usesPostgres ? pg.cpuMs() : 0;
    const m0 = machineTicks();
    const { base, created, done, elapsed } = await fleet.closedLoop(secs, Number(values.inflight));
    const busy = busyPct(m0, machineTicks());
    const server = (serversCpu() - cpu0) / done;
    const db = usesPostgres ? `+ ${((pg.cpuMs() - pg0) / done).toFixed(3)} ms PostgreSQL` : "";
    // Let the tasks in flight finish before the next run (a backlog left here would be offered
    // ahead of the next run's tasks).
    const deadline = now() + 60_000;
    while (fleet.completed - base < created && now() < deadline) await sleep(20);
    if (fleet.completed - base < created) console.error(`${label}: ${created - (fleet.completed - base)} tasks still in flight 60 s after the run`);
    return { perSec: done / elapsed, busy, tasks: created, cpu: `${server.toFixed(3)} ms ${servers.length > 1 ? "servers" : "server"} ${db}`.trim() };
  }

  async function latency(r: number, secs: number): Promise<Lat> {
    fleet.sim.send({ cmd: "events", n: 0 });
    await fleet.ask({ cmd: "dump" });
    const created = await fleet.atRate(r, secs);
    const sentAt = new Map(created.map((c) => [c.id, c.sent]));
    const answered = created.map((c) => c.answered - c.sent);
    // Collect offers until every created task was offered (or 60 s passed: a backlog that long
    // is reported, its tasks missing from the percentiles).
    const offered = new Map<string, number>();
    const deadline = now() + 60_000;
    for (;;) {
      const dump = await fleet.ask({ cmd: "dump" });
      for (const [id, t] of dump.offered as [string, number][]) if (sentAt.has(id) && !offered.has(id)) offered.set(id, t - sentAt.get(id)!);
      if (offered.size === sentAt.size || now() > deadline) break;
      await sleep(200);
    }
    if (offered.size < sentAt.size) console.error(`${label}: ${sentAt.size - offered.size} of ${sentAt.size} tasks not offered 60 s after the last create`);
    const offer = percentiles([...offered.values()]);
    return { p50: offer.p50, p99: offer.p99, n: offer.n, answerP99: percentiles(answered).p99 };
  }

  /** Failed creates, and the workers' refused claims, events and completions (counted by their process). */
  async function errors() {
    return { creates: fleet.errors, workers: (await fleet.ask({ cmd: "dump" })).errors as number };
  }

  async function stop() {
    fleet.sim.send({ cmd: "exit" });
    await fleet.sim.exited;
    await Promise.all(servers.map((s) => s.stop()));
  }
  return { label, usesPostgres, lifecycle, latency, errors, stop };
}

type AoSystem = Awaited<ReturnType<typeof startSystem>>;
const aoSystems: AoSystem[] = [];
const keyDir = mkdtempSync(join(tmpdir(), "ao-bench-key-"));
let stopping: Promise<void> | null = null;
const teardown = () =>
  (stopping ??= (async () => {
    await Promise.allSettled(aoSystems.map((s) => s.stop()));
    rmSync(keyDir, { recursive: true, force: true });
    pg.stop();
  })());
for (const signal of ["SIGINT", "SIGTERM"] as const) process.on(signal, () => void teardown().then(() => process.exit(130)));

// No line per request, as graphile-worker runs without its line per job (NO_LOG_SUCCESS=1).
const quiet = { AO_LOG_LEVEL: "warn" };
try {
  if (wanted.has("sqlite")) aoSystems.push(await startSystem("ao sqlite", [await startAo(values.binary, undefined, quiet)], false));
  if (wanted.has("pg1")) {
    const env = { ...quiet, AO_DATABASE_URL: await pg.createDatabase("ao_one") };
    aoSystems.push(await startSystem("ao pg x1", [await startAo(values.binary, undefined, env)], true));
  }
  if (wanted.has("pg2")) {
    const env = { ...quiet, AO_DATABASE_URL: await pg.createDatabase("ao_two"), AO_MASTER_KEY_FILE: join(keyDir, "master.key") };
    // One after the other: the first migrates the database and writes the key file.
    const a = await startAo(values.binary, undefined, env);
    const b = await startAo(values.binary, undefined, env);
    aoSystems.push(await startSystem("ao pg x2", [a, b], true));
  }
} catch (error) {
  await teardown();
  throw error;
}
if (wanted.has("gw")) await gw(["setup"]);

// ---------------------------------------------------------------- the runs, rotated
interface System {
  label: string;
  usesPostgres: boolean;
  /** Not counted: ao's JIT and caches; for graphile-worker, which starts cold in every run as the
   * harness runs it (a process per run), one lifecycle run that sizes the next. */
  warmUp(): Promise<void>;
  lifecycle(): Promise<Life>;
  latency(): Promise<Lat>;
}
const gwN = new Map<string, number>();
const systems: System[] = [
  ...aoSystems.map((s) => ({
    label: s.label,
    usesPostgres: s.usesPostgres,
    async warmUp() {
      if (phases.has("lifecycle")) await s.lifecycle(2);
      if (phases.has("latency")) await s.latency(rate, 1);
    },
    lifecycle: () => s.lifecycle(seconds),
    latency: () => s.latency(rate, seconds),
  })),
  ...(wanted.has("gw") ? values["gw-profiles"]!.split(",") : []).map((profile) => ({
    label: `gw ${profile}`,
    usesPostgres: true,
    async warmUp() {
      if (phases.has("lifecycle")) await this.lifecycle();
    },
    async lifecycle() {
      // The warm-up guesses 200/s (a loaded machine's rate); each next run drains about
      // `seconds` worth of jobs at the rate just measured.
      const r = await gwLifecycle(profile, gwN.get(profile) ?? Math.round(seconds * 200));
      gwN.set(profile, Math.max(200, Math.round(r.perSec * seconds)));
      return r;
    },
    latency: () => gwLatency(profile),
  })),
];

/** Before each run: the load average (1 min) and the disk's fdatasync rate then. */
type Before = { load: string; flushes: number };
const life = new Map<string, (Life & Before & { wal: string })[]>(systems.map((s) => [s.label, []]));
const lat = new Map<string, (Lat & Before)[]>(systems.map((s) => [s.label, []]));
const startedAt = new Date();
const errors: string[] = [];
try {
  for (const s of systems) await s.warmUp();
  for (let rep = 0; rep < reps; rep++) {
    const order = systems.map((_, i) => systems[(i + rep) % systems.length]);
    for (const phase of ["lifecycle", "latency"] as const) {
      if (!phases.has(phase)) continue;
      for (const s of order) {
        if (s.usesPostgres) await checkpoint();
        // The second of rest between runs doubles as the disk's probe.
        const before: Before = { flushes: fdatasyncPerSec(pg.dir), load: load() };
        const note = `load ${before.load}, ${before.flushes.toFixed(0)} fdatasync/s`;
        if (phase === "lifecycle") {
          const c0 = s.usesPostgres ? await pg.counters() : null;
          const r = await s.lifecycle();
          const c1 = s.usesPostgres ? await pg.counters() : null;
          const wal = c0 && c1 ? `${((c1.xids - c0.xids) / r.tasks).toFixed(1)} tx, ${((c1.walBytes - c0.walBytes) / 1024 / r.tasks).toFixed(1)} kB` : "-";
          life.get(s.label)!.push({ ...r, ...before, wal });
          console.error(`rep ${rep + 1} lifecycle ${s.label}: ${r.perSec.toFixed(0)}/s (${note})`);
        } else {
          const r = await s.latency();
          lat.get(s.label)!.push({ ...r, ...before });
          console.error(`rep ${rep + 1} pickup ${s.label}: p50 ${r.p50.toFixed(2)} p99 ${r.p99.toFixed(2)} ms (${note})`);
        }
      }
    }
  }
  for (const s of aoSystems) {
    const e = await s.errors();
    errors.push(`${s.label} ${e.creates} failed creates, ${e.workers} worker requests refused`);
  }
} finally {
  await teardown();
}

// ---------------------------------------------------------------- report
const f = (v: number) => (v >= 100 ? v.toFixed(0) : v.toFixed(2));
const lines = [
  "",
  `${startedAt.toISOString().slice(0, 16)}-${new Date().toISOString().slice(11, 16)} UTC, ${reps} repetitions of ${seconds} s, order rotated each repetition`,
  `uptime after: ${readFileSync("/proc/loadavg", "utf8").trim()}`,
  `ao errors (warm-ups included): ${errors.join("; ")}`,
  "",
];
const cond = (r: Before) => `${r.load}, ${r.flushes.toFixed(0)}/s`;
if (phases.has("lifecycle")) {
  lines.push(
    "Lifecycle (create, offer/pickup, claim, 10 events, complete) per second; before each run, the load average (1 min) and the disk's fdatasync/s:",
    "",
    "| system | each run (load, fdatasync/s) | median | machine busy (% of one core) | CPU per lifecycle | PostgreSQL per lifecycle: write transactions, WAL |",
    "|---|---|---|---|---|---|",
    ...systems.map((s) => {
      const runs = life.get(s.label)!;
      const each = (g: (r: (typeof runs)[number]) => string) => runs.map(g).join(" / ");
      return `| ${s.label} | ${each((r) => `${r.perSec.toFixed(0)} (${cond(r)})`)} | **${median(runs.map((r) => r.perSec)).toFixed(0)}** | ${each((r) => r.busy.toFixed(0))} | ${each((r) => r.cpu)} | ${each((r) => r.wal)} |`;
    }),
  );
}
if (phases.has("latency")) {
  lines.push(
    "",
    `Pickup at ${rate}/s for ${seconds} s (ao create -> offer received; graphile-worker addJob -> handler start; from send), ms; the create (addJob) answers' p99 shows whether the sender kept up:`,
    "",
    "| system | p50 each run | p99 each run (load, fdatasync/s) | median p50 / p99 | create answered, p99 each run | picked up / sent |",
    "|---|---|---|---|---|---|",
    ...systems.map((s) => {
      const runs = lat.get(s.label)!;
      const each = (g: (r: (typeof runs)[number]) => string) => runs.map(g).join(" / ");
      return `| ${s.label} | ${each((r) => f(r.p50))} | ${each((r) => `${f(r.p99)} (${cond(r)})`)} | **${f(median(runs.map((r) => r.p50)))} / ${f(median(runs.map((r) => r.p99)))}** | ${each((r) => f(r.answerP99))} | ${each((r) => `${r.n}/${Math.round(rate * seconds)}`)} |`;
    }),
  );
}
console.log(lines.join("\n"));
process.exit(0);
