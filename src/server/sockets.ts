// Bun's native WebSocket server, shared by the client live-updates socket and the worker
// protocol socket. Each path registers one handler; ws.data.path picks it.
import type { Server, ServerWebSocket } from "bun";

export type SocketData = { path: string; [key: string]: unknown };
export type Socket = ServerWebSocket<SocketData>;

export interface SocketHandler {
  /** Returns the data to attach to the socket, or a Response refusing the upgrade. */
  upgrade(request: Request, server: Server<SocketData>): Promise<Record<string, unknown> | Response> | Record<string, unknown> | Response;
  open?(ws: Socket): void;
  message?(ws: Socket, message: string | Buffer): void;
  close?(ws: Socket, code: number, reason: string): void;
}

export class Sockets {
  private handlers = new Map<string, SocketHandler>();

  register(path: string, handler: SocketHandler) {
    this.handlers.set(path, handler);
  }

  handlerFor(path: string): SocketHandler | undefined {
    return this.handlers.get(path);
  }

  async upgrade(request: Request, server: Server<SocketData>, path: string): Promise<Response | undefined> {
    const handler = this.handlers.get(path)!;
    const data = await handler.upgrade(request, server);
    if (data instanceof Response) return data;
    if (server.upgrade(request, { data: { ...data, path } })) return undefined;
    return new Response(JSON.stringify({ error: { code: "validation_failed", message: "expected a WebSocket upgrade" } }), {
      status: 400,
      headers: { "content-type": "application/json" },
    });
  }

  readonly websocket = {
    // Slow consumers are dropped rather than buffered without bound.
    backpressureLimit: 1024 * 1024,
    closeOnBackpressureLimit: true,
    idleTimeout: 120,
    perMessageDeflate: false,
    open: (ws: Socket) => this.handlers.get(ws.data.path)?.open?.(ws),
    message: (ws: Socket, message: string | Buffer) => this.handlers.get(ws.data.path)?.message?.(ws, message),
    close: (ws: Socket, code: number, reason: string) => this.handlers.get(ws.data.path)?.close?.(ws, code, reason),
  };
}
