// (c) State change -> subscribed WebSocket client: how long from sending POST .../actions
// (pause) until the client subscribed to the org receives the task.updated showing it paused.
// That span holds the whole request (auth, transaction, commit) plus the fan-out, so it bounds
// the fan-out latency from above. Target: p99 < 5 ms.
//   bun bench/tasks-live.ts [--rate 200] [--seconds 10] [--watchers 100] [--binary dist/ao]
// Other subscribers of the same org (--watchers) run in a separate process so that their reading
// does not slow the measuring client. After ao, the same run against a bare Bun server that
// updates one row and publishes the same three messages (tasks-live-bare-server.ts): the tail
// this machine gives the least such server. Everything on 127.0.0.1; loops bounded by count and time.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { call, conditions, freePort, identity, ms, startAo, summarise, waitFor } from "./tasks-support";

if (process.env.AO_BENCH_WATCHERS) {
  // Child mode: hold N subscribed sockets and read everything until told to stop.
  const { url, token, orgId, count } = JSON.parse(process.env.AO_BENCH_WATCHERS);
  let received = 0;
  const sockets: WebSocket[] = [];
  await Promise.all(
    Array.from({ length: count }, () => {
      const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } } as unknown as string[]);
      sockets.push(ws);
      return new Promise<void>((resolve) => {
        ws.onopen = () => ws.send(JSON.stringify({ type: "subscribe", orgId }));
        ws.onmessage = (e) => {
          if (String(e.data).includes('"subscribed"')) resolve();
          else received++;
        };
      });
    }),
  );
  console.log("ready");
  for await (const _ of console) break; // stdin closes or a line arrives: stop
  console.log(`received ${received}`);
  sockets.forEach((s) => s.close());
  process.exit(0);
}

const { values } = parseArgs({
  options: {
    rate: { type: "string", default: "200" },
    seconds: { type: "string", default: "10" },
    watchers: { type: "string", default: "100" },
    binary: { type: "string" },
  },
});
const rate = Number(values.rate);
const seconds = Number(values.seconds);
const watchers = Number(values.watchers);
const total = rate * seconds;

console.log(`# tasks-live · ${conditions()}`);

/** A server to measure: where its sockets are, how a task is made and paused. */
interface Target {
  wsUrl: string;
  token: string;
  orgId: string;
  create(i: number): Promise<string>;
  pause(id: string): Promise<Response>;
}

