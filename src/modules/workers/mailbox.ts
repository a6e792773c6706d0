// Messages for one worker (controls, clone and readiness requests): sent at once when it is
// connected and has said hello, otherwise kept (the last 100) and sent at its next hello.
import type { Control, ControlAction, ServerMessage } from "../../protocol/messages";
import type { Conn } from "./dispatcher";

/** How many messages are kept for a worker that is away. */
const KEEP = 100;

export class Mailbox {
  private readonly pending = new Map<string, ServerMessage[]>();

  constructor(
    private readonly connOf: (workerId: string) => Conn | undefined,
    private readonly send: (conn: Conn, message: ServerMessage) => boolean,
  ) {}

  /** Tells the worker holding an attempt to act on it; queued for delivery when it is away. */
  control(workerId: string, taskId: string, attempt: number, action: ControlAction, extra: { input?: string; reason?: string } = {}) {
    const message: Control = { type: "control", taskId, attempt, action, ...extra };
    this.deliver(workerId, message);
  }

  /** Sends a message to a worker now (true), or at its next hello (false). */
  deliver(workerId: string, message: ServerMessage): boolean {
    const conn = this.connOf(workerId);
    if (conn && conn.greeted && this.send(conn, message)) return true;
    const list = this.pending.get(workerId) ?? [];
    list.push(message);
    this.pending.set(workerId, list.slice(-KEEP));
    return false;
  }

  /** After a hello: what waited for this worker goes out, in order. */
  flush(conn: Conn) {
    const list = this.pending.get(conn.workerId);
    if (!list) return;
    this.pending.delete(conn.workerId);
    for (const message of list) this.send(conn, message);
  }

  /** A revoked worker's mail is dropped. */
  forget(workerId: string) {
    this.pending.delete(workerId);
  }
}
