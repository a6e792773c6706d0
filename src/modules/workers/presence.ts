// Who is online: hello and heartbeats on the worker socket, the resynchronisation of a worker
// that reconnects, and the monitor that finds silent workers and gives up their attempts.
import type { Core } from "../../server/core";
import { guarded } from "../../server/core";
import { iso } from "../../lib/time";
import { CLOSE, PROTOCOL_VERSION, type Heartbeat, type Hello, type RunningAttempt } from "../../protocol/messages";
import type { TaskRow } from "../tasks/record";
import { dispatcherOf, isHeld, type Conn, type Dispatcher } from "./dispatcher";
import { failInterruptedReadinessRuns, failReadinessRuns, loseAttempts } from "./recovery";
import { forgetWorkers, getWorkerRow, toWorkerRecord, workerStatements } from "./registry";
import { pendingClones } from "./clones";

/** A held attempt missing from this many heartbeats in a row is taken as lost. */
const MISSED_HEARTBEATS = 2;

export class Presence {
  /** Workers whose socket is gone but who may still hold attempts: workerId -> last heard (ms). */
  readonly departed = new Map<string, number>();
  private readonly missing = new Map<string, Map<string, number>>();
  private readonly timer: ReturnType<typeof setInterval>;
  private lastFlush = 0;
  private readonly q;
  readonly dispatcher: Dispatcher;

  constructor(private readonly core: Core) {
    this.dispatcher = dispatcherOf(core);
    this.q = {
      heldRows: core.sqlite.query<Pick<TaskRow, "id" | "attempt" | "status" | "worker_id">, [string]>(
        "SELECT id, attempt, status, worker_id FROM tasks WHERE worker_id = ? AND status IN ('running', 'paused', 'needs_input', 'needs_approval')",
      ),
      task: core.sqlite.query<Pick<TaskRow, "id" | "attempt" | "status" | "worker_id">, [string]>("SELECT id, attempt, status, worker_id FROM tasks WHERE id = ?"),
      holders: core.sqlite.query<{ worker_id: string }, []>(
        "SELECT DISTINCT worker_id FROM tasks WHERE worker_id IS NOT NULL AND status IN ('running', 'paused', 'needs_input', 'needs_approval')",
      ),
    };
    // After a server restart every holder gets the full offline timeout to come back.
    const now = Date.now();
    for (const { worker_id } of this.q.holders.all()) this.departed.set(worker_id, now);
    failInterruptedReadinessRuns(core);
    const { offlineMs } = core.config.workerTimeouts;
    this.timer = setInterval(guarded(core.log, "worker presence check", () => this.tick()), Math.max(50, Math.min(1000, Math.floor(offlineMs / 4))));
  }

  opened(conn: Conn) {
    const previous = this.dispatcher.add(conn);
    if (previous) previous.ws.close(CLOSE.replaced, "replaced by a newer connection");
    this.departed.delete(conn.workerId);
  }

  closed(conn: Conn) {
    if (this.dispatcher.conns.get(conn.workerId) !== conn) return;
    this.dispatcher.remove(conn);
    this.missing.delete(conn.workerId);
    workerStatements(this.core).seen.run(iso(conn.lastSeen), conn.workerId);
    forgetWorkers(this.core);
    this.departed.set(conn.workerId, conn.lastSeen);
    this.publish(conn.orgId, conn.workerId);
  }

  hello(conn: Conn, hello: Hello) {
    if (hello.protocol !== PROTOCOL_VERSION) {
      conn.ws.send(JSON.stringify({ type: "error", code: "unsupported_version", message: `this server speaks worker protocol ${PROTOCOL_VERSION}` }));
      conn.ws.close(CLOSE.unsupportedVersion, "unsupported protocol version");
      return;
    }
    const now = Date.now();
    conn.lastSeen = now;
    conn.capacity = hello.capacity;
    conn.agents = new Set(hello.agents.map((a) => a.name));
    workerStatements(this.core).hello.run(
      JSON.stringify(hello.tools), JSON.stringify(hello.agents), JSON.stringify(hello.providers), hello.version, hello.capacity, iso(now), iso(now), conn.workerId,
    );
    forgetWorkers(this.core);
    const row = getWorkerRow(this.core, conn.orgId, conn.workerId);
    if (!row || row.revoked_at) return void conn.ws.close(CLOSE.revoked, "revoked");
    this.resync(conn, hello.running ?? []);
    conn.greeted = true;
    conn.active = row.approved_at !== null;
    this.dispatcher.send(conn, {
      type: "welcome",
      protocol: PROTOCOL_VERSION,
      workerId: conn.workerId,
      orgId: conn.orgId,
      status: conn.active ? "active" : "pending_approval",
      heartbeatMs: this.core.config.workerTimeouts.heartbeatMs,
    });
    this.dispatcher.mailbox.flush(conn);
    for (const clone of pendingClones(this.core, conn.workerId)) this.dispatcher.send(conn, clone);
    this.dispatcher.fill(conn);
    this.publish(conn.orgId, conn.workerId);
  }

  /** After a reconnect: matching leases continue, attempts it no longer runs are lost, stale ones are stopped. */
  private resync(conn: Conn, running: RunningAttempt[]) {
    const reported = new Map(running.map((r) => [r.taskId, r.attempt]));
    const lost: string[] = [];
    conn.held.clear();
    for (const row of this.q.heldRows.all(conn.workerId)) {
      if (reported.get(row.id) !== row.attempt) lost.push(row.id);
      else {
        conn.held.set(row.id, row.attempt);
        // Paused while the worker was away (the control may have been lost with a server restart).
        if (row.status === "paused") this.dispatcher.mailbox.control(conn.workerId, row.id, row.attempt, "pause");
      }
    }
    for (const [taskId, attempt] of reported) {
      if (conn.held.get(taskId) !== attempt) this.dispatcher.mailbox.control(conn.workerId, taskId, attempt, "cancel", { reason: "this attempt is no longer current" });
    }
    if (lost.length > 0) loseAttempts(this.core, conn.workerId, "the worker reconnected without it", lost);
  }

