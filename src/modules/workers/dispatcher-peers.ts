// Offers with several servers on one PostgreSQL database: which server offers a queued task.
// Every server hears every task change, and each offered a new task to its own workers at once,
// so with two servers most tasks were offered twice: one claim won, the other worker lost a round
// trip and a slot, and its refill picked the next task the other server had offered (15,461
// refused worker requests in 30 s of bench/vs-graphile.ts with two servers).
//
// Now the server that queued the task (created it, or put it back in the queue) offers it first.
// The others leave it alone for a grace period (the offer timeout):
// - when the origin cannot place it (no eligible worker with a free slot here), it says so
//   ("dispatch.unplaced"), and the others may offer it at once, or when a slot of theirs frees;
// - a server that offers a task another server queued, or one it said it could not place, says so
//   ("dispatch.offered"), and the others leave it alone until that offer expires;
// - a scan of the queue (a worker's slot freed) takes the tasks this server queued before those
//   another server could not place, so that with a backlog two servers rarely reach for the same;
// - after the grace period anyone may offer it (the origin died, or a notice was lost);
// - a queued task a server has heard nothing of (its scan of the queue read it before the origin's
//   notice arrived) is left alone while it is younger than NOTICE_WINDOW_MS (or the grace, if
//   shorter); an older one was queued before this server started, and anyone may offer it.
// Claims stay exactly-once whatever this decides (the claim is a conditional write): this only
// keeps servers from offering the same task at the same time. Nothing here runs on SQLite.
import type { Core } from "../../server/core";

/** A queued task another server is dealing with: since when (ms), and whether it said it could not place it. */
interface Theirs {
  since: number;
  unplaced: boolean;
}

/** What a dispatch notice carries: task, org, sending server, and for an offer the ms it has left (not a time: clocks differ). */
export type DispatchNotice = { t: string; o: string; from: string; x?: number };

/** How long a task another server queued may take to be heard of here. */
const NOTICE_WINDOW_MS = 2000;

/** How many graces (offer timeouts) a queued task is remembered for. */
const KEPT_GRACES = 10;

export const UNPLACED = "dispatch.unplaced";
export const OFFERED = "dispatch.offered";

export class OfferPeers {
  /** Queued tasks another server queued. */
  private readonly theirs = new Map<string, Theirs>();
  /** Tasks another server has offered: until when (ms). */
  private readonly offeredThere = new Map<string, number>();
  /** Queued tasks this server queued: since when (ms), and whether it told the others it could not place it. */
  private readonly mine = new Map<string, { since: number; told: boolean }>();

  constructor(private readonly core: Core) {}

  private get graceMs() {
    return this.core.config.workerTimeouts.offerMs;
  }

  /** Another server queued the task: it offers it first. A notice heard before is kept (it is newer news). */
  queuedThere(taskId: string) {
    if (!this.theirs.has(taskId)) this.theirs.set(taskId, { since: Date.now(), unplaced: false });
  }

  /** This server queued the task (created it, or put it back in the queue). */
  queuedHere(taskId: string) {
    this.left(taskId);
    this.mine.set(taskId, { since: Date.now(), told: false });
  }

  /** The task left the queue: nothing to remember. */
  left(taskId: string) {
    this.theirs.delete(taskId);
    this.offeredThere.delete(taskId);
    this.mine.delete(taskId);
  }

  /**
   * True while another server deals with the task: it is not offered here. `queuedAt` (the row's
   * updated_at, when read from the queue) dates a task nothing was heard of.
   */
  dealtWithThere(taskId: string, queuedAt?: string, now = Date.now()): boolean {
    const theirs = this.theirs.get(taskId);
    if (theirs && !theirs.unplaced && now - theirs.since < this.graceMs) return true;
    // An expired entry is left to the sweep.
    const until = this.offeredThere.get(taskId);
    if (until !== undefined && now < until) return true;
    if (theirs || queuedAt === undefined || this.mine.has(taskId)) return false;
    return now - Date.parse(queuedAt) < Math.min(NOTICE_WINDOW_MS, this.graceMs);
  }

  /** Whether another server may offer the task too (it queued it, or was told): an offer of it here is told to the others. */
  isShared(taskId: string): boolean {
    return this.theirs.has(taskId) || this.mine.get(taskId)?.told === true;
  }

  /** A page of the queue with the tasks another server queued last (otherwise in its order). */
  ownFirst<T extends { id: string }>(rows: T[]): T[] {
    if (this.theirs.size === 0) return rows;
    const own = rows.filter((r) => !this.theirs.has(r.id));
    return own.length === rows.length ? rows : [...own, ...rows.filter((r) => this.theirs.has(r.id))];
  }

  /** Another server could not place the task: any server may offer it now. */
  heardUnplaced(taskId: string) {
    this.offeredThere.delete(taskId);
    const theirs = this.theirs.get(taskId);
    if (theirs) theirs.unplaced = true;
    else this.theirs.set(taskId, { since: Date.now(), unplaced: true });
  }

  heardOffered(taskId: string, leftMs: number) {
    this.offeredThere.set(taskId, Date.now() + leftMs);
  }

  /**
   * The monitor's sweep: forgets tasks queued more than KEPT_GRACES graces ago (one may have left
   * the queue unheard). Kept that long, past their grace, because with a backlog who queued a task
   * and who said what of it still orders the scans and the "offered" notices.
   */
  sweep(now = Date.now()) {
    const keptMs = this.graceMs * KEPT_GRACES;
    for (const [taskId, theirs] of this.theirs) if (now - theirs.since >= keptMs) this.theirs.delete(taskId);
    for (const [taskId, until] of this.offeredThere) if (now >= until) this.offeredThere.delete(taskId);
    for (const [taskId, { since }] of this.mine) if (now - since >= keptMs) this.mine.delete(taskId);
  }

  /** Notices may have been lost (the bus reconnected): every queued task is anyone's. */
  clear() {
    this.theirs.clear();
    this.offeredThere.clear();
    this.mine.clear();
  }

  tellUnplaced(taskId: string, orgId: string) {
    const mine = this.mine.get(taskId);
    if (mine) mine.told = true;
    this.core.bus.publish(UNPLACED, { t: taskId, o: orgId, from: this.core.instanceId });
  }

  tellOffered(taskId: string, orgId: string, leftMs: number) {
    this.core.bus.publish(OFFERED, { t: taskId, o: orgId, x: leftMs, from: this.core.instanceId });
  }

  /** Hears the other servers' notices; returns the removal. */
  listen(handlers: { unplaced(n: DispatchNotice): void; offered(n: DispatchNotice): void }): () => void {
    const me = this.core.instanceId;
    const valid = (n: DispatchNotice) => !!n && n.from !== me && typeof n.t === "string" && typeof n.o === "string";
    const offs = [
      this.core.bus.on(UNPLACED, (n: DispatchNotice) => valid(n) && handlers.unplaced(n)),
      this.core.bus.on(OFFERED, (n: DispatchNotice) => valid(n) && typeof n.x === "number" && handlers.offered(n)),
    ];
    return () => offs.forEach((off) => off());
  }
}
