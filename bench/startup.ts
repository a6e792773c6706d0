// Startup time and idle memory of the compiled executable.
//   npm run build && bun bench/startup.ts [--runs 10] [--idle 3] [--binary dist/ao]
// Each run starts `ao serve` on a fresh data directory (so it creates the database, applies
// every migration and writes the master key) and times spawn -> first 200 from /api/v1/health.
// Idle memory is VmRSS from /proc/<pid>/status after the server has sat idle for --idle seconds.
// The binary's pages are dropped from the page cache first (below), so a fresh build measures as
// an installed one.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    runs: { type: "string", default: "10" },
    idle: { type: "string", default: "3" },
    binary: { type: "string", default: join(import.meta.dir, "..", "dist", "ao") },
  },
});
const runs = Number(values.runs);
const idleSeconds = Number(values.idle);
const binary = resolve(values.binary!);
if (!existsSync(binary)) {
  console.error(`${binary} not found: run \`npm run build\` first`);
  process.exit(1);
}

/** A port that was free a moment ago (the OS picks it; we release it for ao). */
function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

function rssKiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (!m) throw new Error(`no VmRSS for ${pid}`);
  return Number(m[1]);
}

async function oneRun(measureIdle: boolean): Promise<{ startupMs: number; idleRssKiB?: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), "ao-bench-"));
  const port = freePort();
  const started = performance.now();
  const proc = Bun.spawn([binary, "serve", "--port", String(port), "--host", "127.0.0.1", "--data-dir", dataDir], {
    cwd: dataDir,
    stdin: "ignore",
    stdout: "ignore",
    stderr: "ignore",
  });
  try {
    const url = `http://127.0.0.1:${port}/api/v1/health`;
    for (;;) {
      if (proc.exitCode !== null) throw new Error(`ao exited with ${proc.exitCode} before answering`);
      if (performance.now() - started > 15_000) throw new Error("ao did not answer within 15 s");
      try {
        const res = await fetch(url);
        if (res.status === 200) break;
      } catch {
        // not listening yet
      }
      await Bun.sleep(2);
    }
    const startupMs = performance.now() - started;
    if (!measureIdle) return { startupMs };
    await Bun.sleep(idleSeconds * 1000);
    return { startupMs, idleRssKiB: rssKiB(proc.pid) };
  } finally {
    proc.kill("SIGTERM");
    await proc.exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

function percentile(sorted: number[], p: number): number {
  // Nearest-rank: the smallest value with at least p% of the samples at or below it.
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

// The executable's pages as a reboot leaves them: out of the page cache, then read back from the
// disk by the warm-up run. A file just written (a fresh `npm run build`) keeps the pages of its
// write in the cache, and a server mapping those sat at about 76 MiB idle instead of 72 (the same
// bytes, copied with cp: 76.6 against 72.4 MiB; after dropping the cache: 72.1).
Bun.spawnSync(["sync", binary]);
const dropped = Bun.spawnSync(["dd", `if=${binary}`, "iflag=nocache", "count=0", "status=none"]).exitCode === 0;
await oneRun(false); // warm the page cache so the first sample is not a cold disk read
const startup: number[] = [];
const rss: number[] = [];
for (let i = 0; i < runs; i++) {
  // Idle memory on three of the runs: it barely varies and each costs --idle seconds.
  const r = await oneRun(i < 3);
  startup.push(r.startupMs);
  if (r.idleRssKiB !== undefined) rss.push(r.idleRssKiB);
}
startup.sort((a, b) => a - b);
rss.sort((a, b) => a - b);

const cpu = cpus();
console.log(`machine: ${cpu.length} cores (${cpu[0]?.model.trim()}), ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Bun ${Bun.version}`);
console.log(`binary: ${binary} (${(Bun.file(binary).size / 2 ** 20).toFixed(1)} MiB)${dropped ? "" : "; its page cache could not be dropped (GNU dd's iflag=nocache): a binary just built reads about 4 MiB high"}`);
console.log(`startup to first /health 200, fresh data dir, ${runs} runs:`);
console.log(`  median ${percentile(startup, 50).toFixed(0)} ms, p95 ${percentile(startup, 95).toFixed(0)} ms, min ${startup[0]!.toFixed(0)} ms, max ${startup.at(-1)!.toFixed(0)} ms`);
console.log(`idle RSS after ${idleSeconds} s, ${rss.length} runs: median ${(percentile(rss, 50) / 1024).toFixed(1)} MiB (min ${(rss[0]! / 1024).toFixed(1)}, max ${(rss.at(-1)! / 1024).toFixed(1)})`);
