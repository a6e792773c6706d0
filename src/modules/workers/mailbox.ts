// Messages for one worker (controls, readiness and clone requests): sent at once when it is
// connected here and has said hello, otherwise kept in the database (the last 100) and sent at its
// next hello, or at once by the server it is connected to when told so on the bus (presence.ts,
// "worker.mail"). So a person's answer reaches a worker on another server, and one that is away
// gets it after a restart of the server.
import { all, pure, run, type Q } from "../../db/query";
import type { Control, ControlAction, ServerMessage } from "../../protocol/messages";
import type { Conn } from "./dispatcher-state";

/** How many messages are kept for a worker that is away. */
const KEEP = 100;

// Mail for a worker that no longer exists has nobody to reach: dropped, not an error.
const PUT = "INSERT INTO worker_mail (worker_id, message, created_at) SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM workers WHERE id = ?)";
const TRIM = "DELETE FROM worker_mail WHERE worker_id = ? AND id NOT IN (SELECT id FROM worker_mail WHERE worker_id = ? ORDER BY id DESC LIMIT ?)";
// Taken in one statement: what a flush reads is gone, even if two flushes race.
const TAKE = "DELETE FROM worker_mail WHERE worker_id = ? RETURNING id, message, created_at";
const PUT_BACK = "INSERT INTO worker_mail (id, worker_id, message, created_at) SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM workers WHERE id = ?)";

/** Mail taken out of the mailbox, to send after the commit. */
export interface Taken {
  id: number;
  message: string;
  createdAt: string;
}
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
   * After a hello, or when told that mail waits: takes what waited for this worker, in order (run
   * it in a write: writers take turns, on every server, so two flushes that race never take one
   * message twice). Send what it returns after the commit with `sendTaken`.
   */
  *take(workerId: string): Q<Taken[]> {
    const rows = yield* all<{ id: number | bigint; message: string; created_at: string }>(TAKE, workerId);
    return rows.map((r) => ({ id: Number(r.id), message: r.message, createdAt: r.created_at })).sort((a, b) => a.id - b.id);
  }

  /** Sends taken mail in order, until a send fails (the socket is closing); returns how many were sent. */
  sendTaken(conn: Conn, taken: Taken[]): number {
    let n = 0;
    while (n < taken.length && this.send(conn, JSON.parse(taken[n].message) as ServerMessage)) n++;
    return n;
  }

  /** Mail that could not be sent goes back under its own ids (before any newer mail), for the next hello. */
  *putBack(workerId: string, taken: Taken[]): Q<void> {
    for (const mail of taken) yield* run(PUT_BACK, mail.id, workerId, mail.message, mail.createdAt, workerId);
  }

  /** A revoked worker's mail is dropped. */
  *forget(workerId: string): Q<void> {
    yield* run(FORGET, workerId);
  }
}
