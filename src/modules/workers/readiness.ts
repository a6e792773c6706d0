// AI readiness runs (SPEC §8): a person asks, a worker that has the project's primary repository
// runs the checks in its clone and reports {status, score, checks, report}.
import type { Core } from "../../server/core";
import { conflict, invalid, notFound } from "../../server/errors";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import type { ReadinessRequest } from "../../protocol/messages";
import type { ReadinessReport } from "../../protocol/requests";
import type { Actor } from "../auth/principal";
import { presenceOf } from "./presence";
import type { WorkerRow } from "./registry";
import { all, get, run } from "../../db/query";

/** How long the repository's test command may run during a readiness check. */
export const READINESS_TEST_TIMEOUT_MS = 300_000;

interface RunRow {
  id: string;
  org_id: string;
  project_id: string;
  repository_id: string;
  worker_id: string;
  status: "queued" | "running" | "completed" | "failed";
  score: number | null;
  checks: string | null;
  report: string | null;
  error: string | null;
  created_at: string;
  updated_at: string;
  finished_at: string | null;
}

const PROJECT = "SELECT id, archived FROM projects WHERE id = ? AND org_id = ?";
const PRIMARY = `SELECT id, url, name, branch FROM repositories WHERE project_id = ? ORDER BY is_primary DESC, id ASC LIMIT 1`;
const HOLDERS = `SELECT w.id, w.last_seen_at, w.revoked_at FROM worker_repositories wr JOIN workers w ON w.id = wr.worker_id
  WHERE wr.repository_id = ? AND wr.status = 'cloned' AND w.revoked_at IS NULL AND w.approved_at IS NOT NULL ORDER BY wr.updated_at DESC`;
const WORKER = "SELECT id, last_seen_at, revoked_at FROM workers WHERE id = ? AND org_id = ?";
const INSERT = `INSERT INTO readiness_runs (id, org_id, project_id, repository_id, worker_id, status, requested_by, created_at, updated_at)
  VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?)`;
const LATEST = "SELECT * FROM readiness_runs WHERE project_id = ? ORDER BY id DESC LIMIT 1";
const BY_ID = "SELECT * FROM readiness_runs WHERE id = ?";
const UPDATE = "UPDATE readiness_runs SET status = ?, score = ?, checks = ?, report = ?, error = ?, updated_at = ?, finished_at = ? WHERE id = ?";

export function readinessView(r: RunRow) {
  return {
    runId: r.id,
    projectId: r.project_id,
    repositoryId: r.repository_id,
    workerId: r.worker_id,
    status: r.status,
    score: r.score,
    checks: r.checks ? (JSON.parse(r.checks) as { id: string; passed: boolean; detail: string }[]) : [],
    report: r.report,
    error: r.error,
    createdAt: r.created_at,
    finishedAt: r.finished_at,
  };
}

/**
 * Asks a worker for a run (run in a write: a worker's report of it, also a write, comes after the
 * commit even when the request reaches it first).
 */
export function* requestReadiness(core: Core, orgId: string, projectId: string, workerId: string | undefined, actor: Actor) {
  const project = yield* get<{ id: string; archived: number }>(PROJECT, projectId, orgId);
  if (!project) throw notFound("project");
  const repo = yield* get<{ id: string; url: string; name: string; branch: string }>(PRIMARY, projectId);
  if (!repo) throw conflict("the project has no repository to assess");
  const presence = presenceOf(core);
  type Holder = Pick<WorkerRow, "id" | "last_seen_at" | "revoked_at">;
  const rows = yield* all<Holder>(HOLDERS, repo.id);
  const holders = rows.map((h) => h.id);
  let chosen: string;
  if (workerId) {
    const w = yield* get<Holder>(WORKER, workerId, orgId);
    if (!w) throw invalid("workerId does not name a worker of this organization", [{ field: "workerId", message: "unknown worker" }]);
    if (!holders.includes(workerId)) throw conflict("that worker does not have the project; clone its repository there first", { workerId });
    // A run left waiting for a worker that may never return would stay queued for good. Online
    // means connected to any server of the service; the request reaches it through its mail.
    if (!presence.isOnline(w)) throw conflict("that worker is offline; start it or pick another", { workerId, workersWithProject: holders });
    chosen = workerId;
  } else {
    // One connected here first (the request goes out at once), else one connected to another server.
    const online = rows.find((h) => presence.dispatcher.isConnected(h.id)) ?? rows.find((h) => presence.isOnline(h));
    if (!online) {
      throw conflict(holders.length ? "no worker that has the project is online" : "no worker has the project; clone its repository to one first", {
        workersWithProject: holders,
      });
    }
    chosen = online.id;
  }
  const runId = newId("rdy");
  const now = iso();
  yield* run(INSERT, runId, orgId, projectId, repo.id, chosen, JSON.stringify(actor), now, now);
  const message: ReadinessRequest = {
    type: "readiness",
    runId,
    projectId,
    repositoryId: repo.id,
    url: repo.url,
    branch: repo.branch,
    name: repo.name,
    testTimeoutMs: READINESS_TEST_TIMEOUT_MS,
  };
  yield* presence.dispatcher.mailbox.deliver(chosen, message);
  return { runId, workerId: chosen, status: "queued" as const };
}

export function* latestReadiness(_core: Core, orgId: string, projectId: string) {
  if (!(yield* get(PROJECT, projectId, orgId))) throw notFound("project");
  const latest = yield* get<RunRow>(LATEST, projectId);
  if (!latest) throw notFound("readiness run");
  return readinessView(latest);
}

/** The worker running it reports progress and the result (run in a write); a finished run does not change again. */
export function* reportReadiness(_core: Core, worker: WorkerRow, runId: string, report: ReadinessReport) {
  const current = yield* get<RunRow>(BY_ID, runId);
  if (!current || current.worker_id !== worker.id) throw notFound("readiness run");
  if (current.status === "completed" || current.status === "failed") throw conflict(`the run is already ${current.status}`);
  if (report.status === "completed" && (report.score === undefined || !report.checks || report.report === undefined)) {
    throw invalid("a completed run reports score, checks and report", [{ field: "score", message: "required with status completed" }]);
  }
  const now = iso();
  const finished = report.status !== "running";
  yield* run(
    UPDATE,
    report.status,
    report.score ?? null,
    report.checks ? JSON.stringify(report.checks) : null,
    report.report ?? null,
    report.status === "failed" ? (report.error ?? "the readiness run failed") : null,
    now,
    finished ? now : null,
    runId,
  );
  return readinessView((yield* get<RunRow>(BY_ID, runId))!);
}
