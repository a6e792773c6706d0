// The allocator setting of `ao serve` (src/server/allocator.ts), before and after, in turn: a
// fresh server with MIMALLOC_PURGE_HOLES=1 (Bun's default, kept because it is set) and one with it
// unset (the server starts itself again with 0), each running the lifecycle of bench/vs-bullmq.ts
// (create over HTTP, offer, claim, 10 events, complete; 50 simulated workers, 64 in flight) for
// a 2 s warm-up and then --seconds measured. Prints the server's CPU time per lifecycle and the
// page faults of its process (minor faults: memory given back and touched again) per lifecycle.
//   bun bench/allocator.ts [--rounds 4] [--seconds 5] [--binary dist/ao]
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { conditions, identity, startAo } from "./tasks-support";
import { startFleet } from "./workers-fleet";
import { cpuMs, minorFaults, pairWorkers } from "./workers-support";

const { values } = parseArgs({
  options: {
    rounds: { type: "string", default: "4" },
    seconds: { type: "string", default: "5" },
    binary: { type: "string" },
  },
});
const seconds = Number(values.seconds);

const settings = [
  { name: "MIMALLOC_PURGE_HOLES=1 (Bun's default)", env: { MIMALLOC_PURGE_HOLES: "1" } },
  { name: "unset (ao serve sets 0)", env: {} as Record<string, string> },
];
// The server must not inherit a value from this shell: `unset` means unset.
delete process.env.MIMALLOC_PURGE_HOLES;

console.log(`# allocator · ${conditions()}`);
const rows: string[][] = settings.map(() => []);
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const [i, s] of settings.entries()) {
    const ao = await startAo(values.binary, undefined, s.env);
    try {
      const who = await identity(ao.url);
      const paired = await pairWorkers(ao.url, who.accessToken, who.orgId, 50);
      const fleet = await startFleet(ao.url, who, paired, "socket");
      fleet.sim.send({ cmd: "events", n: 10 });
      await fleet.closedLoop(2, 64);
      await Bun.sleep(300);
      const cpu0 = cpuMs(ao.pid);
      const faults0 = minorFaults(ao.pid);
      const { done, elapsed } = await fleet.closedLoop(seconds, 64);
      const cpu = (cpuMs(ao.pid) - cpu0) / done;
      const faults = (minorFaults(ao.pid) - faults0) / done;
      const row = `${(done / elapsed).toFixed(0)}/s, ${cpu.toFixed(3)} ms, ${faults.toFixed(2)} faults`;
      rows[i]!.push(row);
      console.log(`round ${round}, ${s.name}: ${row} per lifecycle (load ${loadavg().map((x) => x.toFixed(2)).join(" ")})`);
      fleet.sim.send({ cmd: "exit" });
      await fleet.sim.exited;
    } finally {
      await ao.stop();
    }
  }
}
console.log(`\n| setting | each round: lifecycles/s, server CPU and page faults per lifecycle |\n|---|---|`);
settings.forEach((s, i) => console.log(`| ${s.name} | ${rows[i]!.join("; ")} |`));