  heartbeat(conn: Conn, beat: Heartbeat) {
    conn.lastSeen = Date.now();
    const reported = new Set<string>();
    for (const r of beat.running) {
      reported.add(r.taskId);
      if (conn.held.get(r.taskId) === r.attempt) continue;
      const row = this.q.task.get(r.taskId);
      if (row && row.worker_id === conn.workerId && row.attempt === r.attempt && isHeld(row as TaskRow)) conn.held.set(r.taskId, r.attempt);
      else this.dispatcher.mailbox.control(conn.workerId, r.taskId, r.attempt, "cancel", { reason: "this attempt is no longer current" });
    }
    // A held attempt the worker stopped mentioning is gone (after a grace of heartbeats: a fresh claim may not be listed yet).
    const misses = this.missing.get(conn.workerId) ?? new Map<string, number>();
    const lost: string[] = [];
    for (const taskId of conn.held.keys()) {
      if (reported.has(taskId)) misses.delete(taskId);
      else {
        const n = (misses.get(taskId) ?? 0) + 1;
        if (n >= MISSED_HEARTBEATS) {
          lost.push(taskId);
          misses.delete(taskId);
        } else misses.set(taskId, n);
      }
    }
    for (const taskId of misses.keys()) if (!conn.held.has(taskId)) misses.delete(taskId);
    if (misses.size > 0) this.missing.set(conn.workerId, misses);
    else this.missing.delete(conn.workerId);
    if (lost.length > 0) loseAttempts(this.core, conn.workerId, "the worker no longer reports it", lost);
  }

  /** Revocation: the socket is closed at once and the attempts go back to the queue. */
  revoke(workerId: string) {
    const conn = this.dispatcher.conns.get(workerId);
    if (conn) {
      this.dispatcher.remove(conn);
      conn.ws.close(CLOSE.revoked, "the worker was revoked");
    }
    this.departed.delete(workerId);
    this.dispatcher.mailbox.forget(workerId);
    loseAttempts(this.core, workerId, "the worker was revoked");
    failReadinessRuns(this.core, workerId, "the worker was revoked");
  }

  /** Approval or new labels/policy: the connection picks them up and looks at the queue. */
  refresh(workerId: string, update: Partial<Pick<Conn, "labels" | "projects">> & { approved?: boolean }) {
    const conn = this.dispatcher.conns.get(workerId);
    if (!conn) return;
    if (update.labels) conn.labels = update.labels;
    if (update.projects !== undefined) conn.projects = update.projects;
    if (update.approved && conn.greeted && !conn.active) {
      conn.active = true;
      this.dispatcher.send(conn, {
        type: "welcome",
        protocol: PROTOCOL_VERSION,
        workerId,
        orgId: conn.orgId,
        status: "active",
        heartbeatMs: this.core.config.workerTimeouts.heartbeatMs,
      });
    }
    this.dispatcher.fill(conn);
  }

  lastSeenOf(workerId: string): string | null {
    const conn = this.dispatcher.conns.get(workerId);
    return conn && conn.lastSeen > 0 ? iso(conn.lastSeen) : null;
  }

  publish(orgId: string, workerId: string) {
    const row = getWorkerRow(this.core, orgId, workerId);
    if (!row) return;
    const worker = toWorkerRecord(this.core, row, { connected: this.dispatcher.isConnected(workerId), lastSeenAt: this.lastSeenOf(workerId) });
    this.core.hub.publish(`org:${orgId}`, JSON.stringify({ type: "worker.updated", orgId, worker }));
  }

  tick() {
    try {
      const now = Date.now();
      const { offlineMs } = this.core.config.workerTimeouts;
      for (const conn of [...this.dispatcher.conns.values()]) {
        if (now - conn.lastSeen > offlineMs) {
          this.closed(conn);
          conn.ws.close(CLOSE.silent, "silent for too long");
        }
      }
      for (const [workerId, lastSeen] of [...this.departed]) {
        if (now - lastSeen <= offlineMs) continue;
        this.departed.delete(workerId);
        const reason = `the worker was offline for more than ${Math.round(offlineMs / 1000)} s`;
        loseAttempts(this.core, workerId, reason);
        failReadinessRuns(this.core, workerId, reason);
      }
      this.dispatcher.fillAll();
      if (now - this.lastFlush > 5000) this.flushLastSeen(now);
    } catch (err) {
      this.core.log.error("worker monitor failed", { error: String((err as Error)?.stack ?? err) });
    }
  }

  private flushLastSeen(now: number) {
    this.lastFlush = now;
    const seen = workerStatements(this.core).seen;
    const conns = [...this.dispatcher.conns.values()].filter((c) => c.lastSeen > 0);
    if (conns.length === 0) return;
    this.core.sqlite.transaction(() => {
      for (const c of conns) seen.run(iso(c.lastSeen), c.workerId);
    })();
    forgetWorkers(this.core);
  }

  close() {
    clearInterval(this.timer);
    this.dispatcher.close();
  }
}

const presences = new WeakMap<Core, Presence>();

export function presenceOf(core: Core): Presence {
  let p = presences.get(core);
  if (!p) presences.set(core, (p = new Presence(core)));
  return p;
}
