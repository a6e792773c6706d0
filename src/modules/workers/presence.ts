// Who is online: hello and heartbeats on the worker socket, the resynchronisation of a worker
// that reconnects, and the monitor that finds silent workers and gives up their attempts.
//
// With several servers on one PostgreSQL database, what the servers tell one another and the
// leader that gives up workers connected nowhere are in presence-cluster.ts (`cluster`, null on
// SQLite). The per-server `departed` map is for SQLite only.
import type { Core } from "../../server/core";
import { iso } from "../../lib/time";
import { CLOSE, PROTOCOL_VERSION, SOCKET_REQUEST_OPS, type Heartbeat, type Hello, type RunningAttempt, type ServerMessage } from "../../protocol/messages";
import type { TaskRow } from "../tasks/record";
import { dispatcherOf, type Dispatcher } from "./dispatcher";
import { isHeld, type Conn } from "./dispatcher-state";
import { failInterruptedReadinessRuns, failReadinessRuns, giveUpAttempts, loseAttempts, publishLost } from "./recovery";
import { forgetWorkers, getWorkerRow, HELD_SQL, mayTake, recordHello, recordLastSeen, toWorkerRecord, type WorkerRecord, type WorkerRow } from "./registry";
import { all, get, type Q } from "../../db/query";
import type { TaskChange } from "../tasks/store";
import { pendingClones } from "./clones";
import { LastSeenFlush, PresenceCluster } from "./presence-cluster";

/** A held attempt missing from this many heartbeats in a row is taken as lost. */
const MISSED_HEARTBEATS = 2;

/** What a person changed of what a worker may take. */
export type WorkerChange = Partial<Pick<Conn, "labels" | "projects">> & { approved?: boolean };

type HeldRow = Pick<TaskRow, "id" | "attempt" | "status" | "worker_id">;
const HELD_ROWS = `SELECT id, attempt, status, worker_id FROM tasks WHERE worker_id = ? AND ${HELD_SQL}`;
const TASK = "SELECT id, attempt, status, worker_id FROM tasks WHERE id = ?";
const HOLDERS = `SELECT DISTINCT worker_id FROM tasks WHERE worker_id IS NOT NULL AND ${HELD_SQL}`;
/** Workers with a readiness run under way: like holders, they get the offline timeout to come back. */
const RUNNERS = "SELECT DISTINCT worker_id FROM readiness_runs WHERE status IN ('queued', 'running')";

// The socket's handlers and the monitor's tick are the edges: each runs its programs through
// core.store. A worker's messages reach them one at a time, in order (socket.ts chains them).
export class Presence {
  /** SQLite: workers whose socket is gone but who may still hold attempts: workerId -> last heard (ms). */
  readonly departed = new Map<string, number>();
  private readonly missing = new Map<string, Map<string, number>>();
  private readonly timer: ReturnType<typeof setInterval>;
  private readonly lastSeen: LastSeenFlush;
  /** A tick still running (its queries awaited): the next one is skipped rather than run alongside. */
  private ticking = false;
  /**
   * When the previous tick began. Silence is judged as of then, not now: a server that was
   * stalled (a long synchronous task, a starved or suspended process) has not yet read the
   * heartbeats that wait in its sockets, and must not give up workers that sent them.
   */
  private lastTick = Date.now();
  readonly dispatcher: Dispatcher;
  /** Other servers may share the database (PostgreSQL): they hear of workers on the bus. */
  private readonly cluster: PresenceCluster | null;

  constructor(private readonly core: Core) {
    this.dispatcher = dispatcherOf(core);
    this.cluster = core.sqlite === null ? new PresenceCluster(core, this) : null;
    this.lastSeen = new LastSeenFlush(core, this.dispatcher, this.cluster !== null);
    void core.store.write(this.recover(Date.now())).catch((err) => core.log.error("worker presence start failed", { error: String((err as Error)?.stack ?? err) }));
    const { offlineMs } = core.config.workerTimeouts;
    this.timer = setInterval(() => void this.tick(), Math.max(50, Math.min(1000, Math.floor(offlineMs / 4))));
  }

