// Which worker has which repository: clones people ask for (SPEC §8 clone {workerIds}), and the
// workers' reports of the git repositories in their workspace. A reported repository that a
// project holds (same remote, normalised) counts as that worker having it; the others are
// recorded as discovered.
import type { Core } from "../../server/core";
import { conflict, invalid, notFound } from "../../server/errors";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import type { CloneRequest } from "../../protocol/messages";
import { normalizeRepoUrl, repoNameOf } from "../../protocol/repo-url";
import type { CloneReport, ReposReport } from "../../protocol/requests";
import { dispatcherOf } from "./dispatcher";
import type { WorkerRow } from "./registry";
import { all, get, run, type Q } from "../../db/query";
import { pageOf, type Page, type PageQuery } from "../orgs/paging";

interface RepoRow {
  id: string;
  project_id: string;
  url: string;
  name: string;
  branch: string;
}

export interface CloneStatus {
  workerId: string;
  status: "cloning" | "cloned" | "failed";
  path: string | null;
  error: string | null;
  updatedAt: string;
}

const REPO = `SELECT r.id, r.project_id, r.url, r.name, r.branch, p.archived FROM repositories r JOIN projects p ON p.id = r.project_id
  WHERE r.id = ? AND r.project_id = ? AND r.org_id = ?`;
const REPO_OF_ORG = "SELECT id FROM repositories WHERE id = ? AND org_id = ?";
const ORG_REPOS = "SELECT id, project_id, url, name, branch FROM repositories WHERE org_id = ?";
const UPSERT = `INSERT INTO worker_repositories (worker_id, repository_id, org_id, status, path, error, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (worker_id, repository_id) DO UPDATE SET status = excluded.status, path = excluded.path, error = excluded.error, updated_at = excluded.updated_at`;
const OF_REPO = "SELECT worker_id, status, path, error, updated_at FROM worker_repositories WHERE repository_id = ? ORDER BY worker_id LIMIT ?";
const OF_REPO_AFTER = "SELECT worker_id, status, path, error, updated_at FROM worker_repositories WHERE repository_id = ? AND worker_id > ? ORDER BY worker_id LIMIT ?";
const CLONING = `SELECT r.id, r.project_id, r.url, r.name, r.branch FROM worker_repositories wr JOIN repositories r ON r.id = wr.repository_id
  WHERE wr.worker_id = ? AND wr.status = 'cloning' ORDER BY wr.updated_at`;
const CLONED_OF = "SELECT repository_id, path FROM worker_repositories WHERE worker_id = ? AND status = 'cloned'";
const DROP_CLONE = "DELETE FROM worker_repositories WHERE worker_id = ? AND repository_id = ?";
const DISCOVERED = "SELECT id, status, sightings, repository_id FROM discovered_repositories WHERE org_id = ? AND normalized_url = ?";
const DISCOVERED_OF_ORG = "SELECT id, status, sightings FROM discovered_repositories WHERE org_id = ?";
const DELETE_DISCOVERED = "DELETE FROM discovered_repositories WHERE id = ?";
const INSERT_DISCOVERED = `INSERT INTO discovered_repositories (id, org_id, url, normalized_url, name, branch, status, sightings, first_seen_at, last_seen_at)
  VALUES (?, ?, ?, ?, ?, ?, 'new', ?, ?, ?)`;
const UPDATE_DISCOVERED = "UPDATE discovered_repositories SET sightings = ?, branch = COALESCE(?, branch), status = ?, last_seen_at = ? WHERE id = ?";
const SET_SIGHTINGS = "UPDATE discovered_repositories SET sightings = ? WHERE id = ?";
const WORKER = "SELECT id, approved_at, revoked_at FROM workers WHERE id = ? AND org_id = ?";

/** Records a worker's clone of a repository (asked, done, failed). */
export function* upsertClone(
  _core: Core,
  c: { workerId: string; repositoryId: string; orgId: string; status: CloneStatus["status"]; path: string | null; error: string | null; at: string },
): Q<void> {
  yield* run(UPSERT, c.workerId, c.repositoryId, c.orgId, c.status, c.path, c.error, c.at);
}

function* repositoryOf(_core: Core, orgId: string, projectId: string, repositoryId: string): Q<RepoRow & { archived: number }> {
  const repo = yield* get<RepoRow & { archived: number }>(REPO, repositoryId, projectId, orgId);
  if (!repo) throw notFound("repository");
  return repo;
}

/** Which workers have the repository, a page at a time by worker id. */
export function* cloneStatuses(core: Core, orgId: string, projectId: string, repositoryId: string, query: PageQuery): Q<Page<CloneStatus>> {
  yield* repositoryOf(core, orgId, projectId, repositoryId);
  type Row = { worker_id: string; status: CloneStatus["status"]; path: string | null; error: string | null; updated_at: string };
  return yield* pageOf(
    query,
    1,
    (after, n) => (after ? all<Row>(OF_REPO_AFTER, repositoryId, after[0], n) : all<Row>(OF_REPO, repositoryId, n)),
    (r) => [r.worker_id],
    (r) => ({ workerId: r.worker_id, status: r.status, path: r.path, error: r.error, updatedAt: r.updated_at }),
  );
}

/** The clones a worker was asked for and has not reported: sent again at each hello (the request outlives a restart of either side). */
export function* pendingClones(_core: Core, workerId: string): Q<CloneRequest[]> {
  const rows = yield* all<RepoRow>(CLONING, workerId);
  return rows.map((r) => ({ type: "clone", repositoryId: r.id, projectId: r.project_id, url: r.url, branch: r.branch, name: r.name }));
}

