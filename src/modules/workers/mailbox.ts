// Messages for one worker (controls, readiness and clone requests): sent at once when it is
// connected here and has said hello, otherwise kept in the database (the last 100) and sent at its
// next hello, or at once by the server it is connected to when told so on the bus (presence.ts,
// "worker.mail"). So a person's answer reaches a worker on another server, and one that is away
// gets it after a restart of the server.
import { all, pure, run, type Q } from "../../db/query";
import type { Control, ControlAction, ServerMessage } from "../../protocol/messages";
import type { Conn } from "./dispatcher";

/** How many messages are kept for a worker that is away. */
const KEEP = 100;

// Mail for a worker that no longer exists has nobody to reach: dropped, not an error.
const PUT = "INSERT INTO worker_mail (worker_id, message, created_at) SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM workers WHERE id = ?)";
const TRIM = "DELETE FROM worker_mail WHERE worker_id = ? AND id NOT IN (SELECT id FROM worker_mail WHERE worker_id = ? ORDER BY id DESC LIMIT ?)";
const WAITING = "SELECT id, message FROM worker_mail WHERE worker_id = ? ORDER BY id";
const TAKEN = "DELETE FROM worker_mail WHERE worker_id = ? AND id <= ?";
const FORGET = "DELETE FROM worker_mail WHERE worker_id = ?";

export class Mailbox {
  constructor(
    private readonly connOf: (workerId: string) => Conn | undefined,
    private readonly send: (conn: Conn, message: ServerMessage) => boolean,
  ) {}

  /** Tells the worker holding an attempt to act on it; kept for delivery when it is away. */
  control(workerId: string, taskId: string, attempt: number, action: ControlAction, extra: { input?: string; reason?: string } = {}): Q<boolean> {
    const message: Control = { type: "control", taskId, attempt, action, ...extra };
    return this.deliver(workerId, message);
  }

  /**
   * Sends a message to a worker now (true), or keeps it for its next hello (false). The sending is
   * done by the call; the program only keeps what could not be sent (run it in a write).
   */
  deliver(workerId: string, message: ServerMessage): Q<boolean> {
    const conn = this.connOf(workerId);
    if (conn && conn.greeted && this.send(conn, message)) return pure(true);
    return this.keep(workerId, JSON.stringify(message));
  }

  private *keep(workerId: string, message: string): Q<boolean> {
    yield* run(PUT, workerId, message, new Date().toISOString(), workerId);
    yield* run(TRIM, workerId, workerId, KEEP);
    return false;
  }

  /**
   * After a hello, or when told that mail waits: what waited for this worker goes out, in order;
   * returns what was sent. Run it in a write: writers take turns (on every server), and each
   * flush sends before it commits, so two flushes that race never send one message twice, nor
   * out of order. What could not be sent (the socket is closing) stays for the next hello.
   */
  *flush(conn: Conn): Q<ServerMessage[]> {
    const sent: ServerMessage[] = [];
    let last: number | null = null;
    for (const row of yield* all<{ id: number | bigint; message: string }>(WAITING, conn.workerId)) {
      const message = JSON.parse(row.message) as ServerMessage;
      if (!this.send(conn, message)) break;
      sent.push(message);
      last = Number(row.id);
    }
    if (last !== null) yield* run(TAKEN, conn.workerId, last);
    return sent;
  }

  /** A revoked worker's mail is dropped. */
  *forget(workerId: string): Q<void> {
    yield* run(FORGET, workerId);
  }
}
