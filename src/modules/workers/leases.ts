// What a worker may do to a task: claim an offer (atomic, BEGIN IMMEDIATE), then, fenced by the
// lease of that attempt, report transitions and append events. A write carrying another
// attempt's lease is refused with 409 and changes nothing.
import type { Core } from "../../server/core";
import { ApiError, conflict, forbidden, invalid, isStorageFull, notFound } from "../../server/errors";
import { iso } from "../../lib/time";
import { constantTimeEqual, randomSecret, sha256Hex } from "../../lib/tokens";
import { TERMINAL, WORKER_TRANSITIONS, workerMayTransition } from "../tasks/machine";
import type { TaskRow } from "../tasks/record";
import { findTask, type Decision, type EventInput, type TaskPatch } from "../tasks/store";
import { changeTaskBatched } from "../tasks/batch";
import { parsePlan } from "../tasks/plan";
import { interruptedCalls } from "../tasks/interrupted";
import { emitTaskCompletedWithBranch } from "../tasks/results";
import type { TaskStatus } from "../../db/schema";
import { LEASE_HEADER, type ClaimResult, type EventsRequest, type RepositoryInfo, type TransitionRequest, type UsageReport } from "../../protocol/requests";
import { recordUsage, taskBudget, taskUsage } from "../usage/service";
import { dailyBudgetsOf } from "../usage/budgets";
import { dispatcherOf } from "./dispatcher";
import { projectCached } from "../projects/cache";
import { personOf, type Person } from "../auth/people";
import type { WorkerRow } from "./registry";
import { all, get, type Q } from "../../db/query";

/** Largest `data` of one worker event, serialised. */
export const MAX_EVENT_BYTES = 256 * 1024;

const staleLease = () => conflict("the lease is not the current attempt's: this write was not applied", { reason: "stale_lease" });

const PROJECT = "SELECT id, name, knowledge, policy FROM projects WHERE id = ?";
const REPOSITORIES = "SELECT id, url, name, branch, is_primary FROM repositories WHERE project_id = ? ORDER BY is_primary DESC, id ASC";
const CREATOR_OF_TASK = "SELECT created_by_type, created_by_id FROM tasks WHERE id = ?";
const PRIMARY_REPOSITORY = "SELECT id FROM repositories WHERE project_id = ? ORDER BY is_primary DESC, id ASC LIMIT 1";
const SEEN_SEQS = "SELECT worker_seq FROM task_events WHERE task_id = ? AND attempt = ? AND worker_seq BETWEEN ? AND ?";

/** The worker as the actor of the events it causes (not of its log lines: the record names the attempt's worker). */
export const workerActor = (worker: WorkerRow) => ({ type: "worker", id: worker.id }) as const;

function checkLease(row: TaskRow, worker: WorkerRow, leaseToken: string) {
  if (row.worker_id !== worker.id || !row.lease_token_hash || !constantTimeEqual(row.lease_token_hash, sha256Hex(leaseToken))) throw staleLease();
}

/** The project a claim carries. Cached (projects/cache.ts: a hit reads nothing); each claim gets its own copy to serialise. */
export function* projectForWorker(core: Core, projectId: string): Q<ClaimResult["project"]> {
  const key = `claim:${projectId}`;
  // projectCached with a null load only looks (misses are not cached).
  let json = projectCached<string>(core, key, () => null);
  if (!json) {
    const p = (yield* get<{ id: string; name: string; knowledge: string; policy: string }>(PROJECT, projectId))!;
    const repositories: RepositoryInfo[] = (yield* all<{ id: string; url: string; name: string; branch: string; is_primary: number }>(REPOSITORIES, projectId)).map(
      (r) => ({ id: r.id, url: r.url, name: r.name, branch: r.branch, primary: r.is_primary === 1 }),
    );
    const fresh = JSON.stringify({ id: p.id, name: p.name, knowledge: p.knowledge, policy: JSON.parse(p.policy) as Record<string, unknown>, repositories });
    projectCached(core, key, () => fresh);
    json = fresh;
  }
  return JSON.parse(json) as ClaimResult["project"];
}

/**
 * The person behind a task, for the co-author line of its commit: the user, a token's owner, or
 * for a task a plan proposed, whoever made the plan. Integrations have no person.
 */
