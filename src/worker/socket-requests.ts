// The worker's side of requests on its socket (protocol/messages.ts, SocketRequest): claim, events
// and transition sent as messages on the connection it already holds, each answered by a reply
// with the HTTP route's status and body. WorkerClient uses it when the server's welcome listed the
// operation, and falls back to HTTP otherwise.
import { SOCKET_REQUEST_BYTES, type Reply, type SocketRequestOp } from "../protocol/messages";

export interface SocketAnswer {
  status: number;
  body: any;
}

interface Pending {
  resolve: (answer: SocketAnswer) => void;
  reject: (err: Error) => void;
  timer: ReturnType<typeof setTimeout>;
}

export class SocketRequests {
  private next = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly ops: ReadonlySet<string>;

  constructor(
    readonly ws: WebSocket,
    ops: readonly SocketRequestOp[],
    private readonly timeoutMs = 60_000,
  ) {
    this.ops = new Set(ops);
  }

  /**
   * Sends a request and resolves with its reply; rejects when the socket closes first or no reply
   * comes in time (the server may have applied it: the caller treats that as a lost HTTP answer).
   * Null when it cannot go this way (an operation the server did not list, a socket no longer
   * open, a body too large for a message): the caller uses HTTP.
   */
  call(op: SocketRequestOp, taskId: string, body: unknown): Promise<SocketAnswer> | null {
    if (!this.ops.has(op) || this.ws.readyState !== WebSocket.OPEN) return null;
    const id = this.next++;
    const text = JSON.stringify({ type: "request", id, op, taskId, body });
    // A UTF-8 byte is at least a character and at most three of them: count only when it may matter.
    if (text.length * 3 > SOCKET_REQUEST_BYTES && Buffer.byteLength(text) > SOCKET_REQUEST_BYTES) return null;
    return new Promise<SocketAnswer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`no reply to ${op} within ${this.timeoutMs / 1000} s`));
      }, this.timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      this.ws.send(text);
    });
  }

  /** A reply from the server: settles its request (one that timed out already is ignored). */
  settle(reply: Reply) {
    const p = this.pending.get(reply.id);
    if (!p) return;
    this.pending.delete(reply.id);
    clearTimeout(p.timer);
    p.resolve({ status: reply.status, body: reply.body });
  }

  /** The socket closed: every request still waiting fails, to be retried or given up by its caller. */
  close(reason: string) {
    for (const p of this.pending.values()) {
      clearTimeout(p.timer);
      p.reject(new Error(reason));
    }
    this.pending.clear();
  }

  get waiting(): number {
    return this.pending.size;
  }
}
