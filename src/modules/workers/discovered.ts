// Discovered repositories (SPEC §8): found on workers, in no project. Accepting adds them to a
// given project or makes one new project per repository; dismissing hides them for good (a
// later report of the same remote does not bring them back).
import type { Core } from "../../server/core";
import { conflict, notFound } from "../../server/errors";
import { iso } from "../../lib/time";
import { normalizeRepoUrl } from "../../protocol/repo-url";
import { pageOf, type PageQuery } from "../orgs/paging";
import { pure } from "../../db/query";
import { getProject, insertProject, projectRow, uniqueConflict, type ProjectRecord } from "../projects/service";
import { insertRepository } from "../projects/repositories";
import { forgetProjects } from "../projects/cache";
import { cloneStatements } from "./clones";

interface DiscoveredRow {
  id: string;
  org_id: string;
  url: string;
  normalized_url: string;
  name: string;
  branch: string | null;
  status: "new" | "accepted" | "dismissed";
  sightings: string;
  first_seen_at: string;
  last_seen_at: string;
}

const statements = new WeakMap<Core, ReturnType<typeof prepare>>();
function prepare(core: Core) {
  const q = core.sqlite;
  return {
    // No sightings: no worker has it any more (rows written before such rows were dropped).
    first: q.query<DiscoveredRow, [string, number]>(
      "SELECT * FROM discovered_repositories WHERE org_id = ? AND status = 'new' AND sightings <> '[]' ORDER BY id DESC LIMIT ?",
    ),
    after: q.query<DiscoveredRow, [string, string, number]>(
      "SELECT * FROM discovered_repositories WHERE org_id = ? AND status = 'new' AND sightings <> '[]' AND id < ? ORDER BY id DESC LIMIT ?",
    ),
    one: q.query<DiscoveredRow, [string, string]>("SELECT * FROM discovered_repositories WHERE id = ? AND org_id = ?"),
    orgUrls: q.query<{ url: string }, [string]>("SELECT url FROM repositories WHERE org_id = ?"),
    liveNames: q.query<{ name: string }, [string]>("SELECT name FROM projects WHERE org_id = ? AND archived = 0"),
    accept: q.query("UPDATE discovered_repositories SET status = 'accepted', repository_id = ? WHERE id = ?"),
    dismiss: q.query("UPDATE discovered_repositories SET status = 'dismissed' WHERE id = ? AND status = 'new'"),
  };
}
function stmts(core: Core) {
  let s = statements.get(core);
  if (!s) statements.set(core, (s = prepare(core)));
  return s;
}

const view = (r: DiscoveredRow) => ({
  id: r.id,
  url: r.url,
  name: r.name,
  branch: r.branch,
  workers: (JSON.parse(r.sightings) as { workerId: string; path: string; at: string }[]).map((x) => ({ workerId: x.workerId, path: x.path, seenAt: x.at })),
  firstSeenAt: r.first_seen_at,
  lastSeenAt: r.last_seen_at,
});

/** New discovered repositories, newest first; ones a project has meanwhile added are left out. */
export function listDiscovered(core: Core, orgId: string, query: PageQuery) {
  const s = stmts(core);
  const inProjects = new Set(s.orgUrls.all(orgId).map((r) => normalizeRepoUrl(r.url)));
  // Rows are left out after the query (URLs are compared normalised), so read on until n are kept:
  // a short page would otherwise end the list early.
  const fetch = (after: string[] | null, n: number) => {
    const kept: DiscoveredRow[] = [];
    let cursor = after?.[0] ?? null;
    for (;;) {
      const rows = cursor ? s.after.all(orgId, cursor, n) : s.first.all(orgId, n);
      for (const r of rows) if (!inProjects.has(r.normalized_url) && kept.push(r) === n) return kept;
      if (rows.length < n) return kept;
      cursor = rows[rows.length - 1].id;
    }
  };
  return core.store.sync(pageOf(query, 1, (after, n) => pure(fetch(after, n)), (r) => [r.id], view));
}

function pendingRows(core: Core, orgId: string, ids: string[]): DiscoveredRow[] {
  const unique = [...new Set(ids)];
  const rows = unique.map((id) => stmts(core).one.get(id, orgId));
  const missing = unique.filter((_, i) => !rows[i]);
  if (missing.length) throw notFound(`discovered repository ${missing[0]}`);
  const decided = rows.find((r) => r!.status !== "new");
  if (decided) throw conflict(`discovered repository ${decided.id} was already ${decided.status}`, { id: decided.id, status: decided.status });
  return rows as DiscoveredRow[];
}

/** A project name not taken among the org's live projects: name, name-2, name-3... */
function freeName(taken: Set<string>, name: string): string {
  let candidate = name;
  for (let i = 2; taken.has(candidate.toLowerCase()); i++) candidate = `${name}-${i}`;
  taken.add(candidate.toLowerCase());
  return candidate;
}

export function acceptDiscovered(core: Core, orgId: string, ids: string[], projectId?: string): { projects: ProjectRecord[] } {
  const s = stmts(core);
  const clones = cloneStatements(core);
  const touched = core.sqlite
    .transaction(() => {
      const rows = pendingRows(core, orgId, ids);
      const target = projectId ? core.store.sync(projectRow(core, orgId, projectId)) : null;
      if (target?.archived) throw conflict("the project is archived");
      const taken = new Set(s.liveNames.all(orgId).map((r) => r.name.toLowerCase()));
      const projectIds: string[] = [];
      const now = iso();
      for (const row of rows) {
        const project = target ?? core.store.sync(insertProject(core, orgId, { name: freeName(taken, row.name) }));
        const repo = core.store.sync(insertRepository(core, project, { url: row.url, ...(row.branch ? { branch: row.branch } : {}) }, "discovered"));
        s.accept.run(repo.id, row.id);
        // The workers that reported it already have it: readiness can run there at once.
        for (const x of JSON.parse(row.sightings) as { workerId: string; path: string }[]) clones.upsert.run(x.workerId, repo.id, orgId, "cloned", x.path, null, now);
        if (!projectIds.includes(project.id)) projectIds.push(project.id);
      }
      return projectIds;
    })
    .immediate();
  forgetProjects(core);
  return { projects: touched.map((id) => core.store.sync(getProject(core, orgId, id))) };
}

export function acceptDiscoveredSafely(core: Core, orgId: string, ids: string[], projectId?: string) {
  try {
    return acceptDiscovered(core, orgId, ids, projectId);
  } catch (err) {
    return uniqueConflict(err);
  }
}

export function dismissDiscovered(core: Core, orgId: string, ids: string[]) {
  const rows = pendingRows(core, orgId, ids);
  core.sqlite.transaction(() => {
    for (const r of rows) stmts(core).dismiss.run(r.id);
  })();
  return { dismissed: rows.map((r) => r.id) };
}
