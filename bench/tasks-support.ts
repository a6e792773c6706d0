// Shared pieces of the task benchmarks: a real `ao serve` in its own process on a temp data
// directory (loopback only), an owner with a project and an aot_ token, wrk runs, and an
// open-loop fixed-rate client. Every loop here is bounded in count and time.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "..");
const BUN = process.execPath;

export function freePort(): number {
  const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = probe.port!;
  probe.stop(true);
  return port;
}

export async function waitFor(url: string, timeoutMs = 20_000, init?: RequestInit) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(url, init)).status < 500) return;
    } catch {}
    await Bun.sleep(50);
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`);
}

export interface AoServer {
  url: string;
  dataDir: string;
  pid: number;
  /** Stops the server; the data directory is removed unless keepData. */
  stop(keepData?: boolean): Promise<void>;
}

const EMAIL = "bench@example.test";
const PASSWORD = "bench password 123";

/**
 * `ao serve` from source (or --binary) as a child process; the first admin is made by env. `env`
 * adds settings, e.g. AO_DATABASE_URL and AO_MASTER_KEY_FILE for servers sharing a PostgreSQL database.
 */
export async function startAo(binary?: string, existingDataDir?: string, env: Record<string, string> = {}): Promise<AoServer> {
  const dataDir = existingDataDir ?? mkdtempSync(join(tmpdir(), "ao-bench-"));
  const port = freePort();
  const cmd = binary ? [binary, "serve"] : [BUN, ...benchBunArgs(), join(ROOT, "src/main.ts"), "serve"];
  // Every simulated client comes from loopback: the per-address connection cap would measure itself.
  return serverProcess([...cmd, "--port", String(port), "--host", "127.0.0.1", "--data-dir", dataDir], port, dataDir, {
    ...process.env,
    AO_ADMIN_EMAIL: EMAIL,
    AO_ADMIN_PASSWORD: PASSWORD,
    AO_ORG_NAME: "bench",
    AO_MAX_CONNECTIONS_PER_ADDRESS: "0",
    ...env,
  });
}

/**
 * AO_BENCH_BUN_ARGS: extra Bun flags for a server run from source, e.g. a profile of the server alone:
 * AO_BENCH_BUN_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" (written when the server stops).
 */
export const benchBunArgs = () => (process.env.AO_BENCH_BUN_ARGS ?? "").split(" ").filter(Boolean);

/** A server started as `cmd` (listening on `port`, its files in `dataDir`), once it answers /api/v1/health. */
export async function serverProcess(cmd: string[], port: number, dataDir: string, env: Record<string, string | undefined> = process.env): Promise<AoServer> {
  const proc = Bun.spawn(cmd, { cwd: dataDir, env, stdin: "ignore", stdout: "ignore", stderr: "inherit" });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/api/v1/health`);
  return {
    url,
    dataDir,
    pid: proc.pid,
    async stop(keepData = false) {
      proc.kill("SIGTERM");
      await proc.exited;
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function call(url: string, method: string, path: string, token: string | null, body?: unknown) {
  const res = await fetch(`${url}/api/v1${path}`, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.json()) as any;
  if (res.status >= 300) throw new Error(`${method} ${path} -> ${res.status} ${JSON.stringify(json)}`);
  return json;
}

export interface Identity {
  orgId: string;
  accessToken: string;
  apiToken: string;
  projectId: string;
}

/** Signs in as the bench admin, makes a project and an aot_ token. */
export async function identity(url: string): Promise<Identity> {
  const login = await call(url, "POST", "/auth/login", null, { email: EMAIL, password: PASSWORD });
  const orgs = await call(url, "GET", "/orgs", login.accessToken);
  const orgId = orgs.items[0].id;
  const project = await call(url, "POST", `/orgs/${orgId}/projects`, login.accessToken, { name: "bench" });
  const token = await call(url, "POST", "/me/tokens", login.accessToken, { name: "bench", orgId });
  return { orgId, accessToken: login.accessToken, apiToken: token.token, projectId: project.id };
}

export { call };

// ---------------------------------------------------------------- wrk (closed loop, throughput)

export interface WrkResult {
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  requests: number;
  non2xx: number;
}

const toMs = (v: string) => {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(v.trim());
  if (!m) return NaN;
  return Number(m[1]) * ({ us: 0.001, ms: 1, s: 1000, m: 60000 } as Record<string, number>)[m[2]];
};

export function hasWrk(): boolean {
  return Bun.which("wrk") !== null;
}

/** wrk with a Lua script for method, headers and body; latencies in ms. */
export async function wrk(
  url: string,
  opts: { method?: string; body?: string; headers?: Record<string, string>; connections?: number; threads?: number; seconds?: number },
): Promise<WrkResult> {
  const dir = mkdtempSync(join(tmpdir(), "ao-wrk-"));
  const script = join(dir, "req.lua");
  const lines = [`wrk.method = ${JSON.stringify(opts.method ?? "GET")}`];
  if (opts.body) lines.push(`wrk.body = ${JSON.stringify(opts.body)}`);
  for (const [k, v] of Object.entries(opts.headers ?? {})) lines.push(`wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`);
  writeFileSync(script, lines.join("\n") + "\n");
  const proc = Bun.spawn(
    ["wrk", "-t", String(opts.threads ?? 1), "-c", String(opts.connections ?? 32), "-d", `${opts.seconds ?? 10}s`, "--latency", "-s", script, url],
    { stdout: "pipe", stderr: "inherit" },
  );
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  rmSync(dir, { recursive: true, force: true });
  const pct = (p: string) => toMs(new RegExp(`^\\s+${p}%\\s+(\\S+)`, "m").exec(out)?.[1] ?? "");
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p50: pct("50"),
    p90: pct("90"),
    p99: pct("99"),
    requests: Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
  };
}

// ------------------------------------------------------ open loop (latency at a fixed rate)

export interface Latencies {
  count: number;
  errors: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
  achievedRps: number;
}

export function summarise(samples: number[], errors: number, seconds: number): Latencies {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => (s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : NaN);
  return { count: s.length, errors, p50: at(0.5), p90: at(0.9), p99: at(0.99), p999: at(0.999), max: s.at(-1) ?? NaN, achievedRps: s.length / seconds };
}

/**
 * Calls `fire` `rate` times a second for `seconds`, on schedule whatever its promises do (open
 * loop), with each call's index and the time it was due on `clock` (ms); resolves once all have.
 */
export async function onSchedule(rate: number, seconds: number, fire: (i: number, due: number) => Promise<void>, clock = () => performance.now()) {
  const total = Math.round(rate * seconds);
  const inflight: Promise<void>[] = [];
  const start = clock();
  let i = 0;
  while (i < total) {
    const due = Math.min(total, Math.floor(((clock() - start) * rate) / 1000) + 1);
    for (; i < due; i++) inflight.push(fire(i, start + (i * 1000) / rate));
    await Bun.sleep(1);
  }
  await Promise.all(inflight);
}

/**
 * Sends `rps` requests per second for `seconds`, on schedule whatever the answers do (open loop).
 * The latencies count from when each request was due (so a stalled server cannot hide its queue,
 * but the client's own timer lag is in them too); `service` counts from when it was actually sent.
 */
export async function fixedRate(rps: number, seconds: number, send: (i: number) => Promise<Response>): Promise<Latencies & { service: Latencies }> {
  const fromDue: number[] = [];
  const service: number[] = [];
  let errors = 0;
  const start = performance.now();
  await onSchedule(rps, seconds, (i, scheduled) => {
    const sent = performance.now();
    return send(i).then(
      async (res) => {
        await res.arrayBuffer();
        const done = performance.now();
        if (res.status >= 300) errors++;
        else {
          fromDue.push(done - scheduled);
          service.push(done - sent);
        }
      },
      () => void errors++,
    );
  });
  const secs = (performance.now() - start) / 1000;
  return { ...summarise(fromDue, errors, secs), service: summarise(service, errors, secs) };
}

/** With --help: prints the benchmark's header comment (what it measures, its options) and exits. */
export function helpIfAsked(help: boolean | undefined, benchmark: string) {
  if (!help) return;
  const text = readFileSync(benchmark, "utf8");
  console.log(text.slice(0, text.indexOf("\nimport ")).replace(/^\/\/ ?/gm, ""));
  process.exit(0);
}

export function conditions(): string {
  const load = require("node:os").loadavg().map((x: number) => x.toFixed(2)).join(" ");
  return `${new Date().toISOString()} · Bun ${Bun.version} · ${cpus().length} × ${cpus()[0]?.model ?? "cpu"} · load average before the run ${load}`;
}

export const ms = (v: number) => `${v.toFixed(2)} ms`;

/** The fallback when wrk is missing: `concurrency` loops of request-after-answer for `seconds`. */
export async function closedLoop(concurrency: number, seconds: number, send: () => Promise<Response>): Promise<WrkResult> {
  const samples: number[] = [];
  let non2xx = 0;
  const end = performance.now() + seconds * 1000;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        const t = performance.now();
        const res = await send();
        await res.arrayBuffer();
        if (res.status >= 300) non2xx++;
        samples.push(performance.now() - t);
      }
    }),
  );
  const l = summarise(samples, non2xx, (performance.now() - start) / 1000);
  return { rps: l.count / ((performance.now() - start) / 1000), p50: l.p50, p90: l.p90, p99: l.p99, requests: l.count, non2xx };
}
