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

const statements = new WeakMap<Core, ReturnType<typeof prepare>>();
function prepare(core: Core) {
  const q = core.sqlite;
  return {
    repo: q.query<RepoRow & { archived: number }, [string, string, string]>(
      `SELECT r.id, r.project_id, r.url, r.name, r.branch, p.archived FROM repositories r JOIN projects p ON p.id = r.project_id
        WHERE r.id = ? AND r.project_id = ? AND r.org_id = ?`,
    ),
    orgRepos: q.query<RepoRow, [string]>("SELECT id, project_id, url, name, branch FROM repositories WHERE org_id = ?"),
    upsert: q.query(
      `INSERT INTO worker_repositories (worker_id, repository_id, org_id, status, path, error, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (worker_id, repository_id) DO UPDATE SET status = excluded.status, path = excluded.path, error = excluded.error, updated_at = excluded.updated_at`,
    ),
    ofRepo: q.query<{ worker_id: string; status: CloneStatus["status"]; path: string | null; error: string | null; updated_at: string }, [string]>(
      "SELECT worker_id, status, path, error, updated_at FROM worker_repositories WHERE repository_id = ? ORDER BY worker_id",
    ),
    cloning: q.query<{ id: string; project_id: string; url: string; name: string; branch: string }, [string]>(
      `SELECT r.id, r.project_id, r.url, r.name, r.branch FROM worker_repositories wr JOIN repositories r ON r.id = wr.repository_id
        WHERE wr.worker_id = ? AND wr.status = 'cloning' ORDER BY wr.updated_at`,
    ),
    clonedOf: q.query<{ repository_id: string; path: string | null }, [string]>(
      "SELECT repository_id, path FROM worker_repositories WHERE worker_id = ? AND status = 'cloned'",
    ),
    dropClone: q.query("DELETE FROM worker_repositories WHERE worker_id = ? AND repository_id = ?"),
    discovered: q.query<{ id: string; status: string; sightings: string; repository_id: string | null }, [string, string]>(
      "SELECT id, status, sightings, repository_id FROM discovered_repositories WHERE org_id = ? AND normalized_url = ?",
    ),
    discoveredOfOrg: q.query<{ id: string; status: string; sightings: string }, [string]>("SELECT id, status, sightings FROM discovered_repositories WHERE org_id = ?"),
    deleteDiscovered: q.query("DELETE FROM discovered_repositories WHERE id = ?"),
    insertDiscovered: q.query(
      `INSERT INTO discovered_repositories (id, org_id, url, normalized_url, name, branch, status, sightings, first_seen_at, last_seen_at)
       VALUES (?, ?, ?, ?, ?, ?, 'new', ?, ?, ?)`,
    ),
    updateDiscovered: q.query("UPDATE discovered_repositories SET sightings = ?, branch = COALESCE(?, branch), status = ?, last_seen_at = ? WHERE id = ?"),
    setSightings: q.query("UPDATE discovered_repositories SET sightings = ? WHERE id = ?"),
    worker: q.query<{ id: string; approved_at: string | null; revoked_at: string | null }, [string, string]>(
      "SELECT id, approved_at, revoked_at FROM workers WHERE id = ? AND org_id = ?",
    ),
  };
}
export function cloneStatements(core: Core) {
  let s = statements.get(core);
  if (!s) statements.set(core, (s = prepare(core)));
  return s;
}

function repositoryOf(core: Core, orgId: string, projectId: string, repositoryId: string): RepoRow & { archived: number } {
  const repo = cloneStatements(core).repo.get(repositoryId, projectId, orgId);
  if (!repo) throw notFound("repository");
  return repo;
}

export function cloneStatuses(core: Core, orgId: string, projectId: string, repositoryId: string): CloneStatus[] {
  repositoryOf(core, orgId, projectId, repositoryId);
  return cloneStatements(core)
    .ofRepo.all(repositoryId)
    .map((r) => ({ workerId: r.worker_id, status: r.status, path: r.path, error: r.error, updatedAt: r.updated_at }));
}

/** The clones a worker was asked for and has not reported: sent again at each hello (the request outlives a restart of either side). */
export function pendingClones(core: Core, workerId: string): CloneRequest[] {
  return cloneStatements(core)
    .cloning.all(workerId)
    .map((r) => ({ type: "clone", repositoryId: r.id, projectId: r.project_id, url: r.url, branch: r.branch, name: r.name }));
}

