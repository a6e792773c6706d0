// The simulated workers' process (bench/workers-sim.ts) against a running ao, and the task
// creation the dispatch benchmarks drive it with (workers-dispatch.ts, vs-bullmq.ts, vs-graphile.ts):
// one create over HTTP with an aot_ token, creates at a fixed rate, and a closed loop that keeps a
// number of tasks in flight.
import { join } from "node:path";
import { onSchedule, type Identity } from "./tasks-support";
import type { Paired } from "./workers-support";

export const now = () => performance.timeOrigin + performance.now();

/**
 * Starts the simulated workers (capacity 8 each and no events, unless `opts` says otherwise) for
 * `paired`, connected to `url` (their claims, events and transitions on their sockets, or with
 * `requests` "http" over HTTP); with several URLs (servers on one database) the workers are dealt
 * out over them in turn, and so are the creates.
 */
export async function startFleet(
  url: string | string[],
  who: Identity,
  paired: Paired[],
  requests: "socket" | "http" = "socket",
  opts: { capacity?: number; events?: number } = {},
) {
  const urls = typeof url === "string" ? [url] : url;
  let waiting: ((m: any) => void) | null = null;
  /** Creator loops waiting for room (woken by the workers' completion reports, not by polling). */
  let wakers: (() => void)[] = [];
  const sim = Bun.spawn([process.execPath, join(import.meta.dir, "workers-sim.ts")], {
    stdout: "inherit",
    stderr: "inherit",
    ipc(message: any) {
      if (typeof message.completed === "number") {
        fleet.completed = message.completed;
        const w = wakers;
        wakers = [];
        for (const wake of w) wake();
      } else if (waiting) {
        const w = waiting;
        waiting = null;
        w(message);
      }
    },
  });
  const createUrls = urls.map((u) => `${u}/api/v1/orgs/${who.orgId}/tasks`);
  let turn = 0;
  const createHeaders = { authorization: `Bearer ${who.apiToken}`, "content-type": "application/json" };
  const body = JSON.stringify({ projectId: who.projectId, title: "bench", prompt: "work" });
  const fleet = {
    sim,
    /** Tasks the workers reported completed so far. */
    completed: 0,
    /** Creations that failed, and the workers' own errors once dumped. */
    errors: 0,
    /** Sends a command to the workers' process and waits for its answer. */
    ask: (msg: unknown) => new Promise<any>((resolve) => ((waiting = resolve), sim.send(msg))),
    /** Creates one task; its id. */
    async create(): Promise<string> {
      const res = await fetch(createUrls[turn++ % createUrls.length], { method: "POST", headers: createHeaders, body });
      const json = (await res.json()) as { id: string };
      if (res.status !== 201) throw new Error(`create -> ${res.status} ${JSON.stringify(json)}`);
      return json.id;
    },
    /**
     * Creates `rate` tasks a second for `secs` seconds (open loop); for each task created, when its
     * create was due, sent and answered (epoch ms, as the workers' process reports offers).
     */
    async atRate(rate: number, secs: number) {
      const created: { id: string; due: number; sent: number; answered: number }[] = [];
      await onSchedule(
        rate,
        secs,
        (_, due) => {
          const sent = now();
          return fleet.create().then((id) => void created.push({ id, due, sent, answered: now() }), () => void fleet.errors++);
        },
        now,
      );
      return created;
    },
    /** Creates tasks for `secs` seconds, at most `inflight` of them between creation and completion. */
    async closedLoop(secs: number, inflight: number) {
      const base = fleet.completed;
      let created = 0;
      const start = now();
      const end = start + secs * 1000;
      await Promise.all(
        Array.from({ length: inflight }, async () => {
          while (now() < end) {
            while (created - (fleet.completed - base) >= inflight && now() < end) await new Promise<void>((r) => wakers.push(r));
            if (now() >= end) break;
            created++;
            await fleet.create().catch(() => void fleet.errors++);
          }
        }),
      );
      return { base, created, done: fleet.completed - base, elapsed: (now() - start) / 1000 };
    },
    /** Resolves once the workers have reported `n` completions (woken by their reports). */
    async whenCompleted(n: number) {
      while (fleet.completed < n) await new Promise<void>((r) => wakers.push(r));
    },
  };
  await fleet.ask({ cmd: "start", urls, paired, capacity: opts.capacity ?? 8, events: opts.events ?? 0, requests });
  return fleet;
}
