// Signed JSON deliveries at POST /api/v1/hooks/:id: each one a new task (its own X-Svc-Delivery,
// signed with HMAC-SHA256 over "<t>.<body>"). (a) throughput with a closed loop; (b) latency at
// a fixed rate (target: >= 2,000/s with p99 < 10 ms); (c) the duplicate path (same delivery id).
//   bun bench/integrations-ingest.ts [--seconds 10] [--rate 2000] [--connections 32] [--binary dist/ao]
// The server runs in its own process (`ao serve` from source, or --binary); the client signs every
// request itself (that CPU is on the same machine, so the figures are conservative).
import { createHmac } from "node:crypto";
import { parseArgs } from "node:util";
import { call, closedLoop, conditions, fixedRate, identity, ms, startAo } from "./tasks-support";

const { values } = parseArgs({
  options: {
    seconds: { type: "string", default: "10" },
    rate: { type: "string", default: "2000" },
    connections: { type: "string", default: "32" },
    binary: { type: "string" },
  },
});
const seconds = Number(values.seconds);
const rate = Number(values.rate);
const connections = Number(values.connections);

const ao = await startAo(values.binary);
try {
  const who = await identity(ao.url);
  const integration = await call(ao.url, "POST", `/orgs/${who.orgId}/integrations`, who.accessToken, {
    kind: "signed_json",
    name: "bench",
    projectId: who.projectId,
  });
  const hookUrl = `${ao.url}/api/v1/hooks/${integration.id}`;
  const secret: string = integration.secret;
  let n = 0;
  const signed = (delivery: string) => {
    const body = JSON.stringify({ title: `CI failure ${delivery}`, prompt: "The nightly build failed at the lint step; fix it.", ref: delivery });
    const t = Math.floor(Date.now() / 1000);
    const v1 = createHmac("sha256", secret).update(`${t}.${body}`).digest("hex");
    return fetch(hookUrl, {
      method: "POST",
      body,
      headers: { "content-type": "application/json", "x-svc-signature": `t=${t},v1=${v1}`, "x-svc-delivery": delivery },
    });
  };

  // Warm up (JIT, SQLite page cache), then measure.
  await closedLoop(8, 2, () => signed(`warm-${++n}`));

  const closed = await closedLoop(connections, seconds, () => signed(`c-${++n}`));
  const open = await fixedRate(rate, seconds, () => signed(`o-${++n}`));
  const dup = await closedLoop(connections, Math.max(2, seconds / 2), () => signed("the-same-delivery"));

  console.log(`conditions: ${conditions()} · server: ${values.binary ?? "bun src/main.ts serve"}`);
  console.log(`(a) closed loop, ${connections} connections, ${seconds} s: ${closed.rps.toFixed(0)} deliveries/s created, p50 ${ms(closed.p50)}, p99 ${ms(closed.p99)}, non-2xx ${closed.non2xx}`);
  console.log(
    `(b) fixed rate ${rate}/s for ${seconds} s: achieved ${open.achievedRps.toFixed(0)}/s, p50 ${ms(open.p50)}, p90 ${ms(open.p90)}, p99 ${ms(open.p99)}, max ${ms(open.max)}, errors ${open.errors}`,
  );
  console.log(`(c) duplicates (one delivery id), closed loop: ${dup.rps.toFixed(0)}/s, p99 ${ms(dup.p99)}`);
  const pass = open.achievedRps >= rate * 0.98 && open.p99 < 10 && open.errors === 0;
  console.log(`target >= 2,000/s with p99 < 10 ms: ${pass ? "met" : "NOT met"}`);
} finally {
  await ao.stop();
}