  /** After a server restart every holder gets the full offline timeout to come back (several servers: see presence-cluster.ts). */
  private *recover(now: number): Q<void> {
    if (!this.cluster) {
      const away = [...(yield* all<{ worker_id: string }>(HOLDERS)), ...(yield* all<{ worker_id: string }>(RUNNERS))];
      for (const { worker_id } of away) if (!this.dispatcher.isConnected(worker_id)) this.departed.set(worker_id, now);
    }
    yield* failInterruptedReadinessRuns(this.core);
  }

  /** Closes a connection that another server made stale (presence-cluster.ts); its offers go to other workers. */
  drop(conn: Conn, code: number, reason: string) {
    // Removed first, so its close handler has nothing left to do (closed() sees it replaced).
    const reoffer = this.dispatcher.remove(conn);
    this.missing.delete(conn.workerId);
    conn.ws.close(code, reason);
    void this.dispatcher.background("re-offering after a stale connection", reoffer);
  }

  /**
   * Sends what waits in the worker's mailbox. Flushes of one worker run on the server it is
   * connected to, one after another (writers take turns): each sends what it took as soon as its
   * commit is in, before the next one's transaction has begun, so the mail leaves in order.
   */
  async flushMail(conn: Conn): Promise<ServerMessage[]> {
    const mailbox = this.dispatcher.mailbox;
    const taken = await this.core.store.write(mailbox.take(conn.workerId));
    const sent = mailbox.sendTaken(conn, taken);
    if (sent < taken.length) await this.core.store.write(mailbox.putBack(conn.workerId, taken.slice(sent)));
    return taken.slice(0, sent).map((mail) => JSON.parse(mail.message) as ServerMessage);
  }

  /**
   * After the commit of a write that may have kept mail for the worker (it was not connected
   * here): the server it is connected to sends it now.
   */
  mailWaiting(workerId: string) {
    this.cluster?.mailWaiting(workerId);
  }

  /** Whether the worker is connected to this server or, as far as this one knows, to another. */
  isOnline(row: Pick<WorkerRow, "id" | "last_seen_at" | "revoked_at">): boolean {
    return this.dispatcher.isConnected(row.id) || (this.cluster?.elsewhere(row) ?? false);
  }

  /** Whether this server gives up silent workers (always on SQLite; the leader with several servers). */
  leads(): boolean {
    return this.cluster?.leads() ?? true;
  }

  async opened(conn: Conn) {
    const previous = this.dispatcher.conns.get(conn.workerId);
    const reoffer = previous ? this.dispatcher.remove(previous) : null;
    this.dispatcher.add(conn);
    if (previous) previous.ws.close(CLOSE.replaced, "replaced by a newer connection");
    this.departed.delete(conn.workerId);
    if (reoffer) await this.core.store.read(reoffer);
  }

  async closed(conn: Conn) {
    if (this.dispatcher.conns.get(conn.workerId) !== conn) return;
    const reoffer = this.dispatcher.remove(conn);
    this.missing.delete(conn.workerId);
    if (this.cluster) this.cluster.disconnected(conn.workerId);
    else this.departed.set(conn.workerId, conn.lastSeen);
    await this.core.store.read(reoffer);
    await this.core.store.read(recordLastSeen(this.core, conn.workerId, iso(conn.lastSeen)));
    forgetWorkers(this.core);
    await this.publish(conn.orgId, conn.workerId);
  }

  async hello(conn: Conn, hello: Hello) {
    if (hello.protocol !== PROTOCOL_VERSION) {
      conn.ws.send(JSON.stringify({ type: "error", code: "unsupported_version", message: `this server speaks worker protocol ${PROTOCOL_VERSION}` }));
      conn.ws.close(CLOSE.unsupportedVersion, "unsupported protocol version");
      return;
    }
    const now = Date.now();
    conn.lastSeen = now;
    conn.capacity = hello.capacity;
    conn.agents = new Set(hello.agents.map((a) => a.name));
    const row = await this.core.store.write(this.greet(conn, hello, iso(now)));
    forgetWorkers(this.core);
    if (!row || row.revoked_at) return void conn.ws.close(CLOSE.revoked, "revoked");
    this.cluster?.connected(conn.workerId);
    if (row.lost.length > 0) await loseAttempts(this.core, conn.workerId, "the worker reconnected without it", row.lost);
    conn.greeted = true;
    conn.active = row.approved_at !== null;
    this.dispatcher.send(conn, {
      type: "welcome",
      protocol: PROTOCOL_VERSION,
      workerId: conn.workerId,
      orgId: conn.orgId,
      status: conn.active ? "active" : "pending_approval",
      heartbeatMs: this.core.config.workerTimeouts.heartbeatMs,
      requests: [...SOCKET_REQUEST_OPS],
    });
    const mail = await this.flushMail(conn);
    // A clone request waits in the database too (until the worker reports it): sent once.
    const mailed = new Set(mail.flatMap((m) => (m.type === "clone" ? [m.repositoryId] : [])));
    for (const clone of await this.core.store.read(pendingClones(this.core, conn.workerId))) if (!mailed.has(clone.repositoryId)) this.dispatcher.send(conn, clone);
    await this.core.store.read(this.dispatcher.fill(conn));
    await this.publish(conn.orgId, conn.workerId);
  }

