// Who is online: hello and heartbeats on the worker socket, the resynchronisation of a worker
// that reconnects, and the monitor that finds silent workers and gives up their attempts.
//
// Several servers on one PostgreSQL database (`shared`): a worker is connected to one of them,
// and the servers tell one another on the bus what the others must act on: mail waits for it
// ("worker.mail"), it said hello somewhere ("worker.connected": a socket of it elsewhere is stale)
// or went away ("worker.disconnected"), it was revoked ("worker.revoked"), its record changed
// ("worker.updated", for live subscribers). On SQLite there is one server and none of it runs.
//
// Lost workers, with several servers: the server a worker is connected to writes its last_seen_at
// every lastSeenEvery (a quarter of the offline timeout, at most 5 s) and when its socket closes;
// one server, the "presence" leader (server/leader.ts), gives up the attempts (and readiness runs)
// of workers not heard of for the offline timeout plus that flush interval. The database decides,
// not one server's memory, so a worker that moved to another server keeps its attempts, and one
// whose server died (nobody writes its last_seen_at) is still found. When the leader dies another
// server takes the lead, and gives every worker the full offline timeout from then (as a restart
// does on SQLite), so workers that reconnect meanwhile keep their attempts. The per-server
// `departed` map is for SQLite only.
import type { Core } from "../../server/core";
import { iso } from "../../lib/time";
import { CLOSE, PROTOCOL_VERSION, type Heartbeat, type Hello, type RunningAttempt, type ServerMessage } from "../../protocol/messages";
import type { TaskRow } from "../tasks/record";
import { dispatcherOf, isHeld, type Conn, type Dispatcher } from "./dispatcher";
import { failInterruptedReadinessRuns, failReadinessRuns, giveUpAttempts, loseAttempts, publishLost } from "./recovery";
import { forgetWorkers, getWorkerRow, recordHello, recordLastSeen, toWorkerRecord, type WorkerRecord, type WorkerRow } from "./registry";
import { all, get, type Q } from "../../db/query";
import type { TaskChange } from "../tasks/store";
import { pendingClones } from "./clones";
import { leadership, type Leadership } from "../../server/leader";

/** A held attempt missing from this many heartbeats in a row is taken as lost. */
const MISSED_HEARTBEATS = 2;

type HeldRow = Pick<TaskRow, "id" | "attempt" | "status" | "worker_id">;
const HELD_ROWS = "SELECT id, attempt, status, worker_id FROM tasks WHERE worker_id = ? AND status IN ('running', 'paused', 'needs_input', 'needs_approval')";
const TASK = "SELECT id, attempt, status, worker_id FROM tasks WHERE id = ?";
const HOLDERS = "SELECT DISTINCT worker_id FROM tasks WHERE worker_id IS NOT NULL AND status IN ('running', 'paused', 'needs_input', 'needs_approval')";
/** Workers with a readiness run under way: like holders, they get the offline timeout to come back. */
const RUNNERS = "SELECT DISTINCT worker_id FROM readiness_runs WHERE status IN ('queued', 'running')";
/** Workers that hold attempts or readiness runs and were last heard of before a time. */
const SILENT = `SELECT id FROM workers WHERE (last_seen_at IS NULL OR last_seen_at < ?) AND id IN (
  SELECT worker_id FROM tasks WHERE worker_id IS NOT NULL AND status IN ('running', 'paused', 'needs_input', 'needs_approval')
  UNION SELECT worker_id FROM readiness_runs WHERE status IN ('queued', 'running'))`;
const LAST_SEEN = "SELECT last_seen_at FROM workers WHERE id = ?";

/** How often the worker's server writes its last_seen_at with several servers (other servers judge it by that). */
const lastSeenEvery = (offlineMs: number) => Math.min(5000, Math.max(50, Math.floor(offlineMs / 4)));

// The socket's handlers and the monitor's tick are the edges: each runs its programs through
// core.store. A worker's messages reach them one at a time, in order (socket.ts chains them).
export class Presence {
  /** SQLite: workers whose socket is gone but who may still hold attempts: workerId -> last heard (ms). */
  readonly departed = new Map<string, number>();
  private readonly missing = new Map<string, Map<string, number>>();
  private readonly timer: ReturnType<typeof setInterval>;
  private lastFlush = 0;
  /** A tick still running (its queries awaited): the next one is skipped rather than run alongside. */
  private ticking = false;
  readonly dispatcher: Dispatcher;
  /** Other servers may share the database (PostgreSQL): they hear of workers on the bus. */
  private readonly shared: boolean;
  /** With several servers: the one server that gives up silent workers, and since when it leads (ms). */
  private readonly leader: Leadership | null = null;
  private leadingSince = 0;
  /**
   * With several servers: the server each worker last said hello to (its instance id), or null
   * once its socket closed there; a worker not listed (connected before this server started) is
   * judged by its last_seen_at alone.
   */
  private readonly whereabouts = new Map<string, string | null>();
  private readonly unlisten: (() => void)[] = [];

