// Presence with several servers on one PostgreSQL database: what the servers tell one another of
// their workers, and which server decides that a worker connected nowhere is gone. Apart from
// presence.ts (hello, heartbeats, resync: one server's sockets) because none of it runs on SQLite,
// where one server knows every socket; the last_seen_at flushing that both use is here too, since
// with several servers it is what the others judge a worker by.
//
// A worker is connected to one server, and the servers tell one another on the bus what the others
// must act on: mail waits for it ("worker.mail"), it said hello somewhere ("worker.connected": a
// socket of it elsewhere is stale) or went away ("worker.disconnected"), it was revoked
// ("worker.revoked"), a person changed its labels, policy or approval ("worker.changed": its
// server reads the row again and looks at the queue), its record changed ("worker.updated", for
// live subscribers).
//
// Lost workers: the server a worker is connected to writes its last_seen_at every lastSeenEvery (a
// quarter of the offline timeout, at most 5 s) and when its socket closes; one server, the
// "presence" leader (server/leader.ts), gives up the attempts (and readiness runs) of workers not
// heard of for the offline timeout plus that flush interval. The database decides, not one
// server's memory, so a worker that moved to another server keeps its attempts, and one whose
// server died (nobody writes its last_seen_at) is still found. When the leader dies another server
// takes the lead, and gives every worker the full offline timeout from then (as a restart does on
// SQLite), so workers that reconnect meanwhile keep their attempts.
import type { Core } from "../../server/core";
import { iso } from "../../lib/time";
import { CLOSE } from "../../protocol/messages";
import { all, get, type Q } from "../../db/query";
import { leadership, type Leadership } from "../../server/leader";
import type { TaskChange } from "../tasks/store";
import type { Dispatcher } from "./dispatcher";
import type { Presence } from "./presence";
import { publishLost } from "./recovery";
import { HELD_SQL, recordLastSeen, type WorkerRow } from "./registry";

/** Workers that hold attempts or readiness runs and were last heard of before a time. */
const SILENT = `SELECT id FROM workers WHERE (last_seen_at IS NULL OR last_seen_at < ?) AND id IN (
  SELECT worker_id FROM tasks WHERE worker_id IS NOT NULL AND ${HELD_SQL}
  UNION SELECT worker_id FROM readiness_runs WHERE status IN ('queued', 'running'))`;
const LAST_SEEN = "SELECT last_seen_at FROM workers WHERE id = ?";

/** How often the worker's server writes its last_seen_at with several servers (other servers judge it by that). */
const lastSeenEvery = (offlineMs: number) => Math.min(5000, Math.max(50, Math.floor(offlineMs / 4)));

/** A bus message about a worker: its id, the sending server, and its org for "worker.updated". */
type Told = { w: string; from: string; o?: string };

export class PresenceCluster {
  /** The one server that gives up silent workers, and since when it leads (ms). */
  private readonly leader: Leadership;
  private leadingSince = 0;
  /**
   * The server each worker last said hello to (its instance id), or null once its socket closed
   * there; a worker not listed (connected before this server started) is judged by its
   * last_seen_at alone.
   */
  private readonly whereabouts = new Map<string, string | null>();
  private readonly unlisten: (() => void)[] = [];

  constructor(
    private readonly core: Core,
    private readonly presence: Presence,
  ) {
    this.leader = leadership("presence", { url: core.config.databaseUrl ?? undefined, log: core.log });
    this.leader.onChange((leading) => void (leading && (this.leadingSince = Date.now())));
    this.listen();
  }

  private get dispatcher(): Dispatcher {
    return this.presence.dispatcher;
  }

  private listen() {
    const bus = this.core.bus;
    const me = this.core.instanceId;
    const on = (channel: string, handler: (p: Told) => void) =>
      this.unlisten.push(bus.on(channel, (p) => p && typeof p.w === "string" && p.from !== me && handler(p)));
    on("worker.mail", ({ w }) => {
      const conn = this.dispatcher.conns.get(w);
      if (conn?.greeted) void this.presence.flushMail(conn).catch((err) => this.core.log.error("sending a worker's mail failed", { workerId: w, error: String((err as Error)?.stack ?? err) }));
    });
    on("worker.connected", ({ w, from }) => {
      this.whereabouts.set(w, from);
      const conn = this.dispatcher.conns.get(w);
      // Its socket here is stale (a half-open connection, or the worker moved): closed now, so
      // that it neither takes offers nor, closing later, writes an older last_seen_at.
      if (conn) this.presence.drop(conn, CLOSE.replaced, "connected to another server");
    });
    on("worker.disconnected", ({ w, from }) => {
      // A close heard after the worker's hello elsewhere says nothing of where it is now.
      if (!this.whereabouts.has(w) || this.whereabouts.get(w) === from) this.whereabouts.set(w, null);
    });
    on("worker.revoked", ({ w }) => {
      this.whereabouts.set(w, null);
      const conn = this.dispatcher.conns.get(w);
      if (conn) this.presence.drop(conn, CLOSE.revoked, "the worker was revoked");
    });
    on("worker.changed", ({ w }) => {
      if (!this.dispatcher.isConnected(w)) return;
      void this.presence.reload(w).catch((err) => this.core.log.error("reloading a worker's labels and policy failed", { workerId: w, error: String((err as Error)?.stack ?? err) }));
    });
    on("worker.updated", ({ w, o }) => {
      if (typeof o !== "string") return;
      void this.presence.publishHere(o, w).catch((err) => this.core.log.error("publishing a worker's change failed", { workerId: w, error: String((err as Error)?.stack ?? err) }));
    });
    // Messages sent while this server's bus was down are lost: mail may wait for its workers.
    this.unlisten.push(
      bus.onReconnect(() => {
        this.whereabouts.clear();
        for (const conn of [...this.dispatcher.conns.values()]) if (conn.greeted) void this.presence.flushMail(conn).catch(() => {});
      }),
    );
  }

