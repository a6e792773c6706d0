// (a) POST /orgs/:orgId/tasks with an aot_ token: throughput against a bare Bun.serve + bun:sqlite
// insert handler in the same run (target: ao >= 50% of bare), and latency at a fixed 1,000 req/s
// (target: p99 < 5 ms).
//   bun bench/tasks-create.ts [--seconds 5] [--rounds 3] [--rate 1000] [--fixed-seconds 10] [--connections 32] [--binary dist/ao]
// Load generator: wrk (Debian package) when installed, else a Bun closed-loop client; the
// fixed-rate run uses an open-loop Bun client (wrk cannot hold a rate). The servers run in their
// own processes; everything is on 127.0.0.1.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { closedLoop, conditions, fixedRate, freePort, hasWrk, identity, ms, startAo, waitFor, wrk, type WrkResult } from "./tasks-support";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "5" },
    rounds: { type: "string", default: "3" },
    "fixed-seconds": { type: "string", default: "10" },
    rate: { type: "string", default: "1000" },
    connections: { type: "string", default: "32" },
    binary: { type: "string" },
  },
});
const seconds = Number(values.seconds);
const rounds = Number(values.rounds);
const fixedSeconds = Number(values["fixed-seconds"]);
const rate = Number(values.rate);
const connections = Number(values.connections);
const useWrk = hasWrk();

async function load(url: string, body: string, headers: Record<string, string>, secs: number): Promise<WrkResult> {
  if (useWrk) return wrk(url, { method: "POST", body, headers: { "content-type": "application/json", ...headers }, connections, seconds: secs });
  return closedLoop(connections, secs, () => fetch(url, { method: "POST", body, headers: { "content-type": "application/json", ...headers } }));
}

console.log(`# tasks-create · ${conditions()}`);
console.log(`load generator: ${useWrk ? `wrk, 1 thread, ${connections} connections` : `Bun closed loop, ${connections} concurrent`}; ${rounds} alternating rounds of ${seconds} s`);

const ao = await startAo(values.binary);
const who = await identity(ao.url);
const body = JSON.stringify({ projectId: who.projectId, title: "Benchmark task", prompt: "Create a task as fast as you can.", priority: "HIGH" });
const aoUrl = `${ao.url}/api/v1/orgs/${who.orgId}/tasks`;
const auth = { authorization: `Bearer ${who.apiToken}` };

const bareDir = mkdtempSync(join(tmpdir(), "ao-bare-"));
const barePort = freePort();
const bare = Bun.spawn([process.execPath, join(import.meta.dir, "tasks-bare-server.ts"), String(barePort), bareDir], { stdout: "ignore", stderr: "inherit" });
const bareUrl = `http://127.0.0.1:${barePort}/`;
await waitFor(bareUrl, 20_000, { method: "POST", body });

// Warm up both (JIT, page cache), then alternate so that load from elsewhere on the machine
// hits both alike; the ratio is taken per round and the median reported.
await load(aoUrl, body, auth, 2);
await load(bareUrl, body, {}, 2);
const rows: { ao: WrkResult; bare: WrkResult }[] = [];
for (let r = 0; r < rounds; r++) rows.push({ ao: await load(aoUrl, body, auth, seconds), bare: await load(bareUrl, body, {}, seconds) });

// The fixed rate, ao then the bare server: the tail the machine itself gives a Bun + SQLite server.
await Bun.sleep(500);
const fixed = await fixedRate(rate, fixedSeconds, () => fetch(aoUrl, { method: "POST", body, headers: { "content-type": "application/json", ...auth } }));
await ao.stop();
await Bun.sleep(500);
const bareFixed = await fixedRate(rate, fixedSeconds, () => fetch(bareUrl, { method: "POST", body, headers: { "content-type": "application/json" } }));
bare.kill("SIGTERM");
await bare.exited;
rmSync(bareDir, { recursive: true, force: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const ratios = rows.map((r) => r.ao.rps / r.bare.rps);
const ratio = median(ratios);
const line = (name: string, x: WrkResult) => `| ${name} | ${x.rps.toFixed(0)} | ${ms(x.p50)} | ${ms(x.p90)} | ${ms(x.p99)} | ${x.non2xx} |`;
console.log(`
| run | req/s | p50 | p90 | p99 | non-2xx |
|---|---|---|---|---|---|
${rows.map((r, i) => [line(`round ${i + 1}: ao POST /tasks (aot_ token)`, r.ao), line(`round ${i + 1}: bare Bun.serve + bun:sqlite insert`, r.bare)].join("\n")).join("\n")}
| ao POST /tasks at a fixed ${rate} req/s, open loop, ${fixed.service.count} requests: from send | ${fixed.service.achievedRps.toFixed(0)} | ${ms(fixed.service.p50)} | ${ms(fixed.service.p90)} | ${ms(fixed.service.p99)} | ${fixed.service.errors} |
| the same, counted from when each was due (includes the client's timer lag) | | ${ms(fixed.p50)} | ${ms(fixed.p90)} | ${ms(fixed.p99)} | |
| bare Bun.serve + bun:sqlite insert at the same rate, after ao: from send | ${bareFixed.service.achievedRps.toFixed(0)} | ${ms(bareFixed.service.p50)} | ${ms(bareFixed.service.p90)} | ${ms(bareFixed.service.p99)} | ${bareFixed.service.errors} |

ao / bare throughput per round: ${ratios.map((x) => `${(x * 100).toFixed(0)}%`).join(", ")}; median ${(ratio * 100).toFixed(0)}% (target >= 50%): ${ratio >= 0.5 ? "met" : "NOT met"}
p99 at ${rate} req/s: ${ms(fixed.service.p99)} from send, ${ms(fixed.p99)} from due (target < 5 ms): ${fixed.service.p99 < 5 ? "met" : "NOT met"}; p99.9 ${ms(fixed.service.p999)}, max ${ms(fixed.service.max)}; the bare server in the same run: p99 ${ms(bareFixed.service.p99)}, p99.9 ${ms(bareFixed.service.p999)}`);