  constructor(private readonly core: Core) {
    this.dispatcher = dispatcherOf(core);
    this.shared = core.sqlite === null;
    if (this.shared) {
      this.leader = leadership("presence", { url: core.config.databaseUrl ?? undefined, log: core.log });
      this.leader.onChange((leading) => void (leading && (this.leadingSince = Date.now())));
      this.listen();
    }
    void core.store.write(this.recover(Date.now())).catch((err) => core.log.error("worker presence start failed", { error: String((err as Error)?.stack ?? err) }));
    const { offlineMs } = core.config.workerTimeouts;
    this.timer = setInterval(() => void this.tick(), Math.max(50, Math.min(1000, Math.floor(offlineMs / 4))));
  }

  /** After a server restart every holder gets the full offline timeout to come back (several servers: see leadingSince). */
  private *recover(now: number): Q<void> {
    if (!this.shared) {
      const away = [...(yield* all<{ worker_id: string }>(HOLDERS)), ...(yield* all<{ worker_id: string }>(RUNNERS))];
      for (const { worker_id } of away) if (!this.dispatcher.isConnected(worker_id)) this.departed.set(worker_id, now);
    }
    yield* failInterruptedReadinessRuns(this.core);
  }

  // --- several servers ---------------------------------------------------------------------

  private listen() {
    const bus = this.core.bus;
    const me = this.core.instanceId;
    const on = (channel: string, handler: (p: { w: string; from: string; o?: string }) => void) =>
      this.unlisten.push(bus.on(channel, (p) => p && typeof p.w === "string" && p.from !== me && handler(p)));
    on("worker.mail", ({ w }) => {
      const conn = this.dispatcher.conns.get(w);
      if (conn?.greeted) void this.flushMail(conn).catch((err) => this.core.log.error("sending a worker's mail failed", { workerId: w, error: String((err as Error)?.stack ?? err) }));
    });
    on("worker.connected", ({ w, from }) => {
      this.whereabouts.set(w, from);
      const conn = this.dispatcher.conns.get(w);
      // Its socket here is stale (a half-open connection, or the worker moved): closed now, so
      // that it neither takes offers nor, closing later, writes an older last_seen_at.
      if (conn) this.drop(conn, CLOSE.replaced, "connected to another server");
    });
    on("worker.disconnected", ({ w, from }) => {
      // A close heard after the worker's hello elsewhere says nothing of where it is now.
      if (!this.whereabouts.has(w) || this.whereabouts.get(w) === from) this.whereabouts.set(w, null);
    });
    on("worker.revoked", ({ w }) => {
      this.whereabouts.set(w, null);
      const conn = this.dispatcher.conns.get(w);
      if (conn) this.drop(conn, CLOSE.revoked, "the worker was revoked");
    });
    on("worker.updated", ({ w, o }) => {
      if (typeof o === "string" && this.core.hub.hasSubscribers(`org:${o}`)) void this.publishHere(o, w);
    });
    // Messages sent while this server's bus was down are lost: mail may wait for its workers.
    this.unlisten.push(
      bus.onReconnect(() => {
        this.whereabouts.clear();
        for (const conn of [...this.dispatcher.conns.values()]) if (conn.greeted) void this.flushMail(conn).catch(() => {});
      }),
    );
  }

  /** Tells the other servers (several servers only; they skip their own messages). */
  private tell(channel: string, payload: Record<string, unknown>) {
    if (this.shared) this.core.bus.publish(channel, { ...payload, from: this.core.instanceId });
  }