/** Asks each worker to clone the repository into its workspace; 202 with who was asked. */
export function requestClone(core: Core, orgId: string, projectId: string, repositoryId: string, workerIds: string[]) {
  const repo = repositoryOf(core, orgId, projectId, repositoryId);
  if (repo.archived) throw conflict("the project is archived");
  const s = cloneStatements(core);
  const unknown: { field: string; message: string }[] = [];
  workerIds.forEach((id, i) => {
    const w = s.worker.get(id, orgId);
    if (!w) unknown.push({ field: `workerIds.${i}`, message: "no such worker in this organization" });
    else if (w.revoked_at) unknown.push({ field: `workerIds.${i}`, message: "the worker was revoked" });
    else if (!w.approved_at) unknown.push({ field: `workerIds.${i}`, message: "the worker awaits approval" });
  });
  if (unknown.length) throw invalid("some workers cannot clone", unknown);
  const now = iso();
  const message: CloneRequest = { type: "clone", repositoryId, projectId, url: repo.url, branch: repo.branch, name: repo.name };
  const dispatcher = dispatcherOf(core);
  const workers = [...new Set(workerIds)].map((workerId) => {
    s.upsert.run(workerId, repositoryId, orgId, "cloning", null, null, now);
    // Not kept in the mailbox: a worker that is away gets it from the database at its next hello.
    return { workerId, status: "cloning" as const, delivered: dispatcher.sendNow(workerId, message) };
  });
  return { repositoryId, workers };
}

/** A worker reports the result of a clone. */
export function reportClone(core: Core, worker: WorkerRow, repositoryId: string, report: CloneReport) {
  const repo = core.sqlite.query<{ id: string }, [string, string]>("SELECT id FROM repositories WHERE id = ? AND org_id = ?").get(repositoryId, worker.org_id);
  if (!repo) throw notFound("repository");
  cloneStatements(core).upsert.run(worker.id, repositoryId, worker.org_id, report.ok ? "cloned" : "failed", report.path ?? null, report.ok ? null : (report.error ?? "clone failed"), iso());
  return { status: report.ok ? "cloned" : "failed" };
}

type Sighting = { workerId: string; path: string; at: string };

/** A worker reports every git repository in its workspace (the full list each time). */
export function reportRepos(core: Core, worker: WorkerRow, report: ReposReport) {
  const s = cloneStatements(core);
  const now = iso();
  const byUrl = new Map<string, RepoRow[]>();
  for (const r of s.orgRepos.all(worker.org_id)) {
    const key = normalizeRepoUrl(r.url);
    byUrl.set(key, [...(byUrl.get(key) ?? []), r]);
  }
  let known = 0;
  let discovered = 0;
  core.sqlite
    .transaction(() => {
      const seenRepos = new Set<string>();
      const seenDiscovered = new Set<string>();
      for (const found of report.repos) {
        const key = normalizeRepoUrl(found.url);
        const repos = byUrl.get(key);
        if (repos) {
          known++;
          for (const r of repos) {
            seenRepos.add(r.id);
            s.upsert.run(worker.id, r.id, worker.org_id, "cloned", found.path, null, now);
          }
          continue;
        }
        discovered++;
        const row = s.discovered.get(worker.org_id, key);
        const sighting: Sighting = { workerId: worker.id, path: found.path, at: now };
        if (!row) {
          const id = newId("dsc");
          s.insertDiscovered.run(id, worker.org_id, found.url, key, repoNameOf(found.url), found.branch ?? null, JSON.stringify([sighting]), now, now);
          seenDiscovered.add(id);
          continue;
        }
        seenDiscovered.add(row.id);
        const sightings = (JSON.parse(row.sightings) as Sighting[]).filter((x) => x.workerId !== worker.id);
        sightings.push(sighting);
        // Dismissed stays dismissed; an accepted one whose repository is gone is new again.
        const status = row.status === "accepted" ? "new" : row.status;
        s.updateDiscovered.run(JSON.stringify(sightings), found.branch ?? null, status, now, row.id);
      }
      // What this worker no longer has: its clones that vanished, its sightings elsewhere.
      for (const c of s.clonedOf.all(worker.id)) if (!seenRepos.has(c.repository_id)) s.dropClone.run(worker.id, c.repository_id);
      txForgetSightings(core, worker.org_id, worker.id, seenDiscovered);
    })
    .immediate();
  return { known, discovered };
}

/**
 * Inside the caller's transaction: the worker no longer has these discovered repositories (all
 * but `keep`). One that no worker has any more is dropped while it is undecided (a later report
 * lists it anew); a dismissed one stays, so that it stays dismissed.
 */
export function txForgetSightings(core: Core, orgId: string, workerId: string, keep: ReadonlySet<string> = new Set()) {
  const s = cloneStatements(core);
  for (const d of s.discoveredOfOrg.all(orgId)) {
    if (keep.has(d.id)) continue;
    const sightings = JSON.parse(d.sightings) as Sighting[];
    const rest = sightings.filter((x) => x.workerId !== workerId);
    if (rest.length === sightings.length) continue;
    if (rest.length === 0 && d.status === "new") s.deleteDiscovered.run(d.id);
    else s.setSightings.run(JSON.stringify(rest), d.id);
  }
}
