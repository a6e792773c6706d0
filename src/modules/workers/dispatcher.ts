// The dispatcher: which queued task is offered to whom. In memory per server instance, over its
// bookkeeping of connections, offers and claims (dispatcher-state.ts); the database stays the
// truth about tasks (a claim is the atomic step), so losing this state costs only a re-offer.
//
// Offers go to approved, connected workers with a free slot (capacity - held - offered), by
// priority then age, to workers eligible for the task (eligibility.ts: labels, policy and the
// agent it names), never for a project over its daily budget (usage/budgets.ts).
// Messages for a worker (controls, clone, readiness) go through its mailbox (mailbox.ts). With
// several servers, the server that queued a task offers it first (dispatcher-peers.ts).
import type { Core } from "../../server/core";
import { all, get, pure, type Q } from "../../db/query";
import { randomSecret } from "../../lib/tokens";
import { iso } from "../../lib/time";
import { PRIORITY_RANK, type TaskRow } from "../tasks/record";
import type { TaskBefore } from "../tasks/store";
import type { Offer } from "../../protocol/messages";
import { eligible, requiredLabels } from "./eligibility";
import { dailyBudgetsOf, type DailyBudgets } from "../usage/budgets";
import { DispatcherState, isHeld, type Conn, type OfferState } from "./dispatcher-state";
import { OfferPeers, type DispatchNotice } from "./dispatcher-peers";

type QueuedRow = Pick<TaskRow, "id" | "org_id" | "project_id" | "attempt" | "priority_rank" | "agent" | "updated_at">;

const COLUMNS = "id, org_id, project_id, attempt, priority_rank, agent, updated_at";
// One priority of an org's queue, oldest first, from the index alone (tasks_queue). The queue is
// read a rank at a time, highest first, because no index serves ORDER BY rank DESC, id ASC whole
// and a sort reads every queued task (2 ms per task with 15,000 queued, bench/vs-bullmq.ts drain).
// Ids first: the head of the queue is mostly tasks with an offer or a claim on its way, whose rows
// are not needed.
const QUEUED_IDS_IN_RANK = "SELECT id FROM tasks WHERE status = 'queued' AND org_id = ? AND priority_rank = ? AND id > ? ORDER BY id LIMIT ?";
const QUEUED_ROW = `SELECT ${COLUMNS} FROM tasks WHERE status = 'queued' AND id = ?`;
// From the ids to the rows (a key lookup each, on both databases); json_each has an id column too.
const QUEUED_ROWS = `SELECT t.id, t.org_id, t.project_id, t.attempt, t.priority_rank, t.agent, t.updated_at
  FROM json_each(?) AS j JOIN tasks AS t ON t.id = j.value WHERE t.status = 'queued'`;
const TOP_RANK = Math.max(...Object.values(PRIORITY_RANK));
const ANY_QUEUED = "SELECT 1 AS one FROM tasks WHERE status = 'queued' AND org_id = ? LIMIT 1";
const TASK = `SELECT ${COLUMNS}, status FROM tasks WHERE id = ?`;

/** How long a worker that declined an offer is left out of offers. */
const DECLINE_PAUSE_MS = 1000;

/** How many places of the queue one pass looks at for one worker (the rest wait for the next pass). */
const SCAN_LIMIT = 500;

/** How many places of the queue a page reads at most. */
const PAGE = 100;

export class Dispatcher extends DispatcherState {
  private readonly budgets: DailyBudgets;
  /** The other servers' part in offers (several servers on PostgreSQL); null on SQLite. */
  private readonly peers: OfferPeers | null;
  private readonly unlisten: () => void;

  constructor(core: Core) {
    super(core);
    this.budgets = dailyBudgetsOf(core);
    this.peers = core.sqlite === null ? new OfferPeers(core) : null;
    this.unlisten = this.peers?.listen({
      unplaced: (n) => void this.background("offering a task another server could not place", this.heardUnplaced(n)),
      offered: (n) => this.peers!.heardOffered(n.t, n.x!),
    }) ?? (() => {});
  }

  /** Another server could not place a task it queued: offered here if a worker has a free slot, or when one frees. */
  private *heardUnplaced(notice: DispatchNotice): Q<void> {
    this.peers!.heardUnplaced(notice.t);
    this.unoffered(notice.o);
    const row = yield* get<QueuedRow & { status: string }>(TASK, notice.t);
    if (row && row.status === "queued") yield* this.offerTask(row, undefined, true);
  }

  /** Notices may have been lost while the bus was down: every queued task is anyone's to offer. */
  forgetPeers() {
    this.peers?.clear();
  }

  override close() {
    this.unlisten();
    super.close();
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
    if (this.peers?.isShared(task.id)) this.peers.tellOffered(task.id, task.org_id, offerMs);
    return true;
  }