function* creatorOf(core: Core, type: string, id: string): Q<Person | null> {
  // plans propose plans: a few levels up at most, never a loop
  for (let depth = 0; depth < 5; depth++) {
    const person = type === "user" || type === "token" ? yield* personOf(core, type, id) : null;
    if (person) return person;
    if (type !== "plan") return null;
    const parent = yield* get<{ created_by_type: string; created_by_id: string }>(CREATOR_OF_TASK, id);
    if (!parent) return null;
    ({ created_by_type: type, created_by_id: id } = parent);
  }
  return null;
}

/** Claims an offered task: queued -> running with attempt + 1 and a new lease, or 409. */
export async function claimTask(core: Core, worker: WorkerRow, taskId: string, offerId: string): Promise<ClaimResult> {
  const dispatcher = dispatcherOf(core);
  // An offer names a task of the worker's org, so a taken offer answers "the task exists": the
  // task is read only to tell 404 from 403 and 409 when there is none.
  const offer = worker.approved_at ? dispatcher.takeOffer(offerId, worker.id, taskId) : null;
  if (!offer) {
    if (!(await core.store.read(findTask(core, worker.org_id, taskId)))) throw notFound("task");
    if (!worker.approved_at) throw forbidden("this worker awaits approval and takes no work yet");
    throw conflict("no such offer for this worker and task (expired, taken or never made)", { reason: "no_offer" });
  }
  const leaseToken = randomSecret(43);
  // On SQLite the claim's details are read inside its transaction: a read of its own after the
  // commit opened a read transaction just for them (7% of the server's time in bench/vs-bullmq.ts).
  // On PostgreSQL they are read after the commit, so the row's lock is not held for a round trip more.
  const readInside = core.sqlite !== null;
  let details: ClaimDetails | undefined;
  let change;
  try {
    change = await changeTaskBatched(core, worker.org_id, taskId, function* (row) {
      if (row.status !== "queued" || row.attempt + 1 !== offer.attempt) throw conflict("the task is no longer queued for this attempt", { reason: "taken", status: row.status });
      if (readInside) details = yield* claimDetails(core, { ...row, attempt: offer.attempt });
      const patch: TaskPatch = {
        status: "running",
        attempt: offer.attempt,
        worker_id: worker.id,
        lease_token_hash: sha256Hex(leaseToken),
        started_at: iso(),
        finished_at: null,
        needs: null,
        paused_from: null,
      };
      return { patch, events: [{ type: "status", actor: workerActor(worker), data: { from: "queued", to: "running", attempt: offer.attempt, workerId: worker.id } }] };
    });
  } catch (err) {
    dispatcher.claimSettled(taskId);
    if (isStorageFull(err)) dispatcher.pauseForStorage();
    // The slot the offer held is free again, and the task may still be queued without an offer.
    dispatcher.mayHaveUnoffered(worker.org_id);
    const conn = dispatcher.conns.get(worker.id);
    if (conn) await dispatcher.background("refill after a failed claim", dispatcher.fill(conn));
    throw err;
  }
  // Committed: the task left the queue (the change's listeners ran before this continuation).
  dispatcher.claimSettled(taskId);
  dispatcher.storageWorks();
  core.metrics.claims.inc();
  const t = change.after;
  const { project, createdBy, budget } = details ?? (await core.store.read(claimDetails(core, t)));
  return {
    attempt: t.attempt,
    leaseToken,
    runMode: t.run_mode,
    task: {
      id: t.id,
      projectId: t.project_id,
      title: t.title,
      prompt: t.prompt,
      kind: t.kind,
      priority: t.priority,
      review: t.review ? (JSON.parse(t.review) as { base: string; head: string }) : null,
      agent: t.agent,
      createdBy,
    },
    project,
    budget,
  };
}

type ClaimDetails = Pick<ClaimResult, "project" | "budget"> & { createdBy: ClaimResult["task"]["createdBy"] };

function* claimDetails(core: Core, t: TaskRow): Q<ClaimDetails> {
  const project = yield* projectForWorker(core, t.project_id);
  return { project, createdBy: yield* creatorOf(core, t.created_by_type, t.created_by_id), budget: yield* taskBudget(core, t, project.policy, t.attempt) };
}

function invalidTransition(from: TaskStatus, to: string) {
  return new ApiError(409, "invalid_transition", `a worker cannot move a task from ${from} to ${to}`, {
    status: from,
    allowed: WORKER_TRANSITIONS[from] ?? [],
  });
}