  /** Tells the other servers (they skip their own messages). */
  private tell(channel: string, payload: Record<string, unknown>) {
    this.core.bus.publish(channel, { ...payload, from: this.core.instanceId });
  }

  /** The worker said hello here: a socket of it on another server is stale. */
  connected(workerId: string) {
    this.whereabouts.set(workerId, this.core.instanceId);
    this.tell("worker.connected", { w: workerId });
  }

  disconnected(workerId: string) {
    this.whereabouts.set(workerId, null);
    this.tell("worker.disconnected", { w: workerId });
  }

  revoked(workerId: string) {
    this.whereabouts.set(workerId, null);
    this.tell("worker.revoked", { w: workerId });
  }

  /** Mail was kept for the worker: the server it is connected to sends it. */
  mailWaiting(workerId: string) {
    this.tell("worker.mail", { w: workerId });
  }

  /** A person changed what the worker may take (labels, policy, approval): the server it is connected to reads its row again. */
  changed(workerId: string) {
    this.tell("worker.changed", { w: workerId });
  }

  /** The worker's record changed: the other servers publish it to their live subscribers. */
  updated(orgId: string, workerId: string) {
    this.tell("worker.updated", { o: orgId, w: workerId });
  }

  /** Whether the worker, not connected here, is connected to another server as far as this one knows. */
  elsewhere(row: Pick<WorkerRow, "id" | "last_seen_at" | "revoked_at">): boolean {
    if (row.revoked_at || !row.last_seen_at || this.whereabouts.get(row.id) === null) return false;
    return Date.parse(row.last_seen_at) > Date.now() - this.silentAfterMs();
  }

  leads(): boolean {
    return this.leader.isLeader();
  }

  /** How long a worker may go without a last_seen_at write before it counts as gone. */
  private silentAfterMs() {
    const { offlineMs } = this.core.config.workerTimeouts;
    return offlineMs + lastSeenEvery(offlineMs);
  }

  /** On the leader (once it has led for the offline timeout): workers no server has heard of for too long are given up. */
  async giveUpSilent(now: number, reason: string) {
    if (!this.leader.isLeader() || now - this.leadingSince <= this.core.config.workerTimeouts.offlineMs) return;
    const before = iso(now - this.silentAfterMs());
    for (const { id } of await this.core.store.read(all<{ id: string }>(SILENT, before))) {
      // A worker connected here is judged by its socket (the monitor's silent check).
      if (this.dispatcher.isConnected(id)) continue;
      publishLost(this.core, await this.core.store.write(this.giveUpIfSilent(id, before, reason)));
    }
  }

  /** Checked again in the write: a hello on any server since the read keeps its attempts. */
  private *giveUpIfSilent(workerId: string, before: string, reason: string): Q<TaskChange[]> {
    const row = yield* get<{ last_seen_at: string | null }>(LAST_SEEN, workerId);
    if (!row || (row.last_seen_at !== null && row.last_seen_at >= before)) return [];
    return yield* this.presence.giveUp(workerId, reason);
  }

  async close() {
    for (const off of this.unlisten.splice(0)) off();
    await this.leader.close();
  }
}

/**
 * Writes the last_seen_at of the workers connected here, now and then: with several servers every
 * lastSeenEvery (the others judge workers by it), on SQLite every 5 s (what the API shows of a
 * worker after a restart).
 */
export class LastSeenFlush {
  private last = 0;

  constructor(
    private readonly core: Core,
    private readonly dispatcher: Dispatcher,
    private readonly shared: boolean,
  ) {}

  /** Flushes when the interval has passed since the last flush. */
  async due(now: number) {
    if (now - this.last <= (this.shared ? lastSeenEvery(this.core.config.workerTimeouts.offlineMs) : 5000)) return;
    const since = this.last;
    this.last = now;
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
}
