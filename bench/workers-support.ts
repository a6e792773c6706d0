// Shared by the worker benchmarks: workers paired through the real pairing routes, and simulated
// workers that speak the protocol (socket + HTTP) from the benchmark process.
import { PROTOCOL_VERSION } from "../src/protocol/messages";
import { statFields } from "../src/worker/orphans";
import { call } from "./tasks-support";

export interface Paired {
  workerId: string;
  credential: string;
}

/** Pairs `n` workers into the org: start, a person approves, first poll gets the credential. */
export async function pairWorkers(url: string, accessToken: string, orgId: string, n: number, concurrency = 16): Promise<Paired[]> {
  const out: Paired[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) {
        const i = next++;
        const started = await call(url, "POST", "/worker/pair", null, { name: `bench-${i}`, hostname: `bench-${i}.lan` });
        await call(url, "POST", "/pairing/approve", accessToken, { userCode: started.userCode, orgId });
        const got = await call(url, "POST", "/worker/pair/poll", null, { deviceCode: started.deviceCode });
        out.push({ workerId: got.workerId, credential: got.credential });
      }
    }),
  );
  return out;
}

type Message = { type: string; [k: string]: any };

/** A worker as the server sees it: hello, heartbeats, and whatever `onMessage` does with offers and controls. */
export class SimWorker {
  ws!: WebSocket;
  private beat: ReturnType<typeof setInterval> | null = null;
  running: { taskId: string; attempt: number }[] = [];
  /** The requests its server answers on the socket (the welcome's list). */
  socketOps = new Set<string>();
  private nextId = 1;
  private readonly replies = new Map<number, (r: { status: number; body: any }) => void>();

  constructor(
    readonly url: string,
    readonly paired: Paired,
    readonly capacity: number,
    readonly onMessage: (w: SimWorker, m: Message) => void,
  ) {}

  connect(heartbeatMs = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      this.ws = new WebSocket(this.url.replace(/^http/, "ws") + "/api/v1/worker/ws", {
        headers: { authorization: `Bearer ${this.paired.credential}` },
      } as unknown as string[]);
      this.ws.onopen = () =>
        this.ws.send(JSON.stringify({ type: "hello", protocol: PROTOCOL_VERSION, version: "bench", tools: [], agents: [], providers: [], capacity: this.capacity, running: [] }));
      this.ws.onerror = () => reject(new Error("socket error"));
      this.ws.onmessage = (e) => {
        const m = JSON.parse(String(e.data)) as Message;
        if (m.type === "reply") {
          const settle = this.replies.get(m.id);
          this.replies.delete(m.id);
          settle?.({ status: m.status, body: m.body });
          return;
        }
        if (m.type === "welcome") {
          this.socketOps = new Set(m.requests ?? []);
          // Spread heartbeats over the interval like independent machines would.
          setTimeout(() => {
            this.beat = setInterval(() => this.ws.send(JSON.stringify({ type: "heartbeat", running: this.running })), heartbeatMs);
          }, Math.random() * heartbeatMs);
          resolve();
          return;
        }
        this.onMessage(this, m);
      };
    });
  }

  api(method: string, path: string, body: unknown): Promise<Response> {
    return fetch(`${this.url}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${this.paired.credential}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  }

  /** A claim, events or transition as a request on the socket (as `ao worker` sends them); its reply. */
  request(op: string, taskId: string, body: unknown): Promise<{ status: number; body: any }> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.replies.set(id, resolve);
      this.ws.send(JSON.stringify({ type: "request", id, op, taskId, body }));
    });
  }

  close() {
    if (this.beat) clearInterval(this.beat);
    this.ws.close();
  }
}

export function percentiles(samples: number[]) {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => (s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : NaN);
  return { n: s.length, p50: at(0.5), p90: at(0.9), p99: at(0.99), max: s.at(-1) ?? NaN };
}

/** CPU time (user + system) of a process in milliseconds, from /proc. */
export function cpuMs(pid: number): number {
  const fields = statFields(pid);
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime
  return (ticks * 1000) / 100; // USER_HZ is 100 on Linux
}

/** Minor page faults of a process so far (memory given back and touched again, among others). */
export function minorFaults(pid: number): number {
  return Number(statFields(pid)[7]);
}