/** A worker reports where its attempt went (through WORKER_TRANSITIONS). Repeating a terminal report is a no-op. */
export async function transitionTask(core: Core, worker: WorkerRow, taskId: string, req: TransitionRequest) {
  const change = await changeTaskBatched(core, worker.org_id, taskId, (row) => {
    checkLease(row, worker, req.leaseToken);
    // A budget question reads the costs, an end the calls left open (in the same transaction); any other report decides from the row.
    if (req.needs?.kind === "budget") return budgetTransition(core, worker, row, req);
    return TERMINAL.has(req.to) ? endingTransition(worker, row, req) : decideTransition(worker, row, req, null);
  });
  // After the commit: a pushed branch is a result the code-hosting app turns into a pull request.
  const changes = req.changes;
  const completedNow = change.before?.status !== "completed" && change.after.status === "completed";
  if (completedNow && changes?.pushed && changes.branch) {
    const repository = await core.store.read(get<{ id: string }>(PRIMARY_REPOSITORY, change.after.project_id));
    if (repository)
      emitTaskCompletedWithBranch(
        {
          orgId: change.after.org_id,
          projectId: change.after.project_id,
          taskId: change.after.id,
          repositoryId: repository.id,
          branch: changes.branch,
          base: changes.base,
          commit: changes.commit,
        },
        core,
      );
  }
  return { status: change.after.status, attempt: change.after.attempt };
}

/** What a budget question records: what the task cost so far and the allowance it passed, as the server counts them. */
interface BudgetSoFar {
  costUsd: number;
  allowanceUsd: number | null;
}

/** A budget question: the costs are read inside the transaction of the change. */
function* budgetTransition(core: Core, worker: WorkerRow, row: TaskRow, req: TransitionRequest): Q<Decision> {
  const project = (yield* get<{ policy: string }>(PROJECT, row.project_id))!;
  const budget = yield* taskBudget(core, row, JSON.parse(project.policy), row.attempt);
  const costUsd = (yield* taskUsage(core, row.id))?.costUsd ?? 0;
  return decideTransition(worker, row, req, { costUsd, allowanceUsd: budget?.allowanceUsd ?? null });
}

/**
 * A report that ends the attempt (completed, failed): the calls it left open, its agent gone
 * mid-call, will never report, so they are closed before the status event. A repeat closes none.
 */
function* endingTransition(worker: WorkerRow, row: TaskRow, req: TransitionRequest): Q<Decision> {
  const closed = row.status === req.to ? [] : yield* interruptedCalls(row, `stopped: the attempt ${req.to}`);
  return decideTransition(worker, row, req, null, closed);
}

/** The change a worker's report makes to the row (its lease checked); `budget` for a budget question, `closed` the calls it ends. */
function decideTransition(worker: WorkerRow, row: TaskRow, req: TransitionRequest, budget: BudgetSoFar | null, closed: EventInput[] = []): Decision {
  if (row.status === req.to && TERMINAL.has(row.status)) return { events: [] };
  if (!workerMayTransition(row.status, req.to)) throw invalidTransition(row.status, req.to);
  const patch: TaskPatch = { status: req.to };
  const events: EventInput[] = [];
  const status: Record<string, unknown> = { from: row.status, to: req.to, attempt: row.attempt };
  if (req.to === "needs_input" || req.to === "needs_approval") {
    if (!req.needs) throw invalid(`moving to ${req.to} needs needs.message`, [{ field: "needs", message: "required with this target" }]);
    if (req.needs.kind === "budget" && req.to !== "needs_approval") {
      throw invalid("a budget question goes with needs_approval", [{ field: "needs.kind", message: `only with to = needs_approval; to is ${req.to}` }]);
    }
    const needs = req.needs.kind === "budget" ? { kind: "budget", message: req.needs.message, ...budget } : { kind: req.to === "needs_input" ? "input" : "approval", message: req.needs.message };
    patch.needs = JSON.stringify(needs);
    status.needs = needs;
  } else {
    if (req.needs) throw invalid(`needs goes with needs_input or needs_approval, not ${req.to}`, [{ field: "needs", message: `only with to = needs_input or needs_approval; to is ${req.to}` }]);
    patch.needs = null;
  }
  if (req.plan) {
    if (row.kind !== "plan") throw invalid("only a plan task reports a plan", [{ field: "plan", message: "not a plan task" }]);
    if (req.to !== "completed") throw invalid("a plan is reported with to = completed", [{ field: "plan", message: "only with completed" }]);
    // The same rules apply-plan uses, so a completed plan can always be applied (400 here otherwise).
    const plan = parsePlan(req.plan);
    patch.plan = JSON.stringify(plan);
    status.plan = plan;
  } else if (row.kind === "plan" && req.to === "completed") {
    throw invalid("a plan task completes with its plan", [{ field: "plan", message: "required to complete a plan task" }]);
  }
  if (req.changes) {
    if (row.kind !== "task") throw invalid("only an ordinary task reports changes", [{ field: "changes", message: `not with a ${row.kind} task` }]);
    if (req.to !== "completed") throw invalid("changes are reported with to = completed", [{ field: "changes", message: "only with completed" }]);
    if (req.changes.branch !== null && req.changes.branch !== `ao/${row.id}`)
      throw invalid("a task's branch is ao/<taskId>", [{ field: "changes.branch", message: `must be ao/${row.id} or null` }]);
    patch.changes = JSON.stringify(req.changes);
    status.changes = req.changes;
  }
  // Also in the event: a later attempt clears the record's, the timeline keeps each attempt's.
  if (req.summary !== undefined) patch.summary = status.summary = req.summary;
  if (req.to === "completed" || req.to === "failed") {
    patch.finished_at = iso();
    patch.paused_from = null;
  }
  if (req.error !== undefined) events.push({ type: "error", actor: workerActor(worker), attempt: row.attempt, data: { message: req.error, attempt: row.attempt } });
  events.push(...closed, { type: "status", actor: workerActor(worker), data: status });
  return { patch, events };
}

