// The worker socket, /api/v1/worker/ws: authenticated by the aow_ credential at the upgrade,
// then hello, heartbeats, declines and requests in; welcome, offers, controls, clone, readiness
// and replies out.
import type { Core } from "../../server/core";
import type { Socket, SocketHandler } from "../../server/sockets";
import { ApiError, errorResponse, nestsTooDeep } from "../../server/errors";
import { decodeUtf8 } from "../../server/utf8";
import { CLOSE, WorkerMessage, type SocketRequest } from "../../protocol/messages";
import type { Conn } from "./dispatcher-state";
import { presenceOf } from "./presence";
import { bearerOf, mayTake, workerByCredential } from "./registry";
import { sha256Hex } from "../../lib/tokens";
import { compiledOnFirstUse } from "../../lib/checks";
import { answerSocketRequest } from "./socket-requests";

export const WORKER_SOCKET_PATH = "/api/v1/worker/ws";

const checkMessage = compiledOnFirstUse(WorkerMessage);
/** Largest worker message accepted (a hello with every list at its limit fits easily). */
const MAX_MESSAGE_BYTES = 256 * 1024;
/** Malformed messages tolerated per connection before it is closed. */
const GARBAGE_LIMIT = 20;

/**
 * `queue`: the socket's handlers, one after another. They await the database, so each is chained
 * after the previous: a worker's messages are handled in the order they came (hello before its
 * first heartbeat, the close after both).
 */
type WorkerSocketData = { path: string; conn?: Conn; workerId: string; orgId: string; credentialHash: string; garbage: number; queue: Promise<void> };

export function workerSocket(core: Core): SocketHandler {
  const presence = presenceOf(core);
  // The handlers still running: a stopping server lets them finish (the disconnections that its
  // stop caused included) before it closes the database under them.
  const running = new Set<Promise<void>>();
  const serially = (data: WorkerSocketData, what: string, handle: (conn: Conn) => Promise<void>) => {
    const conn = data.conn;
    if (!conn) return;
    const queue = (data.queue = data.queue
      .then(() => handle(conn))
      .catch((err) => core.log.error(`worker ${what} failed`, { workerId: conn.workerId, error: String((err as Error)?.stack ?? err) })));
    running.add(queue);
    void queue.finally(() => running.delete(queue));
  };
  // Requests are answered side by side, like HTTP requests (a claim need not wait for another
  // task's events), each in the order of its own awaits.
  const answer = (ws: Socket, data: WorkerSocketData, message: SocketRequest) => {
    // A reply to a socket closed meanwhile is dropped: the worker retries over its next connection.
    const done = answerSocketRequest(core, data.credentialHash, message)
      .then((reply) => void ws.send(JSON.stringify(reply)))
      .catch((err) => core.log.error("worker request failed", { workerId: data.workerId, error: String((err as Error)?.stack ?? err) }));
    running.add(done);
    void done.finally(() => running.delete(done));
  };
  core.onClose.push(async () => {
    while (running.size > 0) await Promise.allSettled([...running]);
  });
  return {
    async upgrade(request) {
      try {
        const credential = bearerOf(request.headers.get("authorization"));
        const worker = await core.store.read(workerByCredential(core, credential));
        // Its requests look the worker up again by the credential's hash (a revoked one is refused at once), hashed here once.
        return { credentialHash: sha256Hex(credential!), workerId: worker.id, orgId: worker.org_id, ...mayTake(worker), garbage: 0, queue: Promise.resolve() };
      } catch (err) {
        if (err instanceof ApiError) return errorResponse(err);
        throw err;
      }
    },
    open(ws: Socket) {
      const data = ws.data as unknown as WorkerSocketData & ReturnType<typeof mayTake>;
      const conn: Conn = {
        ws,
        workerId: data.workerId,
        orgId: data.orgId,
        labels: data.labels,
        agents: new Set(),
        projects: data.projects,
        capacity: 0,
        greeted: false,
        active: false,
        held: new Map(),
        offers: new Set(),
        lastSeen: Date.now(),
        lastOfferAt: 0,
        restUntil: 0,
      };
      data.conn = conn;
      serially(data, "connection", () => presence.opened(conn));
    },
    message(ws: Socket, raw: string | Buffer) {
      const data = ws.data as unknown as WorkerSocketData;
      const conn = data.conn;
      if (!conn) return;
      let message: unknown;
      try {
        // Protocol messages are small; a huge one is refused before it is parsed. A text frame that
        // is not UTF-8 never gets here (Bun closes the socket with 1007); a binary one is decoded
        // strictly, so that bytes that are not UTF-8 are refused, not stored as U+FFFD.
        if (raw.length <= MAX_MESSAGE_BYTES) message = JSON.parse(typeof raw === "string" ? raw : decodeUtf8(raw));
      } catch {
        message = undefined;
      }
      if (!checkMessage().Check(message) || nestsTooDeep(message)) {
        data.garbage++;
        ws.send(JSON.stringify({ type: "error", code: "bad_message", message: "not a worker protocol message" }));
        if (data.garbage >= GARBAGE_LIMIT) ws.close(CLOSE.garbage, "too many malformed messages");
        return;
      }
      // Heard now, whatever waits in the queue before it: a greeted worker is alive.
      if (message.type !== "hello" && conn.greeted) conn.lastSeen = Date.now();
      if (message.type === "request") return answer(ws, data, message);
      serially(data, `${message.type} message`, async () => {
        switch (message.type) {
          case "hello":
            return presence.hello(conn, message);
          case "heartbeat":
            // Checked in turn: a hello just before it has been handled by now.
            if (!conn.greeted) return void ws.send(JSON.stringify({ type: "error", code: "hello_first", message: "send hello first" }));
            return presence.heartbeat(conn, message);
          case "decline":
            return core.store.read(presence.dispatcher.releaseOffer(message.offerId, conn.workerId, true));
        }
      });
    },
    close(ws: Socket) {
      serially(ws.data as unknown as WorkerSocketData, "disconnection", (conn) => presence.closed(conn));
    },
  };
}
