// The dispatcher: which workers are connected, what each holds, and which queued task is offered
// to whom. In memory per server instance; the database stays the truth about tasks (a claim is
// the atomic step), so losing this state costs only a re-offer.
//
// Offers go to approved, connected workers with a free slot (capacity - held - offered), by
// priority then age, to workers eligible for the task (eligibility.ts: labels, policy and the
// agent it names), never for a project over its daily budget (usage/budgets.ts).
// Messages for a worker (controls, clone, readiness) go through its mailbox (mailbox.ts).
import type { Core } from "../../server/core";
import { all, get, pure, type Q } from "../../db/query";
import type { Socket } from "../../server/sockets";
import { randomSecret } from "../../lib/tokens";
import { iso } from "../../lib/time";
import type { TaskRow } from "../tasks/record";
import type { TaskBefore } from "../tasks/store";
import type { Offer, ServerMessage } from "../../protocol/messages";
import { eligible, requiredLabels } from "./eligibility";
import { Mailbox } from "./mailbox";
import { dailyBudgetsOf, type DailyBudgets } from "../usage/budgets";

export interface Conn {
  ws: Socket;
  workerId: string;
  orgId: string;
  labels: Set<string>;
  /** Names of the agents it runs (from its hello): a task that names an agent goes only to a worker that has it. */
  agents: Set<string>;
  /** Projects the worker is limited to, or null for any. */
  projects: Set<string> | null;
  capacity: number;
  /** Said hello (capacity and holdings are known). */
  greeted: boolean;
  /** Approved and greeted: may receive offers. */
  active: boolean;
  /** Claimed attempts it holds: taskId -> attempt. */
  held: Map<string, number>;
  offers: Set<string>;
  lastSeen: number;
  lastOfferAt: number;
  /** Declined an offer: no offers before this time (ms). */
  restUntil: number;
}

export interface OfferState {
  offerId: string;
  taskId: string;
  orgId: string;
  attempt: number;
  workerId: string;
  expiresAt: number;
  timer: ReturnType<typeof setTimeout>;
}

type QueuedRow = Pick<TaskRow, "id" | "org_id" | "project_id" | "attempt" | "priority_rank" | "agent">;

const QUEUED_FIRST = `SELECT id, org_id, project_id, attempt, priority_rank, agent FROM tasks WHERE status = 'queued' AND org_id = ?
  ORDER BY priority_rank DESC, id ASC LIMIT ?`;
const QUEUED_AFTER = `SELECT id, org_id, project_id, attempt, priority_rank, agent FROM tasks WHERE status = 'queued' AND org_id = ?
  AND (priority_rank < ? OR (priority_rank = ? AND id > ?)) ORDER BY priority_rank DESC, id ASC LIMIT ?`;
const ANY_QUEUED = "SELECT 1 AS one FROM tasks WHERE status = 'queued' AND org_id = ? LIMIT 1";
const TASK = "SELECT id, org_id, project_id, attempt, priority_rank, agent, status FROM tasks WHERE id = ?";

const HELD = new Set(["running", "paused", "needs_input", "needs_approval"]);
export const isHeld = (row: Pick<TaskRow, "status" | "worker_id">) => row.worker_id !== null && HELD.has(row.status);

/** How long a worker that declined an offer is left out of offers. */
const DECLINE_PAUSE_MS = 1000;

/** Pauses of offers after a claim failed on a full disk: doubling from the first to the last. */
const STORAGE_PAUSE_MS = { first: 1000, last: 30_000 };

/** How many queued rows one pass looks at for one worker (the rest wait for the next pass). */
const SCAN_LIMIT = 500;

export class Dispatcher {
  readonly conns = new Map<string, Conn>();
  private readonly byOrg = new Map<string, Set<Conn>>();
  readonly offers = new Map<string, OfferState>();
  private readonly offerByTask = new Map<string, OfferState>();
  readonly mailbox: Mailbox;
  private readonly budgets: DailyBudgets;
  /**
   * Orgs whose queue is known to hold no task without an offer: a worker's freed slot then needs no
   * scan of the queue (it used to cost a 100-row read after every completion). An org is taken out
   * (may have some) whenever a queued task could not be placed or lost its offer; only a scan that
   * saw the whole queue puts it back. fillAll's safety net scans regardless.
   */
  private readonly allOffered = new Set<string>();
  /**
   * Moves whenever an org may have gained a task without an offer: a scan that read the queue
   * before such a moment (a query awaited on PostgreSQL) does not mark the org allOffered.
   */
  private unofferedEpoch = 0;
  /**
   * Tasks whose offer was taken by a claim that has not committed yet (claims wait for the group
   * commit): not offered to anyone else meanwhile, or a second worker would get an offer that the
   * commit then voids.
   */
  private readonly claiming = new Map<string, string>();
  /** Claims in flight per worker: they hold a slot as the offer did. */
  private readonly claimingBy = new Map<string, number>();
  /** No offers before `until` (ms): a claim could not be written (full disk). */
  private storagePause = { until: 0, ms: 0 };