/** Asks each worker to clone the repository into its workspace (run in a write); 202 with who was asked. */
export function* requestClone(core: Core, orgId: string, projectId: string, repositoryId: string, workerIds: string[]) {
  const repo = yield* repositoryOf(core, orgId, projectId, repositoryId);
  if (repo.archived) throw conflict("the project is archived");
  const unknown: { field: string; message: string }[] = [];
  for (const [i, id] of workerIds.entries()) {
    const w = yield* get<{ id: string; approved_at: string | null; revoked_at: string | null }>(WORKER, id, orgId);
    if (!w) unknown.push({ field: `workerIds.${i}`, message: "no such worker in this organization" });
    else if (w.revoked_at) unknown.push({ field: `workerIds.${i}`, message: "the worker was revoked" });
    else if (!w.approved_at) unknown.push({ field: `workerIds.${i}`, message: "the worker awaits approval" });
  }
  if (unknown.length) throw invalid("some workers cannot clone", unknown);
  const now = iso();
  const message: CloneRequest = { type: "clone", repositoryId, projectId, url: repo.url, branch: repo.branch, name: repo.name };
  const dispatcher = dispatcherOf(core);
  const workers: { workerId: string; status: "cloning"; delivered: boolean }[] = [];
  for (const workerId of new Set(workerIds)) {
    yield* upsertClone(core, { workerId, repositoryId, orgId, status: "cloning", path: null, error: null, at: now });
    // Kept in the mailbox too (presence.ts sends it once): a worker on another server gets it at once.
    workers.push({ workerId, status: "cloning", delivered: yield* dispatcher.mailbox.deliver(workerId, message) });
  }
  return { repositoryId, workers };
}

/** A worker reports the result of a clone. */
export function* reportClone(core: Core, worker: WorkerRow, repositoryId: string, report: CloneReport) {
  const repo = yield* get<{ id: string }>(REPO_OF_ORG, repositoryId, worker.org_id);
  if (!repo) throw notFound("repository");
  const status = report.ok ? "cloned" : "failed";
  yield* upsertClone(core, { workerId: worker.id, repositoryId, orgId: worker.org_id, status, path: report.path ?? null, error: report.ok ? null : (report.error ?? "clone failed"), at: iso() });
  return { status };
}

type Sighting = { workerId: string; path: string; at: string };

/** A worker reports every git repository in its workspace (the full list each time); run in a write. */
export function* reportRepos(core: Core, worker: WorkerRow, report: ReposReport) {
  const now = iso();
  const byUrl = new Map<string, RepoRow[]>();
  for (const r of yield* all<RepoRow>(ORG_REPOS, worker.org_id)) {
    const key = normalizeRepoUrl(r.url);
    byUrl.set(key, [...(byUrl.get(key) ?? []), r]);
  }
  let known = 0;
  let discovered = 0;
  const seenRepos = new Set<string>();
  const seenDiscovered = new Set<string>();
  for (const found of report.repos) {
    const key = normalizeRepoUrl(found.url);
    const repos = byUrl.get(key);
    if (repos) {
      known++;
      for (const r of repos) {
        seenRepos.add(r.id);
        yield* upsertClone(core, { workerId: worker.id, repositoryId: r.id, orgId: worker.org_id, status: "cloned", path: found.path, error: null, at: now });
      }
      continue;
    }
    discovered++;
    const row = yield* get<{ id: string; status: string; sightings: string; repository_id: string | null }>(DISCOVERED, worker.org_id, key);
    const sighting: Sighting = { workerId: worker.id, path: found.path, at: now };
    if (!row) {
      const id = newId("dsc");
      yield* run(INSERT_DISCOVERED, id, worker.org_id, found.url, key, repoNameOf(found.url), found.branch ?? null, JSON.stringify([sighting]), now, now);
      seenDiscovered.add(id);
      continue;
    }
    seenDiscovered.add(row.id);
    const sightings = (JSON.parse(row.sightings) as Sighting[]).filter((x) => x.workerId !== worker.id);
    sightings.push(sighting);
    // Dismissed stays dismissed; an accepted one whose repository is gone is new again.
    const status = row.status === "accepted" ? "new" : row.status;
    yield* run(UPDATE_DISCOVERED, JSON.stringify(sightings), found.branch ?? null, status, now, row.id);
  }
  // What this worker no longer has: its clones that vanished, its sightings elsewhere.
  for (const c of yield* all<{ repository_id: string; path: string | null }>(CLONED_OF, worker.id)) {
    if (!seenRepos.has(c.repository_id)) yield* run(DROP_CLONE, worker.id, c.repository_id);
  }
  yield* forgetSightings(core, worker.org_id, worker.id, seenDiscovered);
  return { known, discovered };
}

/**
 * In the caller's transaction: the worker no longer has these discovered repositories (all
 * but `keep`). One that no worker has any more is dropped while it is undecided (a later report
 * lists it anew); a dismissed one stays, so that it stays dismissed.
 */
export function* forgetSightings(_core: Core, orgId: string, workerId: string, keep: ReadonlySet<string> = new Set()): Q<void> {
  for (const d of yield* all<{ id: string; status: string; sightings: string }>(DISCOVERED_OF_ORG, orgId)) {
    if (keep.has(d.id)) continue;
    const sightings = JSON.parse(d.sightings) as Sighting[];
    const rest = sightings.filter((x) => x.workerId !== workerId);
    if (rest.length === sightings.length) continue;
    if (rest.length === 0 && d.status === "new") yield* run(DELETE_DISCOVERED, d.id);
    else yield* run(SET_SIGHTINGS, JSON.stringify(rest), d.id);
  }
}
