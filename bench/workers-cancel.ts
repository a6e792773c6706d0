// Cancel -> agent: a real `ao worker` (exec adapter) runs an agent that records its pid and sleeps;
// the benchmark cancels the task through the API and times until the agent process is gone
// (SIGTERM to its process group; /proc polled every millisecond). Target: p99 under 1 s.
//   bun bench/workers-cancel.ts [--runs 50] [--binary dist/ao]
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { saveCredential } from "../src/worker/credential";
import { ROOT, call, conditions, identity, startAo } from "./tasks-support";
import { pairWorkers, percentiles } from "./workers-support";
import { statFields } from "../src/worker/orphans";

const { values } = parseArgs({ options: { runs: { type: "string", default: "50" }, binary: { type: "string" } } });
const runs = Number(values.runs);

function alive(pid: number): boolean {
  try {
    return statFields(pid)[0] !== "Z";
  } catch {
    return false;
  }
}

async function until<T>(fn: () => T | Promise<T>, ms: number, step = 1): Promise<T> {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const v = await fn();
    if (v) return v;
    await Bun.sleep(step);
  }
  throw new Error("timed out");
}

console.log(`# workers-cancel · ${conditions()}`);
const ao = await startAo(values.binary);
const who = await identity(ao.url);
const [paired] = await pairWorkers(ao.url, who.accessToken, who.orgId, 1);
const dir = mkdtempSync(join(tmpdir(), "ao-bench-cancel-"));
saveCredential(join(dir, "data"), { server: ao.url, workerId: paired.workerId, orgId: who.orgId, credential: paired.credential });
const script = join(dir, "agent.sh");
writeFileSync(script, `echo $$ > "${dir}/$AO_TASK_ID.pid"\nexec sleep 300\n`);
const worker = Bun.spawn(
  [process.execPath, join(ROOT, "src/main.ts"), "worker", "--server", ao.url, "--data-dir", join(dir, "data"), "--exec", `sh ${script}`],
  { stdout: "ignore", stderr: "inherit", stdin: "ignore" },
);
await until(async () => (await call(ao.url, "GET", `/orgs/${who.orgId}/workers/${paired.workerId}`, who.accessToken)).status === "online", 20_000, 50);

const samples: number[] = [];
for (let i = 0; i < runs; i++) {
  const task = await call(ao.url, "POST", `/orgs/${who.orgId}/tasks`, who.apiToken, { projectId: who.projectId, title: `cancel ${i}`, prompt: "sleep" });
  const pid = await until(() => {
    try {
      return Number(readFileSync(join(dir, `${task.id}.pid`), "utf8")) || 0;
    } catch {
      return 0;
    }
  }, 10_000);
  await until(() => readFileSync(`/proc/${pid}/cmdline`, "utf8").startsWith("sleep"), 5000); // the exec happened
  const t0 = performance.now();
  await call(ao.url, "POST", `/orgs/${who.orgId}/tasks/${task.id}/actions`, who.apiToken, { action: "cancel" });
  await until(() => !alive(pid), 5000);
  samples.push(performance.now() - t0);
}
worker.kill("SIGTERM");
await worker.exited;
await ao.stop();
rmSync(dir, { recursive: true, force: true });

const p = percentiles(samples);
const f = (v: number) => `${v.toFixed(2)} ms`;
console.log(`
| what | n | p50 | p90 | p99 | max | target |
|---|---|---|---|---|---|---|
| POST cancel -> agent process gone | ${p.n} | ${f(p.p50)} | ${f(p.p90)} | ${f(p.p99)} | ${f(p.max)} | p99 < 1 s: ${p.p99 < 1000 ? "met" : "NOT met"} |`);
process.exit(0);
