// Discovered repositories (SPEC §8): found on workers, in no project. Accepting adds them to a
// given project or makes one new project per repository; dismissing hides them for good (a
// later report of the same remote does not bring them back).
import type { Core } from "../../server/core";
import { conflict, notFound } from "../../server/errors";
import { iso } from "../../lib/time";
import { normalizeRepoUrl } from "../../protocol/repo-url";
import { pageOf, type PageQuery } from "../orgs/paging";
import { getProject, insertProject, projectRow, uniqueConflict, type ProjectRecord } from "../projects/service";
import { insertRepository } from "../projects/repositories";
import { forgetProjects } from "../projects/cache";
import { upsertClone } from "./clones";
import { all, get, run, type Q } from "../../db/query";

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

// No sightings: no worker has it any more (rows written before such rows were dropped).
const FIRST = "SELECT * FROM discovered_repositories WHERE org_id = ? AND status = 'new' AND sightings <> '[]' ORDER BY id DESC LIMIT ?";
const AFTER = "SELECT * FROM discovered_repositories WHERE org_id = ? AND status = 'new' AND sightings <> '[]' AND id < ? ORDER BY id DESC LIMIT ?";
const ONE = "SELECT * FROM discovered_repositories WHERE id = ? AND org_id = ?";
const ORG_URLS = "SELECT url FROM repositories WHERE org_id = ?";
const LIVE_NAMES = "SELECT name FROM projects WHERE org_id = ? AND archived = 0";
const ACCEPT = "UPDATE discovered_repositories SET status = 'accepted', repository_id = ? WHERE id = ?";
const DISMISS = "UPDATE discovered_repositories SET status = 'dismissed' WHERE id = ? AND status = 'new'";

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
export function* listDiscovered(_core: Core, orgId: string, query: PageQuery) {
  const inProjects = new Set((yield* all<{ url: string }>(ORG_URLS, orgId)).map((r) => normalizeRepoUrl(r.url)));
  // Rows are left out after the query (URLs are compared normalised), so read on until n are kept:
  // a short page would otherwise end the list early.
  function* fetch(after: string[] | null, n: number): Q<DiscoveredRow[]> {
    const kept: DiscoveredRow[] = [];
    let cursor = after?.[0] ?? null;
    for (;;) {
      const rows = cursor ? yield* all<DiscoveredRow>(AFTER, orgId, cursor, n) : yield* all<DiscoveredRow>(FIRST, orgId, n);
      for (const r of rows) if (!inProjects.has(r.normalized_url) && kept.push(r) === n) return kept;
      if (rows.length < n) return kept;
      cursor = rows[rows.length - 1].id;
    }
  }
  const page = yield* pageOf(query, 1, fetch, (r) => [r.id], (r) => r);
  return { items: page.items.map(view), nextCursor: page.nextCursor };
}

function* pendingRows(_core: Core, orgId: string, ids: string[]): Q<DiscoveredRow[]> {
  const rows: DiscoveredRow[] = [];
  for (const id of new Set(ids)) {
    const row = yield* get<DiscoveredRow>(ONE, id, orgId);
    if (!row) throw notFound(`discovered repository ${id}`);
    rows.push(row);
  }
  const decided = rows.find((r) => r.status !== "new");
  if (decided) throw conflict(`discovered repository ${decided.id} was already ${decided.status}`, { id: decided.id, status: decided.status });
  return rows;
}

/** A project name not taken among the org's live projects: name, name-2, name-3... */
function freeName(taken: Set<string>, name: string): string {
  let candidate = name;
  for (let i = 2; taken.has(candidate.toLowerCase()); i++) candidate = `${name}-${i}`;
  taken.add(candidate.toLowerCase());
  return candidate;
}

/** Accepts them (run in a write); the ids of the projects they went to. */
function* accept(core: Core, orgId: string, ids: string[], projectId?: string): Q<string[]> {
  const rows = yield* pendingRows(core, orgId, ids);
  const target = projectId ? yield* projectRow(core, orgId, projectId) : null;
  if (target?.archived) throw conflict("the project is archived");
  const taken = new Set((yield* all<{ name: string }>(LIVE_NAMES, orgId)).map((r) => r.name.toLowerCase()));
  const projectIds: string[] = [];
  const now = iso();
  for (const row of rows) {
    const project = target ?? (yield* insertProject(core, orgId, { name: freeName(taken, row.name) }));
    const repo = yield* insertRepository(core, project, { url: row.url, ...(row.branch ? { branch: row.branch } : {}) }, "discovered");
    yield* run(ACCEPT, repo.id, row.id);
    // The workers that reported it already have it: readiness can run there at once.
    for (const x of JSON.parse(row.sightings) as { workerId: string; path: string }[]) {
      yield* upsertClone(core, { workerId: x.workerId, repositoryId: repo.id, orgId, status: "cloned", path: x.path, error: null, at: now });
    }
    if (!projectIds.includes(project.id)) projectIds.push(project.id);
  }
  return projectIds;
}

/** Accepts discovered repositories; a name or URL taken meanwhile is a 409. */
export async function acceptDiscovered(core: Core, orgId: string, ids: string[], projectId?: string): Promise<{ projects: ProjectRecord[] }> {
  let touched: string[];
  try {
    touched = await core.store.write(accept(core, orgId, ids, projectId));
  } catch (err) {
    return uniqueConflict(err);
  }
  forgetProjects(core);
  return { projects: await core.store.read(projectsOf(core, orgId, touched)) };
}

function* projectsOf(core: Core, orgId: string, ids: string[]): Q<ProjectRecord[]> {
  const projects: ProjectRecord[] = [];
  for (const id of ids) projects.push(yield* getProject(core, orgId, id));
  return projects;
}

export function* dismissDiscovered(core: Core, orgId: string, ids: string[]) {
  const rows = yield* pendingRows(core, orgId, ids);
  for (const r of rows) yield* run(DISMISS, r.id);
  return { dismissed: rows.map((r) => r.id) };
}
