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