  /** Closes a connection that another server made stale; its offers go to other workers. */
  private drop(conn: Conn, code: number, reason: string) {
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
  private async flushMail(conn: Conn): Promise<ServerMessage[]> {
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
    this.tell("worker.mail", { w: workerId });
  }

  /** Whether the worker is connected to this server or, as far as this one knows, to another. */
  isOnline(row: Pick<WorkerRow, "id" | "last_seen_at" | "revoked_at">): boolean {
    if (this.dispatcher.isConnected(row.id)) return true;
    if (!this.shared || row.revoked_at || !row.last_seen_at || this.whereabouts.get(row.id) === null) return false;
    return Date.parse(row.last_seen_at) > Date.now() - this.silentAfterMs();
  }

  /** Whether this server gives up silent workers (always on SQLite; the leader with several servers). */
  leads(): boolean {
    return this.leader?.isLeader() ?? true;
  }

  /** With several servers: how long a worker may go without a last_seen_at write before it counts as gone. */
  private silentAfterMs() {
    const { offlineMs } = this.core.config.workerTimeouts;
    return offlineMs + lastSeenEvery(offlineMs);
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
    if (this.shared) {
      this.whereabouts.set(conn.workerId, null);
      this.tell("worker.disconnected", { w: conn.workerId });
    } else this.departed.set(conn.workerId, conn.lastSeen);
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
    if (this.shared) {
      this.whereabouts.set(conn.workerId, this.core.instanceId);
      this.tell("worker.connected", { w: conn.workerId });
    }
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
    if (this.shared) {
      this.whereabouts.set(workerId, null);
      this.tell("worker.revoked", { w: workerId });
    }
    publishLost(this.core, lost);
    if (reoffer) await this.core.store.read(reoffer);
  }

  /** Approval or new labels/policy: the connection picks them up and looks at the queue. */
  async refresh(workerId: string, update: Partial<Pick<Conn, "labels" | "projects">> & { approved?: boolean }) {
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
    this.tell("worker.updated", { o: orgId, w: workerId });
    await this.publishHere(orgId, workerId);
  }

  private async publishHere(orgId: string, workerId: string) {
    const presence = this;
    const worker = await this.core.store.read(
      (function* () {
        const row = yield* getWorkerRow(presence.core, orgId, workerId);
        return row ? yield* presence.record(row) : null;
      })(),
    );
    if (worker) this.core.hub.publish(`org:${orgId}`, JSON.stringify({ type: "worker.updated", orgId, worker }));
  }

  async tick() {
    if (this.ticking) return;
    this.ticking = true;
    try {
      const now = Date.now();
      const { offlineMs } = this.core.config.workerTimeouts;
      for (const conn of [...this.dispatcher.conns.values()]) {
        if (now - conn.lastSeen > offlineMs) {
          const closed = this.closed(conn);
          conn.ws.close(CLOSE.silent, "silent for too long");
          await closed;
        }
      }
      const reason = `the worker was offline for more than ${Math.round(offlineMs / 1000)} s`;
      for (const [workerId, lastSeen] of [...this.departed]) {
        if (now - lastSeen <= offlineMs) continue;
        this.departed.delete(workerId);
        publishLost(this.core, await this.core.store.write(this.giveUp(workerId, reason)));
      }
      if (this.leader?.isLeader() && now - this.leadingSince > offlineMs) await this.giveUpSilent(now, reason);
      await this.core.store.read(this.dispatcher.fillAll());
      if (now - this.lastFlush > (this.shared ? lastSeenEvery(offlineMs) : 5000)) await this.flushLastSeen(now);
    } catch (err) {
      this.core.log.error("worker monitor failed", { error: String((err as Error)?.stack ?? err) });
    } finally {
      this.ticking = false;
    }
  }

  /** With several servers, on the leader: workers no server has heard of for too long are given up. */
  private async giveUpSilent(now: number, reason: string) {
    const before = iso(now - this.silentAfterMs());
    for (const { id } of await this.core.store.read(all<{ id: string }>(SILENT, before))) {
      // A worker connected here is judged by its socket (the silent check above).
      if (this.dispatcher.isConnected(id)) continue;
      publishLost(this.core, await this.core.store.write(this.giveUpIfSilent(id, before, reason)));
    }
  }

  /** Checked again in the write: a hello on any server since the read keeps its attempts. */
  private *giveUpIfSilent(workerId: string, before: string, reason: string): Q<TaskChange[]> {
    const row = yield* get<{ last_seen_at: string | null }>(LAST_SEEN, workerId);
    if (!row || (row.last_seen_at !== null && row.last_seen_at >= before)) return [];
    return yield* this.giveUp(workerId, reason);
  }

  /** A worker gone for good: its attempts and readiness runs are given up together. */
  private *giveUp(workerId: string, reason: string): Q<TaskChange[]> {
    yield* failReadinessRuns(this.core, workerId, reason);
    return yield* giveUpAttempts(this.core, workerId, reason);
  }

  private async flushLastSeen(now: number) {
    const since = this.lastFlush;
    this.lastFlush = now;
    // Only what was heard since the last flush: the rest is written already.
    const seen = [...this.dispatcher.conns.values()].filter((c) => c.lastSeen > since).map((c) => [c.workerId, iso(c.lastSeen)] as const);
    if (seen.length === 0) return;
    const core = this.core;
    await core.store.write(
      (function* () {
        for (const [workerId, at] of seen) yield* recordLastSeen(core, workerId, at);
      })(),
    );
    // No forgetWorkers: cached credential rows are not read for last_seen_at, and with several
    // servers a forget empties every server's caches (forgetEverywhere) at each flush.
  }

  async close() {
    clearInterval(this.timer);
    for (const off of this.unlisten.splice(0)) off();
    this.dispatcher.close();
    await this.leader?.close();
  }
}

const presences = new WeakMap<Core, Presence>();

export function presenceOf(core: Core): Presence {
  let p = presences.get(core);
  if (!p) presences.set(core, (p = new Presence(core)));
  return p;
}
