// Messages for one worker (controls, readiness requests): sent at once when it is connected and
// has said hello, otherwise kept in the database (the last 100) and sent at its next hello. So a
// person's answer to a worker that is away survives a restart of the server.
import type { Database } from "bun:sqlite";
import type { Control, ControlAction, ServerMessage } from "../../protocol/messages";
import type { Conn } from "./dispatcher";

/** How many messages are kept for a worker that is away. */
const KEEP = 100;

export class Mailbox {
  private readonly q;
  private readonly keep: (workerId: string, message: string) => void;

  constructor(
    sqlite: Database,
    private readonly connOf: (workerId: string) => Conn | undefined,
    private readonly send: (conn: Conn, message: ServerMessage) => boolean,
  ) {
    this.q = {
      // Mail for a worker that no longer exists has nobody to reach: dropped, not an error.
      put: sqlite.query<null, [string, string, string, string]>(
        "INSERT INTO worker_mail (worker_id, message, created_at) SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM workers WHERE id = ?)",
      ),
      trim: sqlite.query<null, [string, string, number]>(
        "DELETE FROM worker_mail WHERE worker_id = ? AND id NOT IN (SELECT id FROM worker_mail WHERE worker_id = ? ORDER BY id DESC LIMIT ?)",
      ),
      // Taken in one statement: what a flush reads is gone, even if two hellos race.
      take: sqlite.query<{ id: number; message: string }, [string]>("DELETE FROM worker_mail WHERE worker_id = ? RETURNING id, message"),
      forget: sqlite.query<null, [string]>("DELETE FROM worker_mail WHERE worker_id = ?"),
    };
    this.keep = sqlite.transaction((workerId: string, message: string) => {
      this.q.put.run(workerId, message, new Date().toISOString(), workerId);
      this.q.trim.run(workerId, workerId, KEEP);
    });
  }

  /** Tells the worker holding an attempt to act on it; kept for delivery when it is away. */
  control(workerId: string, taskId: string, attempt: number, action: ControlAction, extra: { input?: string; reason?: string } = {}) {
    const message: Control = { type: "control", taskId, attempt, action, ...extra };
    this.deliver(workerId, message);
  }

  /** Sends a message to a worker now (true), or at its next hello (false). */
  deliver(workerId: string, message: ServerMessage): boolean {
    const conn = this.connOf(workerId);
    if (conn && conn.greeted && this.send(conn, message)) return true;
    this.keep(workerId, JSON.stringify(message));
    return false;
  }

  /** After a hello: what waited for this worker goes out, in order. */
  flush(conn: Conn) {
    const rows = this.q.take.all(conn.workerId);
    rows.sort((a, b) => a.id - b.id);
    for (const row of rows) this.send(conn, JSON.parse(row.message) as ServerMessage);
  }

  /** A revoked worker's mail is dropped. */
  forget(workerId: string) {
    this.q.forget.run(workerId);
  }
}