/** The open-loop run against one server, with `watchers` other subscribers in a child process. */
async function measure(target: Target) {
  // The tasks to pause, one per sample, made beforehand.
  const ids: string[] = [];
  for (let i = 0; i < total + 50; i++) ids.push(await target.create(i));

  const child = Bun.spawn([process.execPath, import.meta.path], {
    env: { ...process.env, AO_BENCH_WATCHERS: JSON.stringify({ url: target.wsUrl, token: target.token, orgId: target.orgId, count: watchers }) },
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  const childOut = child.stdout.getReader();
  const childLine = async () => new TextDecoder().decode((await childOut.read()).value ?? new Uint8Array());
  if (watchers > 0 && !(await childLine()).includes("ready")) throw new Error("watchers did not start");

  // The measuring client.
  const waiting = new Map<string, (at: number) => void>();
  const ws = new WebSocket(target.wsUrl, { headers: { authorization: `Bearer ${target.token}` } } as unknown as string[]);
  await new Promise<void>((resolve) => {
    ws.onopen = () => ws.send(JSON.stringify({ type: "subscribe", orgId: target.orgId }));
    ws.onmessage = (e) => {
      const now = performance.now();
      const text = String(e.data);
      if (text.includes('"subscribed"')) return resolve();
      if (!text.startsWith('{"type":"task.updated"')) return;
      const m = JSON.parse(text);
      if (m.task.status === "paused") waiting.get(m.task.id)?.(now);
    };
  });

  async function sample(i: number): Promise<number | null> {
    const id = ids[i];
    const arrived = new Promise<number>((resolve) => waiting.set(id, resolve));
    const sent = performance.now();
    const res = await target.pause(id);
    await res.arrayBuffer();
    if (res.status !== 200) return null;
    const at = await Promise.race([arrived, Bun.sleep(2000).then(() => -1)]);
    waiting.delete(id);
    return at < 0 ? null : at - sent;
  }

  for (let i = 0; i < 50; i++) await sample(total + i); // warm up
  const latencies: number[] = [];
  let lost = 0;
  const pending: Promise<void>[] = [];
  const start = performance.now();
  for (let i = 0; i < total; ) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
    for (; i < due; i++) pending.push(sample(i).then((v) => void (v === null ? lost++ : latencies.push(v))));
    await Bun.sleep(1);
  }
  await Promise.all(pending);
  const l = summarise(latencies, lost, (performance.now() - start) / 1000);
  ws.close();
  child.stdin.write("stop\n");
  child.stdin.end();
  const received = watchers > 0 ? await childLine() : "";
  await child.exited;
  return { l, received: received.trim() };
}

const ao = await startAo(values.binary);
const who = await identity(ao.url);
const aoRun = await measure({
  wsUrl: ao.url.replace("http", "ws") + "/api/v1/ws",
  token: who.apiToken,
  orgId: who.orgId,
  create: async (i) => (await call(ao.url, "POST", `/orgs/${who.orgId}/tasks`, who.apiToken, { projectId: who.projectId, title: `live ${i}`, prompt: "wait" })).id,
  pause: (id) =>
    fetch(`${ao.url}/api/v1/orgs/${who.orgId}/tasks/${id}/actions`, {
      method: "POST",
      headers: { authorization: `Bearer ${who.apiToken}`, "content-type": "application/json" },
      body: '{"action":"pause"}',
    }),
});
await ao.stop();

// The same run against the bare server (tasks-live-bare-server.ts), after ao.
const bareDir = mkdtempSync(join(tmpdir(), "ao-bare-live-"));
const barePort = freePort();
const bare = Bun.spawn([process.execPath, join(import.meta.dir, "tasks-live-bare-server.ts"), String(barePort), bareDir], { stdout: "ignore", stderr: "inherit" });
const bareUrl = `http://127.0.0.1:${barePort}`;
await waitFor(`${bareUrl}/tasks`, 20_000, { method: "POST" });
const bareRun = await measure({
  wsUrl: `ws://127.0.0.1:${barePort}/ws`,
  token: "none",
  orgId: "org_bare",
  create: async () => ((await (await fetch(`${bareUrl}/tasks`, { method: "POST" })).json()) as { id: string }).id,
  pause: (id) => fetch(`${bareUrl}/tasks/${id}/pause`, { method: "POST", headers: { "content-type": "application/json" }, body: '{"action":"pause"}' }),
});
bare.kill("SIGTERM");
await bare.exited;
rmSync(bareDir, { recursive: true, force: true });

const row = (name: string, l: typeof aoRun.l) => `| ${name} | ${l.count} | ${ms(l.p50)} | ${ms(l.p90)} | ${ms(l.p99)} | ${ms(l.p999)} | ${ms(l.max)} | ${l.errors} |`;
console.log(`
| POST actions (pause) -> task.updated on the subscribed socket, ${rate}/s for ${seconds} s, ${watchers} other subscribers of the org | samples | p50 | p90 | p99 | p99.9 | max | lost |
|---|---|---|---|---|---|---|---|
${row("ao", aoRun.l)}
${row("bare Bun.serve + bun:sqlite + Bun pub/sub, after ao", bareRun.l)}

watchers: ao ${aoRun.received}, bare ${bareRun.received}; ao p99 ${ms(aoRun.l.p99)} (target < 5 ms): ${aoRun.l.p99 < 5 ? "met" : "NOT met"}; the bare server in the same run: p99 ${ms(bareRun.l.p99)}`);
