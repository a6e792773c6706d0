// The built executable as several processes of one service: `ao serve` and `ao worker` children
// whose output is kept and can be waited on, an HTTP client for the API of one of the servers, and
// a live-updates subscriber (GET /api/v1/ws) that keeps every message.
import { OutputProcess } from "./process-helpers";
import { inheritedEnv } from "../helpers/processes";

// The children see no AO_* variables of ours: only what a test passes configures them.
const baseEnv = { ...inheritedEnv(), AO_LOG_FORMAT: "pretty" };

/** A child process of the executable: stdout and stderr kept as one text, waitFor() a line in it. */
export class AoProcess extends OutputProcess {
  constructor(ao: string, args: string[], env: Record<string, string> = {}, cwd?: string) {
    super([ao, ...args], { cwd, env: { ...baseEnv, ...env } });
  }
}

/** A pattern matching `text` as written (URLs in the output have dots). */
export const literally = (text: string) => new RegExp(text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));

export interface Served {
  proc: AoProcess;
  url: string;
}

/** `ao serve` on a free loopback port; resolves once its "listening on" line names the port. */
export async function startServe(ao: string, dataDir: string, env: Record<string, string>): Promise<Served> {
  const proc = new AoProcess(ao, ["serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", dataDir], env);
  const [, url] = await proc.waitFor(/listening on (http:\/\/127\.0\.0\.1:\d+)/, 30_000);
  return { proc, url };
}

export interface Answer {
  status: number;
  body: any;
}

/** A request to /api/v1 of one server; a network failure rejects (the caller decides what it means). */
export async function api(url: string, method: string, path: string, opts: { token?: string; body?: unknown } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const r = await fetch(`${url}/api/v1${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await r.text();
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {}
  return { status: r.status, body };
}

/** The same, but any status other than `expected` throws with the answer in the message. */
export async function ok(url: string, method: string, path: string, opts: { token?: string; body?: unknown } = {}, expected = 200) {
  const r = await api(url, method, path, opts);
  if (r.status !== expected) throw new Error(`${method} ${url}${path} -> ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

type Msg = Record<string, any>;

/** A live-updates socket subscribed to one org, keeping every task.updated and task.event it gets. */
export class Subscriber {
  readonly updates = new Map<string, Msg[]>();
  readonly events = new Map<string, Msg[]>();
  closed: { code: number; reason: string } | null = null;
  private ws!: WebSocket;
  private waiters: (() => void)[] = [];

  static async open(serverUrl: string, token: string, orgId: string): Promise<Subscriber> {
    const s = new Subscriber();
    s.ws = new WebSocket(serverUrl.replace("http", "ws") + "/api/v1/ws", { headers: { authorization: `Bearer ${token}` } } as unknown as string[]);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no subscription on ${serverUrl} within 10 s`)), 10_000);
      s.ws.onopen = () => s.ws.send(JSON.stringify({ type: "subscribe", orgId }));
      s.ws.onerror = () => reject(new Error(`live socket error on ${serverUrl}`));
      s.ws.onclose = (e) => {
        s.closed = { code: e.code, reason: e.reason };
        reject(new Error(`live socket on ${serverUrl} closed (${e.code}) before subscribing`));
        s.wake();
      };
      s.ws.onmessage = (e) => {
        const m = JSON.parse(String(e.data)) as Msg;
        if (m.type === "subscribed") (clearTimeout(timer), resolve());
        if (m.type === "task.updated") s.keep(s.updates, m.task.id, m);
        if (m.type === "task.event") s.keep(s.events, m.taskId, m);
        if (m.type === "error") reject(new Error(`live socket on ${serverUrl}: ${JSON.stringify(m)}`));
      };
    });
    return s;
  }

  private keep(into: Map<string, Msg[]>, taskId: string, m: Msg) {
    let list = into.get(taskId);
    if (!list) into.set(taskId, (list = []));
    list.push(m);
    this.wake();
  }

  private wake() {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Waits (on each message, up to `ms`) until `cond` holds; throws with `what` at the deadline. */
  async until(cond: () => boolean, ms: number, what: string): Promise<void> {
    const deadline = Date.now() + ms;
    while (!cond()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`live subscriber: ${what} not seen within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => (clearTimeout(timer), resolve()));
      });
    }
  }

  close() {
    this.ws.close();
  }
}

/** Polls `fn` until it returns something truthy, up to `ms`; for state only a request can read. */
type Falsy = false | null | undefined | 0 | "";

export async function until<T>(fn: () => T | Falsy | Promise<T | Falsy>, ms: number, what: string, step = 100): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms${last ? ` (${last})` : ""}`);
    await Bun.sleep(step);
  }
}