  /** Records the hello and resynchronises; the worker's row with the attempts it lost (to give up after), or null. */
  private *greet(conn: Conn, hello: Hello, at: string): Q<(WorkerRow & { lost: string[] }) | null> {
    yield* recordHello(this.core, conn.workerId, hello, at);
    const row = yield* getWorkerRow(this.core, conn.orgId, conn.workerId);
    if (!row || row.revoked_at) return null;
    return { ...row, lost: yield* this.resync(conn, hello.running ?? []) };
  }

  /**
   * After a reconnect: matching leases continue, stale ones are stopped; returns the attempts it
   * no longer runs (lost). Its controls wait in the mailbox for the flush after the welcome.
   */
  private *resync(conn: Conn, running: RunningAttempt[]): Q<string[]> {
    const reported = new Map(running.map((r) => [r.taskId, r.attempt]));
    const lost: string[] = [];
    conn.held.clear();
    for (const row of yield* all<HeldRow>(HELD_ROWS, conn.workerId)) {
      if (reported.get(row.id) !== row.attempt) lost.push(row.id);
      else {
        conn.held.set(row.id, row.attempt);
        // Paused while the worker was away (the control may have been lost with a server restart).
        if (row.status === "paused") yield* this.dispatcher.mailbox.control(conn.workerId, row.id, row.attempt, "pause");
      }
    }
    for (const [taskId, attempt] of reported) {
      if (conn.held.get(taskId) !== attempt) yield* this.dispatcher.mailbox.control(conn.workerId, taskId, attempt, "cancel", { reason: "this attempt is no longer current" });
    }
    return lost;
  }

  async heartbeat(conn: Conn, beat: Heartbeat) {
    conn.lastSeen = Date.now();
    const lost = await this.core.store.read(this.beat(conn, beat));
    if (lost.length > 0) await loseAttempts(this.core, conn.workerId, "the worker no longer reports it", lost);
  }

