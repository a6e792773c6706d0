// Worker rows: creation at pairing, credential look-up, the record the API shows, updates.
import type { Core } from "../../server/core";
import { unauthorized } from "../../server/errors";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { isWellFormedToken, newChecksummedToken, sha256Hex } from "../../lib/tokens";
import type { AgentInfo, ToolInfo } from "../../db/schema";
import { forgetEverywhere, RowCache } from "../../db/cache";
import { all, get, run, type Q } from "../../db/query";
import type { Hello } from "../../protocol/messages";

export interface WorkerRow {
  id: string;
  org_id: string;
  name: string;
  hostname: string;
  labels: string;
  policy: string;
  credential_hash: string;
  approved_at: string | null;
  approved_by: string | null;
  revoked_at: string | null;
  paired_by: string | null;
  paired_from_ip: string | null;
  tools: string;
  agents: string;
  providers: string;
  version: string | null;
  capacity: number;
  last_seen_at: string | null;
  created_at: string;
  updated_at: string;
}

/** What the dispatcher needs of a worker's policy: the projects it may take (none: any). */
export interface WorkerPolicy {
  projects?: string[];
}

export type WorkerStatus = "online" | "offline" | "pending_approval" | "revoked";

/** The statuses of an attempt that a worker holds. */
export const HELD_STATUSES = ["running", "paused", "needs_input", "needs_approval"] as const;
/** The same in SQL, as the partial index tasks_worker_held says it (SQLite uses it only for a query that says the same). */
export const HELD_SQL = `status IN (${HELD_STATUSES.map((s) => `'${s}'`).join(", ")})`;

const BY_CREDENTIAL = "SELECT * FROM workers WHERE credential_hash = ?";
const BY_ID = "SELECT * FROM workers WHERE id = ?";
const INSERT = `INSERT INTO workers (id, org_id, name, hostname, labels, policy, credential_hash, approved_at, approved_by, paired_by, paired_from_ip, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, '{}', ?, ?, ?, ?, ?, ?, ?)`;
const HELD = `SELECT id FROM tasks WHERE worker_id = ? AND ${HELD_SQL} ORDER BY id`;
const HELLO = "UPDATE workers SET tools = ?, agents = ?, providers = ?, version = ?, capacity = ?, last_seen_at = ?, updated_at = ? WHERE id = ?";
// Never back in time: a stale socket closing on one server must not undo a newer write by another.
const SEEN = "UPDATE workers SET last_seen_at = ? WHERE id = ? AND (last_seen_at IS NULL OR last_seen_at < ?)";

export interface NewWorker {
  orgId: string;
  name: string;
  hostname: string;
  labels: string[];
  approved: boolean;
  pairedBy: string;
  pairedFromIp: string | null;
}

/** Creates a worker and its credential; the credential is returned once and stored hashed. */
export function* createWorker(_core: Core, w: NewWorker): Q<{ worker: WorkerRow; credential: string }> {
  const credential = newChecksummedToken("aow_");
  const id = newId("wkr");
  const now = iso();
  yield* run(
    INSERT,
    id, w.orgId, w.name, w.hostname, JSON.stringify(w.labels), sha256Hex(credential),
    w.approved ? now : null, w.approved ? w.pairedBy : null, w.pairedBy, w.pairedFromIp, now, now,
  );
  return { worker: (yield* get<WorkerRow>(BY_ID, id))!, credential };
}

/**
 * The credential cache. A row read while the cache was cleared (any write to a worker row here,
 * or on another server) may be stale, and is not kept (RowCache.readThrough).
 */
const credentialCaches = new WeakMap<Core, RowCache<WorkerRow>>();
function credentialCache(core: Core) {
  let c = credentialCaches.get(core);
  if (!c) credentialCaches.set(core, (c = new RowCache<WorkerRow>(core)));
  return c;
}

/**
 * Every write to a worker row calls this after it (revocation, approval, labels and policy, hello,
 * last seen), so the next request reads the row afresh: a revoked credential is refused at once.
 */