/** Records the attempt's cumulative usage (lease-fenced; not once the attempt has ended). */
export async function reportUsage(core: Core, worker: WorkerRow, taskId: string, req: UsageReport) {
  const recorded = await core.store.write(recordUsage(core, taskId, req.usage, (row) => {
    if (row.org_id !== worker.org_id) throw notFound("task");
    checkLease(row, worker, req.leaseToken);
    if (TERMINAL.has(row.status)) throw conflict(`the attempt has ended (${row.status})`, { reason: "ended", status: row.status });
  }));
  if (recorded.added > 0) dailyBudgetsOf(core).added(worker.org_id, recorded.projectId, recorded.day, recorded.added);
  return { costUsd: recorded.costUsd };
}

/** Appends an attempt's events; a seq already written for this attempt is skipped (resends are safe). */
export async function appendEvents(core: Core, worker: WorkerRow, taskId: string, req: EventsRequest) {
  let low = Infinity;
  let high = -Infinity;
  req.events.forEach((e, i) => {
    const size = JSON.stringify(e.data ?? null).length;
    if (size > MAX_EVENT_BYTES) throw invalid("an event is too large", [{ field: `events.${i}.data`, message: `at most ${MAX_EVENT_BYTES} bytes` }]);
    if (e.seq < low) low = e.seq;
    if (e.seq > high) high = e.seq;
  });
  const change = await changeTaskBatched(core, worker.org_id, taskId, (row) => {
    checkLease(row, worker, req.leaseToken);
    if (TERMINAL.has(row.status)) throw conflict(`the attempt has ended (${row.status})`, { reason: "ended", status: row.status });
    return req.events.length > 0 ? unseenEvents(row, req, low, high) : { events: [] };
  });
  return { written: change.events.length, duplicates: req.events.length - change.events.length };
}

/** The events whose seq this attempt has not written yet, read inside the transaction of the change. */
function* unseenEvents(row: TaskRow, req: EventsRequest, low: number, high: number): Q<Decision> {
  // The seqs of this attempt already written within the batch's range, in one read.
  const seen = new Set((yield* all<{ worker_seq: number }>(SEEN_SEQS, row.id, row.attempt, low, high)).map((r) => r.worker_seq));
  const events: EventInput[] = [];
  for (const e of req.events) {
    if (seen.has(e.seq)) continue;
    seen.add(e.seq);
    events.push({ type: e.type, data: e.data ?? null, attempt: row.attempt, workerSeq: e.seq });
  }
  return { events };
}

/** Checks the lease of an upload before its body is read (the upload itself is storeArtifact's). */
export async function leaseForUpload(core: Core, worker: WorkerRow, taskId: string, leaseToken: string | null): Promise<TaskRow> {
  const row = await core.store.read(findTask(core, worker.org_id, taskId));
  if (!row) throw notFound("task");
  // No lease at all is a request that lacks a part, not another attempt's write.
  if (!leaseToken) throw invalid(`the ${LEASE_HEADER} header is required: the lease of the attempt`, [{ field: LEASE_HEADER, message: "required" }]);
  checkLease(row, worker, leaseToken);
  if (TERMINAL.has(row.status)) throw conflict(`the attempt has ended (${row.status})`, { reason: "ended", status: row.status });
  return row;
}
