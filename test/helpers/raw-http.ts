// HTTP/1.1 written by hand on a TCP socket: for what fetch cannot send (any Host header, a declared
// length with no body behind it, bytes trickled slowly) and to see exactly what the server answers.
import net from "node:net";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The server closed the connection after answering. */
  closed: boolean;
}

/**
 * Resolves with the first complete response (by Content-Length), or on close, whichever is first;
 * with untilClose, only once the server has closed the connection.
 */
export function rawHttp(port: number, head: string, opts: { body?: string | Uint8Array; localAddress?: string; untilClose?: boolean } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1", localAddress: opts.localAddress }, () => {
      socket.write(head.replaceAll("\n", "\r\n") + (head.endsWith("\n\n") ? "" : "\r\n\r\n"));
      if (opts.body !== undefined) socket.write(opts.body);
    });
    let data = Buffer.alloc(0);
    let done = false;
    const finish = (closed: boolean) => {
      const parsed = parse(data.toString("latin1"));
      if (!parsed) return closed ? reject(new Error(`connection closed without a complete response: ${JSON.stringify(data.toString("latin1"))}`)) : undefined;
      done = true;
      resolve({ ...parsed, closed });
      socket.destroy();
    };
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (!done && !opts.untilClose) finish(false);
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      if (!done) finish(true);
    });
  });
}

function parse(text: string): Omit<RawResponse, "closed"> | null {
  const end = text.indexOf("\r\n\r\n");
  if (end === -1) return null;
  const [statusLine, ...lines] = text.slice(0, end).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const length = Number(headers["content-length"] ?? 0);
  const body = Buffer.from(text.slice(end + 4), "latin1");
  if (body.byteLength < length) return null;
  return { status: Number(statusLine.split(" ")[1]), headers, body: body.subarray(0, length).toString("utf8") };
}

export interface RawWebSocket {
  /** Sends one frame, masked as a client must: opcode 1 text, 2 binary. Any bytes, valid UTF-8 or not. */
  send(opcode: number, payload: Uint8Array): void;
  /** The server's next text message (opcodes 1 and 2, as text) that satisfies `match`, within `ms`. */
  next(match: (text: string) => boolean, ms?: number): Promise<string>;
  /** The server's close frame: its code and reason. */
  closed: Promise<{ code: number; reason: string }>;
  destroy(): void;
}

/**
 * A WebSocket client written by hand, for the frames a WebSocket client will not send (a text
 * frame whose bytes are not UTF-8). Resolves once the server has answered the upgrade with 101.
 */
export function rawWebSocket(port: number, path: string, headers: Record<string, string> = {}): Promise<RawWebSocket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host: "127.0.0.1" });
    const texts: string[] = [];
    const waiters: { match: (text: string) => boolean; resolve: (text: string) => void }[] = [];
    let onClose!: (c: { code: number; reason: string }) => void;
    const closed = new Promise<{ code: number; reason: string }>((r) => (onClose = r));
    let data = Buffer.alloc(0);
    let upgraded = false;
    const deliver = (text: string) => {
      const i = waiters.findIndex((w) => w.match(text));
      if (i >= 0) waiters.splice(i, 1)[0].resolve(text);
      else texts.push(text);
    };
    const ws: RawWebSocket = {
      send(opcode, payload) {
        const mask = Buffer.from([0x12, 0x34, 0x56, 0x78]);
        const length = payload.byteLength < 126 ? Buffer.from([0x80 | payload.byteLength]) : Buffer.from([0x80 | 126, payload.byteLength >> 8, payload.byteLength & 0xff]);
        socket.write(Buffer.concat([Buffer.from([0x80 | opcode]), length, mask, Buffer.from(payload.map((b, i) => b ^ mask[i % 4]))]));
      },
      next(match, ms = 3000) {
        const i = texts.findIndex(match);
        if (i >= 0) return Promise.resolve(texts.splice(i, 1)[0]);
        return new Promise((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no matching message within ${ms} ms; got ${JSON.stringify(texts)}`)), ms);
          waiters.push({ match, resolve: (text) => (clearTimeout(timer), resolve(text)) });
        });
      },
      closed,
      destroy: () => socket.destroy(),
    };
    socket.on("connect", () => {
      const lines = [`GET ${path} HTTP/1.1`, `Host: 127.0.0.1:${port}`, "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"];
      for (const [name, value] of Object.entries(headers)) lines.push(`${name}: ${value}`);
      socket.write(lines.join("\r\n") + "\r\n\r\n");
    });
    socket.on("data", (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      if (!upgraded) {
        const end = data.indexOf("\r\n\r\n");
        if (end === -1) return;
        const status = data.subarray(0, end).toString("latin1").split(" ")[1];
        if (status !== "101") return reject(new Error(`upgrade answered ${status}`));
        upgraded = true;
        data = data.subarray(end + 4);
        resolve(ws);
      }
      // Server frames are unmasked and, here, unfragmented.
      for (;;) {
        if (data.length < 2) return;
        let length = data[1] & 0x7f;
        let start = 2;
        if (length === 126) [length, start] = [data.readUInt16BE(2), 4];
        else if (length === 127) [length, start] = [Number(data.readBigUInt64BE(2)), 10];
        if (data.length < start + length) return;
        const opcode = data[0] & 0x0f;
        const payload = data.subarray(start, start + length);
        data = data.subarray(start + length);
        if (opcode === 8) onClose({ code: payload.length >= 2 ? payload.readUInt16BE(0) : 1005, reason: payload.subarray(2).toString("utf8") });
        else if (opcode === 1 || opcode === 2) deliver(payload.toString("utf8"));
      }
    });
    socket.on("error", reject);
    socket.on("close", () => onClose({ code: 1006, reason: "" }));
  });
}