export function forgetWorkers(core: Core) {
  forgetEverywhere(core);
  credentialCaches.get(core)?.clear();
}

/** The worker a credential names. 401 for anything malformed, unknown or revoked (no database read for garbage). */
export function* workerByCredential(core: Core, credential: string | null | undefined): Q<WorkerRow> {
  if (!credential || !isWellFormedToken(credential, "aow_")) throw unauthorized("the worker credential is missing or malformed");
  return yield* workerByCredentialHash(core, sha256Hex(credential));
}

/** The worker whose well-formed credential hashes to `hash` (a socket's, hashed once at its upgrade); 401 when unknown or revoked. */
export function* workerByCredentialHash(core: Core, hash: string): Q<WorkerRow> {
  // A hit reads nothing; misses are not cached.
  const row = yield* credentialCache(core).readThrough(hash, () => get<WorkerRow>(BY_CREDENTIAL, hash));
  if (!row) throw unauthorized("the worker credential is unknown");
  if (row.revoked_at) throw unauthorized("the worker credential was revoked");
  return row;
}

/** The Bearer value of an Authorization header, or null. */
export function bearerOf(header: string | null | undefined): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return m ? m[1] : null;
}

export function* getWorkerRow(_core: Core, orgId: string, workerId: string): Q<WorkerRow | null> {
  const row = yield* get<WorkerRow>(BY_ID, workerId);
  return row && row.org_id === orgId ? row : null;
}

export function* heldTaskIds(_core: Core, workerId: string): Q<string[]> {
  return (yield* all<{ id: string }>(HELD, workerId)).map((r) => r.id);
}

/** What a hello tells of the worker: its tools, agents, providers, version and capacity. */
export function* recordHello(_core: Core, workerId: string, hello: Pick<Hello, "tools" | "agents" | "providers" | "version" | "capacity">, at: string): Q<void> {
  yield* run(HELLO, JSON.stringify(hello.tools), JSON.stringify(hello.agents), JSON.stringify(hello.providers), hello.version, hello.capacity, at, at, workerId);
}

export function* recordLastSeen(_core: Core, workerId: string, at: string): Q<void> {
  yield* run(SEEN, at, workerId, at);
}

export const parseLabels = (row: Pick<WorkerRow, "labels">): string[] => JSON.parse(row.labels) as string[];
export const parsePolicy = (row: Pick<WorkerRow, "policy">): WorkerPolicy & Record<string, unknown> => JSON.parse(row.policy) as WorkerPolicy & Record<string, unknown>;

/** What the dispatcher matches a worker's row by: its labels, and the projects it is limited to (null: any). */
export const mayTake = (row: Pick<WorkerRow, "labels" | "policy">) => {
  const projects = parsePolicy(row).projects;
  return { labels: new Set(parseLabels(row)), projects: projects ? new Set(projects) : null };
};

export function statusOf(row: WorkerRow, connected: boolean): WorkerStatus {
  if (row.revoked_at) return "revoked";
  if (!row.approved_at) return "pending_approval";
  return connected ? "online" : "offline";
}

/** The worker record of the API (SPEC §7). `live` is what only the running server knows. */
export function* toWorkerRecord(core: Core, row: WorkerRow, live: { connected: boolean; lastSeenAt: string | null }) {
  const runningTaskIds = row.revoked_at ? [] : yield* heldTaskIds(core, row.id);
  return {
    id: row.id,
    orgId: row.org_id,
    name: row.name,
    hostname: row.hostname,
    labels: parseLabels(row),
    policy: parsePolicy(row),
    status: statusOf(row, live.connected),
    tools: JSON.parse(row.tools) as ToolInfo[],
    agents: JSON.parse(row.agents) as AgentInfo[],
    providers: JSON.parse(row.providers) as string[],
    version: row.version,
    capacity: row.capacity,
    lastSeenAt: live.lastSeenAt ?? row.last_seen_at,
    runningTaskIds,
    approvedAt: row.approved_at,
    revokedAt: row.revoked_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
export type WorkerRecord = ReturnType<typeof toWorkerRecord> extends Q<infer R> ? R : never;