  /**
   * Offers one queued task to the best eligible worker: the most free slots, then the longest
   * without an offer. With several servers, a task this server could not place is announced, so
   * that the others offer it (unless `heard`: the attempt answers such a notice).
   */
  *offerTask(task: QueuedRow, avoidWorkerId?: string, heard = false): Q<boolean> {
    if (this.offerByTask.has(task.id) || this.claiming.has(task.id) || this.peers?.dealtWithThere(task.id, task.updated_at)) return true;
    if (yield* this.place(task, avoidWorkerId)) return true;
    this.unoffered(task.org_id);
    if (this.peers && !heard) this.peers.tellUnplaced(task.id, task.org_id);
    return false;
  }

  private *place(task: QueuedRow, avoidWorkerId?: string): Q<boolean> {
    const candidates = this.byOrg.get(task.org_id);
    if (!candidates || candidates.size === 0 || (yield* this.budgets.over(task.project_id))) return false;
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
    return !!target && this.makeOffer(target, task);
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
    // The first page is what the worker has room for plus the tasks an offer or a claim is on its
    // way for (those are skipped), and it ends at as many others as the worker has room for: a
    // slot freed with a backlog reads a few ids and one row, not a page of 100 rows. The pages
    // after it (the worker could not take those) are whole; with several servers the first one is
    // whole too, so that the tasks this server queued come first in it (ownFirst).
    const taken = (id: string) => this.offerByTask.has(id) || this.claiming.has(id);
    const firstSize = Math.min(PAGE, this.free(conn) + this.offerByTask.size + this.claiming.size);
    let page = yield* queuePage(conn.orgId, null, firstSize, this.peers ? PAGE : this.free(conn), taken);
    let scanned = 0;
    let unoffered = 0;
    while (this.free(conn) > 0 && scanned < SCAN_LIMIT) {
      scanned += page.seen;
      // With several servers, the tasks another server queued come last in each page.
      for (const row of this.peers ? this.peers.ownFirst(page.rows) : page.rows) {
        if (taken(row.id) || this.peers?.dealtWithThere(row.id, row.updated_at)) continue;
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
      if (page.ended) {
        // The whole queue was seen: with nothing left unoffered, freed slots need no scan.
        if (unoffered === 0 && epoch === this.unofferedEpoch) this.allOffered.add(conn.orgId);
        return;
      }
      page = yield* queuePage(conn.orgId, page.last, PAGE, PAGE, taken);
    }
  }

  /** Safety net: every worker with a free slot gets a look at its org's queue (one probe per org). */
  *fillAll(): Q<void> {
    this.peers?.sweep();
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
   * A task another server queued is left to it first (dispatcher-peers.ts).
   */
  *onTaskChanged(before: TaskBefore | null, after: TaskRow, elsewhere = false): Q<void> {
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
    if (after.status !== "queued") {
      this.voidOfferFor(after.id);
      this.peers?.left(after.id);
    } else if (before?.status !== "queued" || before.attempt !== after.attempt) {
      if (elsewhere) this.peers?.queuedThere(after.id);
      else this.peers?.queuedHere(after.id);
      yield* this.offerTask(after, undefined, elsewhere);
    }
  }
}

type QueuePlace = Pick<QueuedRow, "priority_rank" | "id">;

/**
 * The next places of the org's queue after `after` (from the top without it), by priority, highest
 * first, then oldest first: up to `limit` of them, or up to the `want`-th one not `taken`. Returns
 * the rows of those not taken (still queued when read) in order, how many places were seen, the
 * last one, and whether the queue ended there.
 */
export function* queuePage(orgId: string, after: QueuePlace | null, limit: number, want: number, taken: (id: string) => boolean): Q<QueuePage> {
  const ids: string[] = [];
  let seen = 0;
  let last = after;
  let from = after?.id ?? "";
  for (let rank = after?.priority_rank ?? TOP_RANK; rank >= 0; rank--, from = "") {
    const ask = limit - seen;
    const found = yield* all<{ id: string }>(QUEUED_IDS_IN_RANK, orgId, rank, from, ask);
    for (const { id } of found) {
      seen++;
      last = { priority_rank: rank, id };
      if (!taken(id) && ids.push(id) >= want) return yield* pageOf(ids, seen, last, false);
    }
    // As many as asked: the rank may hold more.
    if (found.length === ask) return yield* pageOf(ids, seen, last, false);
  }
  return yield* pageOf(ids, seen, last, true);
}

interface QueuePage {
  rows: QueuedRow[];
  seen: number;
  last: QueuePlace | null;
  ended: boolean;
}

function* pageOf(ids: string[], seen: number, last: QueuePlace | null, ended: boolean): Q<QueuePage> {
  if (ids.length === 0) return { rows: [], seen, last, ended };
  const found = ids.length === 1 ? yield* all<QueuedRow>(QUEUED_ROW, ids[0]) : yield* all<QueuedRow>(QUEUED_ROWS, JSON.stringify(ids));
  const byId = new Map(found.map((r) => [r.id, r]));
  return { rows: ids.flatMap((id) => byId.get(id) ?? []), seen, last, ended };
}

const dispatchers = new WeakMap<Core, Dispatcher>();

export function dispatcherOf(core: Core): Dispatcher {
  let d = dispatchers.get(core);
  if (!d) dispatchers.set(core, (d = new Dispatcher(core)));
  return d;
}
