// The delivery log of a callback target, and redelivery with the same delivery id.
import type { Core } from "../../server/core";
import { ApiError, notFound } from "../../server/errors";
import { iso } from "../../lib/time";
import { pageOf, type PageQuery } from "../orgs/paging";
import type { DeliveryRecord } from "./model";

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

function toRecord(row: DeliveryRow): DeliveryRecord {
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
  };
}

/** Deliveries to one target of the org, newest first. */
export function listDeliveries(core: Core, orgId: string, targetId: string, q: PageQuery) {
  const first = core.sqlite.query<DeliveryRow, [string, string, number]>(
    `SELECT ${COLUMNS} FROM deliveries WHERE org_id = ? AND target_id = ? ORDER BY id DESC LIMIT ?`,
  );
  const after = core.sqlite.query<DeliveryRow, [string, string, string, number]>(
    `SELECT ${COLUMNS} FROM deliveries WHERE org_id = ? AND target_id = ? AND id < ? ORDER BY id DESC LIMIT ?`,
  );
  return pageOf(
    q,
    1,
    (key, n) => (key ? after.all(orgId, targetId, key[0], n) : first.all(orgId, targetId, n)),
    (row) => [row.id],
    toRecord,
  );
}

/** Sends a delivery again, now, with the same id and body; a fresh round of retries follows if it fails. */
export function redeliver(core: Core, orgId: string, targetId: string, deliveryId: string): DeliveryRecord {
  return core.sqlite
    .transaction(() => {
      const get = core.sqlite.query<DeliveryRow, [string, string, string]>(`SELECT ${COLUMNS} FROM deliveries WHERE id = ? AND org_id = ? AND target_id = ?`);
      const row = get.get(deliveryId, orgId, targetId);
      if (!row) throw notFound("delivery");
      if (row.status === "delivering") throw new ApiError(409, "conflict", "the delivery is being sent right now");
      core.sqlite
        .query("UPDATE deliveries SET status = 'pending', round_attempts = 0, next_attempt_at = ?, updated_at = ? WHERE id = ?")
        .run(Date.now(), iso(), deliveryId);
      return toRecord(get.get(deliveryId, orgId, targetId)!);
    })
    .immediate();
}