  constructor(private readonly core: Core) {
    this.mailbox = new Mailbox(
      (workerId) => this.conns.get(workerId),
      (conn, message) => this.send(conn, message),
    );
    this.budgets = dailyBudgetsOf(core);
  }

  /** Runs a dispatcher program from an edge nobody answers (a timer, a listener): a failure is logged. */
  background(what: string, program: Q<void>): Promise<void> {
    return this.core.store.read(program).catch((err) => this.core.log.error(`${what} failed`, { error: String((err as Error)?.stack ?? err) }));
  }

  // --- connections -------------------------------------------------------------------------

  /** Adds a connection (the worker's previous one must have been removed). */
  add(conn: Conn) {
    this.conns.set(conn.workerId, conn);
    let set = this.byOrg.get(conn.orgId);
    if (!set) this.byOrg.set(conn.orgId, (set = new Set()));
    set.add(conn);
  }

  /**
   * Forgets a connection at once; the program returned re-offers what was offered to it (run it).
   * No-op for a replaced connection.
   */
  remove(conn: Conn): Q<void> {
    if (this.conns.get(conn.workerId) !== conn) return pure(undefined);
    this.conns.delete(conn.workerId);
    this.byOrg.get(conn.orgId)?.delete(conn);
    const voided = [...conn.offers].map((id) => this.offers.get(id)).filter((o): o is OfferState => !!o);
    for (const offer of voided) this.dropOffer(offer);
    return this.offerTasksById(voided.map((o) => o.taskId));
  }

  isConnected(workerId: string): boolean {
    return this.conns.has(workerId);
  }

  /** True when an approved, connected worker of the org runs the agent. */
  hasWorkerWithAgent(orgId: string, agent: string): boolean {
    for (const conn of this.byOrg.get(orgId) ?? []) if (conn.active && conn.agents.has(agent)) return true;
    return false;
  }

  free(conn: Conn): number {
    if (this.storagePause.until > 0 && this.storagePause.until > Date.now()) return 0;
    if (conn.restUntil > 0 && conn.restUntil > Date.now()) return 0;
    return conn.capacity - conn.held.size - conn.offers.size - (this.claimingBy.get(conn.workerId) ?? 0);
  }

  /** Sends to a worker that is connected and greeted; false otherwise (nothing is kept). */
  sendNow(workerId: string, message: ServerMessage): boolean {
    const conn = this.conns.get(workerId);
    return !!conn && conn.greeted && this.send(conn, message);
  }

  send(conn: Conn, message: ServerMessage): boolean {
    // 0 means the message was dropped (socket closing or over its backpressure limit).
    return conn.ws.send(JSON.stringify(message)) !== 0;
  }

  // --- offers ------------------------------------------------------------------------------

  /** The org's queue may hold a task without an offer. */
  private unoffered(orgId: string) {
    this.allOffered.delete(orgId);
    this.unofferedEpoch++;
  }

  private dropOffer(offer: OfferState) {
    this.unoffered(offer.orgId);
    clearTimeout(offer.timer);
    this.offers.delete(offer.offerId);
    if (this.offerByTask.get(offer.taskId) === offer) this.offerByTask.delete(offer.taskId);
    this.conns.get(offer.workerId)?.offers.delete(offer.offerId);
  }

  /**
   * A claim failed because the disk is full. Re-offering at once made worker and server spin
   * (thousands of failed claims a second); offers pause instead, longer each time, and the
   * presence monitor's fillAll resumes them when the pause ends.
   */
  pauseForStorage() {
    const ms = Math.min(STORAGE_PAUSE_MS.last, Math.max(STORAGE_PAUSE_MS.first, this.storagePause.ms * 2));
    this.storagePause = { until: Date.now() + ms, ms };
    this.core.log.warn("offers paused: the disk is full", { cause: "storage_full", pauseMs: ms });
  }

  /** A claim was written: the disk takes writes again. */
  storageWorks() {
    if (this.storagePause.ms === 0) return;
    this.storagePause = { until: 0, ms: 0 };
    this.core.log.info("offers resumed: the disk takes writes again");
  }

