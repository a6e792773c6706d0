// The JSON-RPC of `codex app-server` over its stdio: one JSON object per line, JSON-RPC 2.0
// without the "jsonrpc" member. Both sides make requests: we start threads and turns, Codex asks
// for approvals (server requests with an id that we answer); notifications carry the rest.

export interface RpcMessage {
  id?: number | string;
  method?: string;
  params?: any;
  result?: any;
  error?: { code: number; message: string; data?: unknown };
}

export class RpcError extends Error {
  constructor(
    readonly method: string,
    readonly code: number,
    message: string,
  ) {
    super(`${method}: ${message}`);
  }
}

export interface RpcHandlers {
  notification(method: string, params: any): void;
  /** A request from Codex; answer it with respond() or fail() when ready (it may wait for a person). */
  request(id: number | string, method: string, params: any): void;
  /** A line that is not JSON-RPC. */
  other(line: string): void;
}

export class CodexRpc {
  private nextId = 1;
  private pending = new Map<number, { method: string; resolve: (r: any) => void; reject: (e: Error) => void }>();

  constructor(
    private readonly write: (line: string) => void,
    private readonly handlers: RpcHandlers,
  ) {}

  request<T = any>(method: string, params: unknown): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { method, resolve, reject });
      this.write(JSON.stringify({ id, method, params }));
    });
  }

  notify(method: string, params?: unknown) {
    this.write(JSON.stringify(params === undefined ? { method } : { method, params }));
  }

  respond(id: number | string, result: unknown) {
    this.write(JSON.stringify({ id, result }));
  }

  fail(id: number | string, code: number, message: string) {
    this.write(JSON.stringify({ id, error: { code, message } }));
  }

  /** Everything still waiting for an answer fails: the process is gone. */
  close(why: string) {
    for (const [, p] of this.pending) p.reject(new RpcError(p.method, -32000, why));
    this.pending.clear();
  }

  /** One line of the app-server's stdout. */
  feed(line: string) {
    const trimmed = line.trim();
    if (!trimmed) return;
    let msg: RpcMessage;
    try {
      msg = JSON.parse(trimmed);
    } catch {
      return this.handlers.other(line);
    }
    if (!msg || typeof msg !== "object" || Array.isArray(msg)) return this.handlers.other(line);
    if (msg.method !== undefined && msg.id !== undefined) return this.handlers.request(msg.id, msg.method, msg.params ?? {});
    if (msg.method !== undefined) return this.handlers.notification(msg.method, msg.params ?? {});
    if (typeof msg.id === "number" && this.pending.has(msg.id)) {
      const p = this.pending.get(msg.id)!;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new RpcError(p.method, msg.error.code, msg.error.message));
      else p.resolve(msg.result);
      return;
    }
    this.handlers.other(line);
  }
}
