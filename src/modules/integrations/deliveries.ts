// The delivery log of a callback target (each delivery with its recent tries, one delivery with
// its kept history and body), and redelivery with the same delivery id.
import type { Core } from "../../server/core";
import { ApiError, notFound } from "../../server/errors";
import { iso } from "../../lib/time";
import { pageOf, type Page } from "../orgs/paging";
import { all, get, run, type Q } from "../../db/query";
import type { DeliveriesQuery, DeliveryDetail, DeliveryRecord, DeliveryTry } from "./model";
import { DELIVERY_TRIES_KEPT } from "./relay";
import { getIntegration } from "./service";
import { pluginId } from "./plugins";

/** Tries shown with each delivery of a list; the delivery itself shows all that are kept. */
export const RECENT_TRIES_LISTED = 5;

interface DeliveryRow {
  id: string;
  target_type: "integration" | "plugin";
  target_id: string;
  task_id: string;
  event: DeliveryRecord["event"];
  status: DeliveryRecord["status"];
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  last_latency_ms: number | null;
  next_attempt_at: number;
  last_attempt_at: string | null;
  delivered_at: string | null;
  created_at: string;
  updated_at: string;
}

const COLUMNS = `id, target_type, target_id, task_id, event, status, attempts, last_status_code, last_error, last_latency_ms,
  next_attempt_at, last_attempt_at, delivered_at, created_at, updated_at`;

interface TryRow {
  delivery_id: string;
  attempt: number;
  at: string;
  outcome: DeliveryTry["outcome"];
  status_code: number | null;
  error: string | null;
  latency_ms: number | null;
}

const TRY_COLUMNS = "delivery_id, attempt, at, outcome, status_code, error, latency_ms";

const toTry = (row: TryRow): DeliveryTry => ({
  attempt: row.attempt,
  at: row.at,
  outcome: row.outcome,
  statusCode: row.status_code,
  error: row.error,
  latencyMs: row.latency_ms,
});

// The newest tries of each delivery named (a JSON list of ids), at most the second parameter each.
const TRIES = `SELECT ${TRY_COLUMNS} FROM (
    SELECT ${TRY_COLUMNS}, row_number() OVER (PARTITION BY delivery_id ORDER BY attempt DESC) AS n
      FROM delivery_tries WHERE delivery_id IN (SELECT value FROM json_each(?))) AS ranked
  WHERE n <= ? ORDER BY delivery_id, attempt DESC`;

/** The newest `perDelivery` tries of each delivery named, newest first. */
function* triesOf(deliveryIds: string[], perDelivery: number): Q<Map<string, DeliveryTry[]>> {
  const byDelivery = new Map<string, DeliveryTry[]>(deliveryIds.map((id) => [id, []]));
  if (deliveryIds.length === 0) return byDelivery;
  const rows = yield* all<TryRow>(TRIES, JSON.stringify(deliveryIds), perDelivery);
  for (const row of rows) byDelivery.get(row.delivery_id)?.push(toTry(row));
  return byDelivery;
}

function toRecord(row: DeliveryRow, recentTries: DeliveryTry[]): DeliveryRecord {
  return {
    id: row.id,
    targetType: row.target_type,
    targetId: row.target_id,
    taskId: row.task_id,
    event: row.event,
    status: row.status,
    attempts: row.attempts,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    latencyMs: row.last_latency_ms,
    nextAttemptAt: row.status === "pending" ? iso(row.next_attempt_at) : null,
    lastAttemptAt: row.last_attempt_at,
    deliveredAt: row.delivered_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    recentTries,
  };
}

/** A page's statement: with the status filter or not, from the start or after a key (four texts, made once). */
const pageSql = (byStatus: boolean, after: boolean) =>
  `SELECT ${COLUMNS} FROM deliveries WHERE org_id = ? AND target_id = ?${byStatus ? " AND status = ?" : ""}${after ? " AND id < ?" : ""} ORDER BY id DESC LIMIT ?`;
const PAGES = [false, true].map((byStatus) => [false, true].map((after) => pageSql(byStatus, after)));
const ONE = `SELECT ${COLUMNS} FROM deliveries WHERE id = ? AND org_id = ? AND target_id = ?`;
const ONE_WITH_BODY = `SELECT ${COLUMNS}, payload FROM deliveries WHERE id = ? AND org_id = ? AND target_id = ?`;
// Never a row in flight: its try's result would overwrite the new round.
const REDELIVER = "UPDATE deliveries SET status = 'pending', round_attempts = 0, next_attempt_at = ?, updated_at = ? WHERE id = ? AND status <> 'delivering'";

/** Whose delivery log: an integration of the org, or the org's completion webhook. */
export type LogOwner = { integrationId: string } | "completion_webhook";

/** The target id of the owner's deliveries, once the owner is known to be the org's (404 otherwise). */
function* targetOf(core: Core, orgId: string, owner: LogOwner): Q<string> {
  if (owner === "completion_webhook") return yield* pluginId(core, orgId);
  yield* getIntegration(core, orgId, owner.integrationId);
  return owner.integrationId;
}

function deliveriesAfter(orgId: string, targetId: string, status: string | null, after: string[] | null, n: number): Q<DeliveryRow[]> {
  const sql = PAGES[status === null ? 0 : 1]![after === null ? 0 : 1]!;
  return all<DeliveryRow>(sql, orgId, targetId, ...(status === null ? [] : [status]), ...(after === null ? [] : [after[0]]), n);
}

/** Deliveries to one target of the org, newest first; only those in `q.status` when given. */
export function* listDeliveries(core: Core, orgId: string, owner: LogOwner, q: DeliveriesQuery): Q<Page<DeliveryRecord>> {
  const targetId = yield* targetOf(core, orgId, owner);
  const status = q.status ?? null;
  const page = yield* pageOf(q, 1, (after, n) => deliveriesAfter(orgId, targetId, status, after, n), (row) => [row.id], (row) => row);
  const tries = yield* triesOf(page.items.map((row) => row.id), RECENT_TRIES_LISTED);
  return { items: page.items.map((row) => toRecord(row, tries.get(row.id)!)), nextCursor: page.nextCursor };
}

/** One delivery of the target with its kept tries (the last 20) and the body it sends. */
export function* getDelivery(core: Core, orgId: string, owner: LogOwner, deliveryId: string): Q<DeliveryDetail> {
  const targetId = yield* targetOf(core, orgId, owner);
  const row = yield* get<DeliveryRow & { payload: string }>(ONE_WITH_BODY, deliveryId, orgId, targetId);
  if (!row) throw notFound("delivery");
  const tries = (yield* triesOf([row.id], DELIVERY_TRIES_KEPT)).get(row.id)!;
  return { ...toRecord(row, tries.slice(0, RECENT_TRIES_LISTED)), tries, body: row.payload };
}

/** Sends a delivery again, now, with the same id and body; a fresh round of retries follows if it fails. Run it in a write. */
export function* redeliver(core: Core, orgId: string, owner: LogOwner, deliveryId: string): Q<DeliveryRecord> {
  const targetId = yield* targetOf(core, orgId, owner);
  const row = yield* get<DeliveryRow>(ONE, deliveryId, orgId, targetId);
  if (!row) throw notFound("delivery");
  if ((yield* run(REDELIVER, Date.now(), iso(), deliveryId)).changes === 0) throw new ApiError(409, "conflict", "the delivery is being sent right now");
  const again = (yield* get<DeliveryRow>(ONE, deliveryId, orgId, targetId))!;
  return toRecord(again, (yield* triesOf([deliveryId], RECENT_TRIES_LISTED)).get(deliveryId)!);
}
