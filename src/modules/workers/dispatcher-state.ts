// The dispatcher's bookkeeping, in memory per server: which workers are connected here and what
// each holds, the offers out and the claims in flight, and whether an org's queue may hold a task
// without an offer. Apart from dispatcher.ts, which reads the queue and chooses whom to offer a
// task; nothing here makes a query of its own.
import type { Core } from "../../server/core";
import type { Q } from "../../db/query";
import type { Socket } from "../../server/sockets";
import type { TaskRow } from "../tasks/record";
import type { ServerMessage } from "../../protocol/messages";
import { Mailbox } from "./mailbox";
import { HELD_STATUSES } from "./registry";

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

const HELD = new Set<string>(HELD_STATUSES);
const NONE: ReadonlySet<Conn> = new Set();
export const isHeld = (row: Pick<TaskRow, "status" | "worker_id">) => row.worker_id !== null && HELD.has(row.status);

/** Pauses of offers after a claim failed on a full disk: doubling from the first to the last. */
const STORAGE_PAUSE_MS = { first: 1000, last: 30_000 };

export class DispatcherState {
  readonly conns = new Map<string, Conn>();
  protected readonly byOrg = new Map<string, Set<Conn>>();
  readonly offers = new Map<string, OfferState>();
  protected readonly offerByTask = new Map<string, OfferState>();
  readonly mailbox: Mailbox;
  /**
   * Orgs whose queue is known to hold no task without an offer: a worker's freed slot then needs no
   * scan of the queue (it used to cost a 100-row read after every completion). An org is taken out
   * (may have some) whenever a queued task could not be placed or lost its offer; only a scan that
   * saw the whole queue puts it back. fillAll's safety net scans regardless.
   */
  protected readonly allOffered = new Set<string>();
  /**
   * Moves whenever an org may have gained a task without an offer: a scan that read the queue
   * before such a moment (a query awaited on PostgreSQL) does not mark the org allOffered.
   */
  protected unofferedEpoch = 0;
  /**
   * Tasks whose offer was taken by a claim that has not committed yet (claims wait for the group
   * commit): not offered to anyone else meanwhile, or a second worker would get an offer that the
   * commit then voids.
   */
  protected readonly claiming = new Map<string, string>();
  /** Claims in flight per worker: they hold a slot as the offer did. */
  private readonly claimingBy = new Map<string, number>();
  /** No offers before `until` (ms): a claim could not be written (full disk). */
  private storagePause = { until: 0, ms: 0 };

  constructor(protected readonly core: Core) {
    this.mailbox = new Mailbox(
      (workerId) => this.conns.get(workerId),
      (conn, message) => this.send(conn, message),
    );
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

  isConnected(workerId: string): boolean {
    return this.conns.has(workerId);
  }

  /** The org's workers connected here (greeted or not, approved or not). */
  connsOf(orgId: string): ReadonlySet<Conn> {
    return this.byOrg.get(orgId) ?? NONE;
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
  protected unoffered(orgId: string) {
    this.allOffered.delete(orgId);
    this.unofferedEpoch++;
  }

  protected dropOffer(offer: OfferState) {
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

  /** A task left the queue (claimed, paused, cancelled): its offer is void. */
  voidOfferFor(taskId: string) {
    const offer = this.offerByTask.get(taskId);
    if (offer) this.dropOffer(offer);
  }

  close() {
    for (const offer of this.offers.values()) clearTimeout(offer.timer);
    this.offers.clear();
    this.offerByTask.clear();
    this.claiming.clear();
    this.claimingBy.clear();
  }
}