  /** Takes the offer out for a claim: the caller then owns the outcome (mayHaveUnoffered when the claim fails). */
  takeOffer(offerId: string, workerId: string, taskId: string): OfferState | null {
    const offer = this.offers.get(offerId);
    if (!offer || offer.workerId !== workerId || offer.taskId !== taskId) return null;
    const allOffered = this.allOffered.has(offer.orgId);
    this.dropOffer(offer);
    // A claim in progress: the task leaves the queue when it commits.
    if (allOffered) this.allOffered.add(offer.orgId);
    this.claiming.set(taskId, workerId);
    this.claimingBy.set(workerId, (this.claimingBy.get(workerId) ?? 0) + 1);
    return offer;
  }

  /** The claim of a taken offer committed or failed (then call mayHaveUnoffered: the task may still be queued). */
  claimSettled(taskId: string) {
    const workerId = this.claiming.get(taskId);
    if (workerId === undefined) return;
    this.claiming.delete(taskId);
    const n = (this.claimingBy.get(workerId) ?? 1) - 1;
    if (n > 0) this.claimingBy.set(workerId, n);
    else this.claimingBy.delete(workerId);
  }

  /** The org's queue may hold a task without an offer (a claim failed, a task was placed nowhere). */
  mayHaveUnoffered(orgId: string) {
    this.unoffered(orgId);
  }

  /**
   * The offer ran out, or the worker declined it: the task is offered elsewhere at once. After an
   * expiry the same worker may get it again if nobody else fits; a worker that declined gets no
   * offers for DECLINE_PAUSE_MS (no offer ping-pong with a worker that is full by its own count).
   * The offer is dropped at once; the program returned offers the task elsewhere (run it).
   */
  releaseOffer(offerId: string, workerId: string, declined = false): Q<void> {
    const offer = this.offers.get(offerId);
    if (!offer || offer.workerId !== workerId) return pure(undefined);
    this.dropOffer(offer);
    const conn = this.conns.get(workerId);
    if (declined && conn) conn.restUntil = Date.now() + DECLINE_PAUSE_MS;
    return this.offerTasksById([offer.taskId], workerId);
  }

  /** A task left the queue (claimed, paused, cancelled): its offer is void. */
  voidOfferFor(taskId: string) {
    const offer = this.offerByTask.get(taskId);
    if (offer) this.dropOffer(offer);
  }

  private makeOffer(conn: Conn, task: QueuedRow): boolean {
    const offerMs = this.core.config.workerTimeouts.offerMs;
    const offer: OfferState = {
      offerId: `ofr_${randomSecret(22)}`,
      taskId: task.id,
      orgId: task.org_id,
      attempt: task.attempt + 1,
      workerId: conn.workerId,
      expiresAt: Date.now() + offerMs,
      timer: setTimeout(() => void this.background("offer expiry", this.releaseOffer(offer.offerId, conn.workerId)), offerMs),
    };
    const message: Offer = { type: "offer", offerId: offer.offerId, taskId: task.id, attempt: offer.attempt, expiresAt: iso(offer.expiresAt) };
    this.offers.set(offer.offerId, offer);
    this.offerByTask.set(task.id, offer);
    conn.offers.add(offer.offerId);
    conn.lastOfferAt = Date.now();
    if (!this.send(conn, message)) {
      this.dropOffer(offer);
      return false;
    }
    this.core.metrics.offers.inc();
    return true;
  }

  /** Offers one queued task to the best eligible worker: the most free slots, then the longest without an offer. */
  *offerTask(task: QueuedRow, avoidWorkerId?: string): Q<boolean> {
    if (this.offerByTask.has(task.id) || this.claiming.has(task.id)) return true;
    const candidates = this.byOrg.get(task.org_id);
    if (!candidates || candidates.size === 0 || (yield* this.budgets.over(task.project_id))) {
      this.unoffered(task.org_id);
      return false;
    }
    const required = yield* requiredLabels(this.core, task.project_id);
    // Offered or claimed meanwhile (the labels may have been read from the database).
    if (this.offerByTask.has(task.id) || this.claiming.has(task.id)) return true;
    let best: Conn | null = null;
    let fallback: Conn | null = null;
    for (const conn of candidates) {
      const free = this.free(conn);
      if (free <= 0 || !eligible(conn, task, required)) continue;
      if (conn.workerId === avoidWorkerId) {
        fallback = conn;
        continue;
      }
      if (!best || free > this.free(best) || (free === this.free(best) && conn.lastOfferAt < best.lastOfferAt)) best = conn;
    }
    const target = best ?? fallback;
    if (target && this.makeOffer(target, task)) return true;
    this.unoffered(task.org_id);
    return false;
  }

