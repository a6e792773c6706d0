// HTTP client of the worker protocol. State changes are retried on network errors and 5xx with
// backoff (they are idempotent on the server: events by seq, terminal transitions by state).
// Given several servers of one service (one database), a request that gets no answer moves the
// client on to the next server, round robin, and its retry goes there: an answer that was lost
// after the write committed is harmless for the same reason. Claim, events and transition go on
// the worker's socket instead when it is open and the server answers them there
// (socket-requests.ts), with the same retries.
import type { ClaimResult, CloneReport, EventsRequest, PairResult, PairStarted, ReadinessReport, ReposReport, TransitionRequest, UsageReport } from "../protocol/requests";
import { LEASE_HEADER } from "../protocol/requests";
import type { SocketRequestOp } from "../protocol/messages";
import type { SocketRequests } from "./socket-requests";

export class HttpError extends Error {
  constructor(
    public readonly status: number,
    public readonly code: string,
    message: string,
    public readonly details?: any,
  ) {
    super(message);
  }
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Full jitter: a random wait up to min(cap, base * 2^n). */
export function backoff(attempt: number, baseMs = 500, capMs = 30_000): number {
  return Math.floor(Math.random() * Math.min(capMs, baseMs * 2 ** attempt));
}

export class WorkerClient {
  credential: string | null = null;
  readonly servers: string[];
  private current = 0;
  /** Requests on the worker's open socket, when its server answers them there (set by the runtime). */
  socket: SocketRequests | null = null;
  /** Told when the client moves on to another server. */
  onSwitch: (from: string, to: string) => void = () => {};

  constructor(servers: string | string[]) {
    this.servers = typeof servers === "string" ? [servers] : servers;
    if (this.servers.length === 0) throw new Error("a worker client needs a server");
  }

  /** The server requests (and the worker's socket) go to now. */
  get server(): string {
    return this.servers[this.current];
  }

  /**
   * Moves on to the next server after `failed` gave no answer. Requests that fail together move
   * once: when the client has left `failed` already, it stays where it is.
   */
  failover(failed: string) {
    if (this.servers.length === 1 || this.server !== failed) return;
    this.current = (this.current + 1) % this.servers.length;
    this.onSwitch(failed, this.server);
  }

  async request<T>(
    method: string,
    path: string,
    body?: unknown,
    opts: { retries?: number; headers?: Record<string, string>; raw?: Blob | string; socket?: { op: SocketRequestOp; taskId: string } } = {},
  ): Promise<T> {
    const retries = opts.retries ?? 0;
    for (let attempt = 0; ; attempt++) {
      const server = this.server;
      let status: number;
      let parsed: any = null;
      const sent = opts.socket ? this.socket?.call(opts.socket.op, opts.socket.taskId, body) : null;
      if (sent) {
        try {
          ({ status, body: parsed } = await sent);
        } catch (err) {
          // The socket closed (its runtime reconnects, to the next server when there are several).
          if (attempt < retries) {
            await sleep(backoff(attempt, 250, 5000));
            continue;
          }
          throw new HttpError(0, "network", `no answer from ${server}: ${(err as Error).message}`);
        }
      } else {
        let res: Response;
        let text: string;
        try {
          const headers: Record<string, string> = { ...opts.headers };
          if (this.credential) headers.authorization = `Bearer ${this.credential}`;
          if (body !== undefined) headers["content-type"] = "application/json";
          res = await fetch(`${server}/api/v1${path}`, {
            method,
            headers,
            body: opts.raw ?? (body === undefined ? undefined : JSON.stringify(body)),
            signal: AbortSignal.timeout(60_000),
          });
          // An answer cut off midway is no answer either.
          text = await res.text();
        } catch (err) {
          this.failover(server);
          if (attempt < retries) {
            await sleep(backoff(attempt, 250, 5000));
            continue;
          }
          throw new HttpError(0, "network", `cannot reach ${server}: ${(err as Error).message}`);
        }
        status = res.status;
        try {
          parsed = text ? JSON.parse(text) : null;
        } catch {}
      }
      if (status >= 200 && status < 300) return parsed as T;
      if (status >= 500 && attempt < retries) {
        await sleep(backoff(attempt, 250, 5000));
        continue;
      }
      const e = parsed?.error ?? {};
      throw new HttpError(status, e.code ?? "http_error", e.message ?? `${method} ${path} answered ${status}`, e.details);
    }
  }

  pair(body: { name: string; hostname: string; labels: string[] }) {
    return this.request<PairStarted>("POST", "/worker/pair", body, { retries: 5 });
  }
  pollPairing(deviceCode: string) {
    return this.request<PairResult>("POST", "/worker/pair/poll", { deviceCode }, { retries: 3 });
  }
  me() {
    return this.request<{ id: string; orgId: string; name: string; status: string }>("GET", "/worker/me", undefined, { retries: 3 });
  }
  claim(taskId: string, offerId: string) {
    return this.request<ClaimResult>("POST", `/worker/tasks/${taskId}/claim`, { offerId }, { socket: { op: "claim", taskId } });
  }
  transition(taskId: string, body: TransitionRequest) {
    return this.request<{ status: string }>("POST", `/worker/tasks/${taskId}/transition`, body, { retries: 8, socket: { op: "transition", taskId } });
  }
  events(taskId: string, body: EventsRequest) {
    return this.request<{ written: number; duplicates: number }>("POST", `/worker/tasks/${taskId}/events`, body, { retries: 8, socket: { op: "events", taskId } });
  }
  usage(taskId: string, body: UsageReport) {
    return this.request<{ costUsd: number }>("POST", `/worker/tasks/${taskId}/usage`, body, { retries: 3 });
  }
  upload(taskId: string, leaseToken: string, name: string, data: Blob) {
    return this.request("PUT", `/worker/tasks/${taskId}/artifacts/${encodeURIComponent(name)}`, undefined, {
      retries: 3,
      raw: data,
      headers: { [LEASE_HEADER]: leaseToken, "content-type": "application/octet-stream" },
    });
  }
  reportRepos(body: ReposReport) {
    return this.request("POST", "/worker/repos", body, { retries: 3 });
  }
  reportClone(repositoryId: string, body: CloneReport) {
    return this.request("POST", `/worker/clones/${repositoryId}`, body, { retries: 5 });
  }
  reportReadiness(runId: string, body: ReadinessReport) {
    return this.request("POST", `/worker/readiness/${runId}`, body, { retries: 5 });
  }
}
