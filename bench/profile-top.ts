// Sample counts of a .cpuprofile (bun --cpu-prof): self and total per function, by samples rather
// than by time (Bun's markdown weights a sample by the gap to the next one, so a function that runs
// just before the thread goes idle is charged for the idle time).
//   bun bench/profile-top.ts FILE.cpuprofile [--top 40] [--filter path-substring]
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: "string", default: "40" } } });
const prof = JSON.parse(readFileSync(positionals[0], "utf8")) as {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
};
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map<number, number>();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const name = (id: number) => {
  const f = byId.get(id)!.callFrame;
  const url = f.url.replace(/^.*\/(src|node_modules)\//, "$1/");
  return `${f.functionName || "(anonymous)"} ${url ? `${url}:${f.lineNumber + 1}` : ""}`.trim();
};
const self = new Map<string, number>();
const total = new Map<string, number>();
let counted = 0;
for (const s of prof.samples) {
  const n = name(s);
  if (/^\((idle|program|root)\)/.test(n)) continue;
  counted++;
  self.set(n, (self.get(n) ?? 0) + 1);
  const seen = new Set<string>();
  for (let id: number | undefined = s; id !== undefined; id = parent.get(id)) {
    const k = name(id);
    if (seen.has(k)) continue;
    seen.add(k);
    total.set(k, (total.get(k) ?? 0) + 1);
  }
}
const top = Number(values.top);
const pct = (v: number) => ((100 * v) / counted).toFixed(1).padStart(5) + "%";
console.log(`${counted} busy samples of ${prof.samples.length}\n\nself:`);
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)}  ${k}`);
console.log(`\ntotal:`);
for (const [k, v] of [...total].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(v)}  ${k}`);
