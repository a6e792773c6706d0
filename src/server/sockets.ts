// Bun's native WebSocket server, shared by the client live-updates socket and the worker
// protocol socket. Each path registers one handler; ws.data.path picks it.
import type { Server, ServerWebSocket } from "bun";
import { guarded, type Logger } from "./core";
import { errorResponse } from "./errors";
import { anyQueryRefusal } from "./query";

export const MAX_FRAME_BYTES = 1024 * 1024;

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

  constructor(private readonly log: Logger) {}

  register(path: string, handler: SocketHandler) {
    this.handlers.set(path, handler);
  }

  handlerFor(path: string): SocketHandler | undefined {
    return this.handlers.get(path);
  }

  /** `clientAddress`: the address the socket counts under until it closes (serve.ts). */
  async upgrade(request: Request, server: Server<SocketData>, path: string, clientAddress: string): Promise<Response | undefined> {
    const handler = this.handlers.get(path)!;
    const data = await handler.upgrade(request, server);
    if (data instanceof Response) return data;
    // No socket takes a query parameter (a credential goes in the Authorization header, or the live
    // socket's first message: never in an address that proxies log), refused as the API's routes
    // refuse one they do not take: 400 after the credential, when the upgrade carries one.
    const refused = anyQueryRefusal(request);
    if (refused) return errorResponse(refused);
    if (server.upgrade(request, { data: { ...data, path, clientAddress } })) return undefined;
    return new Response(JSON.stringify({ error: { code: "validation_failed", message: "expected a WebSocket upgrade" } }), {
      status: 400,
      headers: { "content-type": "application/json" },
    });
  }

  readonly websocket = {
    // Bun's frame limit is one per server and applies before a socket has authenticated (Bun's
    // default, 16 MiB, would be buffered for anyone who connects). 1 MiB, like a JSON body: above
    // the largest message a handler takes (the worker protocol's 256 KiB), so a handler still
    // answers an oversized message in its own terms; a larger frame closes the socket (1009).
    maxPayloadLength: MAX_FRAME_BYTES,
    // Slow consumers are dropped rather than buffered without bound.
    backpressureLimit: 1024 * 1024,
    closeOnBackpressureLimit: true,
    idleTimeout: 120,
    perMessageDeflate: false,
    // A handler's error is logged and the socket closed; it never reaches Bun (which would exit).
    open: (ws: Socket) => this.dispatch(ws, "open", (h) => h.open?.(ws)),
    message: (ws: Socket, message: string | Buffer) => this.dispatch(ws, "message", (h) => h.message?.(ws, message)),
    close: (ws: Socket, code: number, reason: string) => this.dispatch(ws, "close", (h) => h.close?.(ws, code, reason)),
  };

  private dispatch(ws: Socket, what: string, call: (handler: SocketHandler) => void) {
    const handler = this.handlers.get(ws.data.path);
    if (!handler) return;
    guarded(this.log, `socket ${what} on ${ws.data.path}`, () => {
      try {
        call(handler);
      } catch (error) {
        if (what !== "close") ws.close(1011, "internal error");
        throw error;
      }
    })();
  }
}