  /** Takes in a heartbeat (reads, and mail only if a control cannot be sent); returns the held attempts the worker stopped reporting (lost). */
  private *beat(conn: Conn, beat: Heartbeat): Q<string[]> {
    const reported = new Set<string>();
    for (const r of beat.running) {
      reported.add(r.taskId);
      if (conn.held.get(r.taskId) === r.attempt) continue;
      const row = yield* get<HeldRow>(TASK, r.taskId);
      if (row && row.worker_id === conn.workerId && row.attempt === r.attempt && isHeld(row)) conn.held.set(r.taskId, r.attempt);
      else yield* this.dispatcher.mailbox.control(conn.workerId, r.taskId, r.attempt, "cancel", { reason: "this attempt is no longer current" });
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
    return lost;
  }

  /**
   * Revocation, after its commit (which gave up the attempts: `lost`): the socket is closed at once
   * and the attempts go back to the queue.
   */
  async revoked(workerId: string, lost: TaskChange[]) {
    const conn = this.dispatcher.conns.get(workerId);
    const reoffer = conn ? this.dispatcher.remove(conn) : null;
    conn?.ws.close(CLOSE.revoked, "the worker was revoked");
    this.departed.delete(workerId);
    this.cluster?.revoked(workerId);
    publishLost(this.core, lost);
    if (reoffer) await this.core.store.read(reoffer);
  }

  /**
   * Approval or new labels/policy, after the commit: the connection picks them up and looks at the
   * queue; with several servers, the one the worker is connected to does (reload).
   */
  async refresh(workerId: string, update: WorkerChange) {
    const conn = this.dispatcher.conns.get(workerId);
    if (conn) await this.apply(conn, update);
    else this.cluster?.changed(workerId);
  }

  /** Another server changed the worker's row (presence-cluster.ts, "worker.changed"): read again if it is connected here. */
  async reload(workerId: string) {
    const conn = this.dispatcher.conns.get(workerId);
    if (!conn) return;
    const row = await this.core.store.read(getWorkerRow(this.core, conn.orgId, workerId));
    // A revocation closes the socket on its own notice.
    if (!row || row.revoked_at || this.dispatcher.conns.get(workerId) !== conn) return;
    await this.apply(conn, { ...mayTake(row), approved: row.approved_at !== null });
  }

  private async apply(conn: Conn, update: WorkerChange) {
    const workerId = conn.workerId;
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
        requests: [...SOCKET_REQUEST_OPS],
      });
    }
    await this.core.store.read(this.dispatcher.fill(conn));
  }

  lastSeenOf(workerId: string): string | null {
    const conn = this.dispatcher.conns.get(workerId);
    return conn && conn.lastSeen > 0 ? iso(conn.lastSeen) : null;
  }

  /** The worker's record as the API shows it, with what only the servers know (connected, last seen). */
  *record(row: WorkerRow): Q<WorkerRecord> {
    return yield* toWorkerRecord(this.core, row, { connected: this.isOnline(row), lastSeenAt: this.lastSeenOf(row.id) });
  }

  /** The worker's record to its org's live subscribers, on every server. */
  async publish(orgId: string, workerId: string) {
    this.cluster?.updated(orgId, workerId);
    await this.publishHere(orgId, workerId);
  }

  /**
   * The worker's record to this server's live subscribers of the org, and "workers.changed" for
   * what else follows the org's workers (presence-cluster.ts calls it for the others' changes).
   */
  async publishHere(orgId: string, workerId: string) {
    if (this.core.hub.hasSubscribers(`org:${orgId}`)) {
      const presence = this;
      const worker = await this.core.store.read(
        (function* () {
          const row = yield* getWorkerRow(presence.core, orgId, workerId);
          return row ? yield* presence.record(row) : null;
        })(),
      );
      if (worker) this.core.hub.publish(`org:${orgId}`, JSON.stringify({ type: "worker.updated", orgId, worker }));
    }
    this.core.events.emit("workers.changed", { orgId });
  }

  async tick() {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const now = Date.now();
      const judged = this.lastTick;
      this.lastTick = now;
      const { offlineMs } = this.core.config.workerTimeouts;
      for (const conn of [...this.dispatcher.conns.values()]) {
        if (judged - conn.lastSeen > offlineMs) {
          const closed = this.closed(conn);
          conn.ws.close(CLOSE.silent, "silent for too long");
          await closed;
        }
      }
      const reason = `the worker was offline for more than ${Math.round(offlineMs / 1000)} s`;
      for (const [workerId, lastSeen] of [...this.departed]) {
        if (judged - lastSeen <= offlineMs) continue;
        this.departed.delete(workerId);
        publishLost(this.core, await this.core.store.write(this.giveUp(workerId, reason)));
      }
      await this.cluster?.giveUpSilent(now, reason);
      await this.core.store.read(this.dispatcher.fillAll());
      await this.lastSeen.due(now);
    } catch (err) {
      this.core.log.error("worker monitor failed", { error: String((err as Error)?.stack ?? err) });
    } finally {
      this.ticking = false;
    }
  }

  /** A worker gone for good: its attempts and readiness runs are given up together. */
  *giveUp(workerId: string, reason: string): Q<TaskChange[]> {
    yield* failReadinessRuns(this.core, workerId, reason);
    return yield* giveUpAttempts(this.core, workerId, reason);
  }

  async close() {
    clearInterval(this.timer);
    const closing = this.cluster?.close();
    this.dispatcher.close();
    await closing;
  }
}

const presences = new WeakMap<Core, Presence>();

export function presenceOf(core: Core): Presence {
  let p = presences.get(core);
  if (!p) presences.set(core, (p = new Presence(core)));
  return p;
}