  private *offerTasksById(taskIds: string[], avoidWorkerId?: string): Q<void> {
    for (const taskId of taskIds) {
      const row = yield* get<QueuedRow & { status: string }>(TASK, taskId);
      if (row && row.status === "queued") yield* this.offerTask(row, avoidWorkerId);
    }
  }

  /**
   * Fills a worker's free slots from its org's queue, highest priority and oldest first. Skipped
   * when every queued task of the org has an offer already, unless `force`.
   */
  *fill(conn: Conn, force = false): Q<void> {
    if (!conn.active || this.free(conn) <= 0) return;
    if (!force && this.allOffered.has(conn.orgId)) return;
    const cache = new Map<string, string[]>();
    const epoch = this.unofferedEpoch;
    let rows = yield* all<QueuedRow>(QUEUED_FIRST, conn.orgId, 100);
    let scanned = 0;
    let unoffered = 0;
    while (rows.length > 0 && this.free(conn) > 0 && scanned < SCAN_LIMIT) {
      for (const row of rows) {
        scanned++;
        if (this.offerByTask.has(row.id) || this.claiming.has(row.id)) continue;
        const required = (yield* this.budgets.over(row.project_id)) ? null : yield* requiredLabels(this.core, row.project_id, cache);
        // The connection may have gone, or the task been offered, while the labels were read.
        if (this.conns.get(conn.workerId) !== conn || this.free(conn) <= 0) return;
        if (this.offerByTask.has(row.id) || this.claiming.has(row.id)) continue;
        if (!required || !eligible(conn, row, required)) {
          unoffered++;
          continue;
        }
        if (!this.makeOffer(conn, row)) unoffered++;
        if (this.free(conn) <= 0) return;
      }
      if (rows.length < 100) {
        // The whole queue was seen: with nothing left unoffered, freed slots need no scan.
        if (unoffered === 0 && epoch === this.unofferedEpoch) this.allOffered.add(conn.orgId);
        return;
      }
      const last = rows[rows.length - 1];
      rows = yield* all<QueuedRow>(QUEUED_AFTER, conn.orgId, last.priority_rank, last.priority_rank, last.id, 100);
    }
    if (rows.length === 0 && unoffered === 0 && scanned < SCAN_LIMIT && epoch === this.unofferedEpoch) this.allOffered.add(conn.orgId);
  }

  /** Safety net: every worker with a free slot gets a look at its org's queue (one probe per org). */
  *fillAll(): Q<void> {
    for (const [orgId, conns] of [...this.byOrg]) {
      let probed = false;
      for (const conn of [...conns]) {
        if (!conn.active || this.free(conn) <= 0) continue;
        if (!probed) {
          const epoch = this.unofferedEpoch;
          if (!(yield* get<{ one: number }>(ANY_QUEUED, orgId))) {
            if (epoch === this.unofferedEpoch) this.allOffered.add(orgId);
            break;
          }
          probed = true;
        }
        yield* this.fill(conn, true);
      }
    }
  }

  // --- task changes --------------------------------------------------------------------------

  /**
   * Keeps holdings and offers in step with a committed task change (listener of core "task.changed",
   * and of "task.changedElsewhere": a change on another server may free a slot of a worker here or
   * queue a task for one; its `after` may be newer than the change, which only moves this on).
   */
  *onTaskChanged(before: TaskBefore | null, after: TaskRow): Q<void> {
    const wasHeldBy = before && isHeld(before) ? before.worker_id : null;
    const heldBy = isHeld(after) ? after.worker_id : null;
    if (wasHeldBy && (wasHeldBy !== heldBy || before!.attempt !== after.attempt)) {
      const conn = this.conns.get(wasHeldBy);
      if (conn && conn.held.get(after.id) === before!.attempt) {
        conn.held.delete(after.id);
        if (wasHeldBy !== heldBy) yield* this.fill(conn);
      }
    }
    if (heldBy) this.conns.get(heldBy)?.held.set(after.id, after.attempt);
    if (after.status !== "queued") this.voidOfferFor(after.id);
    else if (before?.status !== "queued" || before.attempt !== after.attempt) yield* this.offerTask(after);
  }

  close() {
    for (const offer of this.offers.values()) clearTimeout(offer.timer);
    this.offers.clear();
    this.offerByTask.clear();
    this.claiming.clear();
    this.claimingBy.clear();
  }
}

const dispatchers = new WeakMap<Core, Dispatcher>();

export function dispatcherOf(core: Core): Dispatcher {
  let d = dispatchers.get(core);
  if (!d) dispatchers.set(core, (d = new Dispatcher(core)));
  return d;
}
