// What GET /metrics reports beyond the counters of server/metrics.ts: gauges of stored state,
// computed from the database when Prometheus scrapes (nothing on the hot path), and who may scrape.
import { statSync } from "node:fs";
import { join } from "node:path";
import { timingSafeEqual } from "node:crypto";
import { Gauge } from "../../server/prom";
import type { Core } from "../../server/core";
import { ApiError, unauthorized } from "../../server/errors";
import { sha256Hex } from "../../lib/tokens";
import { TASK_STATUSES } from "../tasks/machine";
import { dispatcherOf } from "../workers/dispatcher";
import { all, get } from "../../db/query";

/** 404 while AO_METRICS_TOKEN is unset (the route is not there), 401 for any other credential. */
export function checkScrape(core: Core, authorization: string | undefined) {
  const expected = core.config.metricsToken;
  if (!expected) throw new ApiError(404, "not_found", "no such route");
  const presented = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1] ?? "";
  // Equal-length digests compared in constant time: neither the length nor a prefix of the token leaks.
  const ok = timingSafeEqual(Buffer.from(sha256Hex(presented), "hex"), Buffer.from(sha256Hex(expected), "hex"));
  if (!ok) throw unauthorized("GET /metrics needs Authorization: Bearer <AO_METRICS_TOKEN>");
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0; // no WAL file right after a checkpoint that truncated it, or before the first write
  }
}

const PG_DATABASE_SIZE = "SELECT pg_database_size(current_database()) AS n";
const BY_STATUS = "SELECT status, COUNT(*) AS n FROM tasks GROUP BY status";
// updated_at of a queued task is when it entered the queue: nothing else changes a queued row's record.
const QUEUE = "SELECT org_id, project_id, COUNT(*) AS n, MIN(updated_at) AS oldest FROM tasks WHERE status = 'queued' GROUP BY org_id, project_id";
interface QueueRow {
  org_id: string;
  project_id: string;
  n: number;
  oldest: string;
}

/** Registers the scrape-time gauges on the server's registry (once per server). */
export function registerStateGauges(core: Core) {
  const registers = [core.metrics.registry];
  const dbPath = join(core.config.dataDir, "ao.db");

  new Gauge({
    name: "ao_tasks",
    help: "Tasks by status, all organizations",
    labelNames: ["status"] as const,
    registers,
    async collect() {
      const counts = new Map((await core.store.read(all<{ status: string; n: number }>(BY_STATUS))).map((r) => [r.status, r.n]));
      for (const status of TASK_STATUSES) this.set({ status }, counts.get(status) ?? 0);
    },
  });
  // One query a scrape for both queue gauges: the depth's collect (which starts first) keeps the
  // rows' promise, which the age's collect awaits.
  let queued: Promise<QueueRow[]> = Promise.resolve([]);
  new Gauge({
    name: "ao_queue_depth",
    help: "Queued tasks per project",
    labelNames: ["org", "project"] as const,
    registers,
    async collect() {
      queued = core.store.read(all<QueueRow>(QUEUE));
      const rows = await queued;
      // Projects whose queue emptied disappear instead of reporting their last value forever.
      this.reset();
      for (const r of rows) this.set({ org: r.org_id, project: r.project_id }, r.n);
    },
  });
  new Gauge({
    name: "ao_queue_oldest_age_seconds",
    help: "How long the oldest queued task of each project has waited",
    labelNames: ["org", "project"] as const,
    registers,
    async collect() {
      const rows = await queued;
      this.reset();
      const now = Date.now();
      for (const r of rows) this.set({ org: r.org_id, project: r.project_id }, Math.max(0, (now - Date.parse(r.oldest)) / 1000));
    },
  });
  new Gauge({
    name: "ao_workers_online",
    help: "Workers with an open socket to this server",
    registers,
    collect() {
      this.set(dispatcherOf(core).conns.size);
    },
  });
  if (core.store.dialect === "postgres") {
    // No ao.db here (its size would read 0); the WAL is the PostgreSQL server's, shared by all its databases.
    new Gauge({
      name: "ao_database_size_bytes",
      help: "Size of the PostgreSQL database (pg_database_size)",
      registers,
      async collect() {
        this.set(Number((await core.store.read(get<{ n: number | string }>(PG_DATABASE_SIZE)))?.n ?? 0));
      },
    });
    return;
  }
  new Gauge({
    name: "ao_database_size_bytes",
    help: "Size of ao.db",
    registers,
    collect() {
      this.set(fileSize(dbPath));
    },
  });
  new Gauge({
    name: "ao_database_wal_size_bytes",
    help: "Size of ao.db-wal, the write-ahead log not yet folded into ao.db",
    registers,
    collect() {
      this.set(fileSize(`${dbPath}-wal`));
    },
  });
}
