// Repositories of a project (SPEC §8): add, move in, rename / change branch / make primary, split, remove.
// Invariant: a project that has repositories has exactly one primary (the first one added, until
// another is made primary); moving or splitting one out fixes the primaries on both sides. The
// partial unique index repositories_one_primary guards it in the database.
import { forgetProjects } from "./cache";
import { and, asc, eq, ne } from "drizzle-orm";
import type { Core } from "../../server/core";
import { conflict, invalid, notFound } from "../../server/errors";
import { projects, repositories } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { isBranchName, parseGitUrl } from "./urls";
import {
  getProject,
  projectRow,
  repositoryRecord,
  txInsertProject,
  uniqueConflict,
  type ProjectRecord,
  type ProjectRow,
  type RepositoryRow,
} from "./service";

export interface NewRepositoryInput {
  url: string;
  name?: string;
  branch?: string;
}

function assertLive(p: ProjectRow) {
  if (p.archived) throw conflict("the project is archived; restore it first (PATCH {archived: false})");
}

function assertBranch(branch: string, field: string) {
  if (!isBranchName(branch)) throw invalid("the branch name is not valid", [{ field, message: "a git branch name such as main or release/1.0" }]);
}

function repositoryRow(core: Core, projectId: string, repositoryId: string): RepositoryRow {
  const r = core.db.select().from(repositories).where(and(eq(repositories.id, repositoryId), eq(repositories.projectId, projectId))).get();
  if (!r) throw notFound("repository");
  return r;
}

const touch = (core: Core, projectId: string, now: string) =>
  core.db.update(projects).set({ updatedAt: now }).where(eq(projects.id, projectId)).run();

/** When a project has repositories but no primary, the oldest becomes primary. */
function ensurePrimary(core: Core, projectId: string) {
  const repos = core.db.select().from(repositories).where(eq(repositories.projectId, projectId)).orderBy(asc(repositories.id)).all();
  if (repos.length > 0 && !repos.some((r) => r.primary)) {
    core.db.update(repositories).set({ primary: true }).where(eq(repositories.id, repos[0].id)).run();
  }
}

/** Adds a repository by URL inside the caller's transaction. */
export function txAddRepository(core: Core, project: ProjectRow, input: NewRepositoryInput, field = "url"): RepositoryRow {
  const parsed = parseGitUrl(input.url);
  if (!parsed) {
    throw invalid("the repository URL is not valid", [
      { field: field === "url" ? "url" : `${field}.url`, message: "an https://, ssh:// or user@host:path git URL (no passwords)" },
    ]);
  }
  if (input.branch !== undefined) assertBranch(input.branch, field === "url" ? "branch" : `${field}.branch`);
  const now = iso();
  const hasAny = core.db.select({ id: repositories.id }).from(repositories).where(eq(repositories.projectId, project.id)).limit(1).get();
  const row: RepositoryRow = {
    id: newId("rep"),
    orgId: project.orgId,
    projectId: project.id,
    url: parsed.url,
    name: input.name ?? parsed.name,
    branch: input.branch ?? "main",
    primary: !hasAny,
    createdAt: now,
    updatedAt: now,
  };
  core.db.insert(repositories).values(row).run();
  touch(core, project.id, now);
  return row;
}

type Change = { project: ProjectRecord; repository: ReturnType<typeof repositoryRecord> };

function run<T>(core: Core, fn: () => T): T {
  try {
    return core.sqlite.transaction(fn).immediate();
  } catch (err) {
    uniqueConflict(err);
  } finally {
    forgetProjects(core);
  }
}

function answer(core: Core, orgId: string, projectId: string, repositoryId: string): Change {
  const project = getProject(core, orgId, projectId);
  return { project, repository: project.repositories.find((r) => r.id === repositoryId)! };
}

const ADD_FIELDS = ["url", "name", "branch"] as const;
const MOVE_FIELDS = ["fromProjectId", "repositoryId"] as const;
const EITHER = "give either url (with name and branch if wanted), or fromProjectId and repositoryId";

type RepositoryRequest = Partial<NewRepositoryInput & { fromProjectId: string; repositoryId: string }>;

/** Which of the two forms of POST .../repositories a body is; a body with both, or neither, is refused. */
export function repositoryRequest(body: RepositoryRequest): { add: NewRepositoryInput } | { move: { fromProjectId: string; repositoryId: string } } {
  const given = (fields: readonly (keyof RepositoryRequest)[]) => fields.filter((f) => body[f] !== undefined);
  const adding = given(ADD_FIELDS);
  const moving = given(MOVE_FIELDS);
  if (adding.length && moving.length) {
    const fields = body.url !== undefined ? moving : adding;
    throw invalid(
      `a repository is either added (url) or moved in (fromProjectId, repositoryId), not both: ${[...adding, ...moving].join(", ")} given`,
      fields.map((field) => ({ field, message: body.url !== undefined ? "not with url: " + EITHER : "only with url: " + EITHER })),
    );
  }
  if (body.url !== undefined) return { add: { url: body.url, name: body.name, branch: body.branch } };
  if (body.fromProjectId !== undefined && body.repositoryId !== undefined) return { move: { fromProjectId: body.fromProjectId, repositoryId: body.repositoryId } };
  const missing = moving.length ? MOVE_FIELDS.filter((f) => body[f] === undefined) : (["url"] as const);
  throw invalid(EITHER, missing.map((field) => ({ field, message: moving.length ? `required with ${moving.join(", ")}` : `required unless moving a repository in: ${EITHER}` })));
}

export function addRepository(core: Core, orgId: string, projectId: string, input: NewRepositoryInput): Change {
  const id = run(core, () => {
    const p = projectRow(core, orgId, projectId);
    assertLive(p);
    return txAddRepository(core, p, input).id;
  });
  return answer(core, orgId, projectId, id);
}

/** Moves a repository of another project of the org into this one, keeping its id. */
export function moveRepository(core: Core, orgId: string, projectId: string, input: { fromProjectId: string; repositoryId: string }): Change {
  run(core, () => {
    const target = projectRow(core, orgId, projectId);
    assertLive(target);
    const source = projectRow(core, orgId, input.fromProjectId);
    const repo = repositoryRow(core, source.id, input.repositoryId);
    if (source.id === target.id) throw conflict("the repository is already in this project");
    const now = iso();
    const targetHasAny = core.db.select({ id: repositories.id }).from(repositories).where(eq(repositories.projectId, target.id)).limit(1).get();
    core.db
      .update(repositories)
      .set({ projectId: target.id, primary: !targetHasAny, updatedAt: now })
      .where(eq(repositories.id, repo.id))
      .run();
    ensurePrimary(core, source.id);
    touch(core, source.id, now);
    touch(core, target.id, now);
  });
  return answer(core, orgId, projectId, input.repositoryId);
}

export function updateRepository(
  core: Core,
  orgId: string,
  projectId: string,
  repositoryId: string,
  patch: { name?: string; branch?: string; primary?: boolean },
): Change {
  run(core, () => {
    const p = projectRow(core, orgId, projectId);
    assertLive(p);
    const repo = repositoryRow(core, p.id, repositoryId);
    if (patch.branch !== undefined) assertBranch(patch.branch, "branch");
    if (patch.primary === false && repo.primary) {
      throw conflict("a project with repositories has exactly one primary: make another repository primary instead");
    }
    const now = iso();
    if (patch.primary === true && !repo.primary) {
      // Unset first: the partial unique index allows one primary per project at any moment.
      core.db
        .update(repositories)
        .set({ primary: false, updatedAt: now })
        .where(and(eq(repositories.projectId, p.id), ne(repositories.id, repo.id), eq(repositories.primary, true)))
        .run();
    }
    const set: Partial<RepositoryRow> = { updatedAt: now };
    if (patch.name !== undefined) set.name = patch.name;
    if (patch.branch !== undefined) set.branch = patch.branch;
    if (patch.primary === true) set.primary = true;
    core.db.update(repositories).set(set).where(eq(repositories.id, repo.id)).run();
    touch(core, p.id, now);
  });
  return answer(core, orgId, projectId, repositoryId);
}

/**
 * Removes a repository from the project; the next oldest becomes primary when it was the
 * primary. Tasks never point at a repository (they run in whatever the primary is when they
 * start), so they keep their record; the workers' clone records of it go with it.
 */
export function removeRepository(core: Core, orgId: string, projectId: string, repositoryId: string): Change {
  const removed = run(core, () => {
    const p = projectRow(core, orgId, projectId);
    assertLive(p);
    const repo = repositoryRow(core, p.id, repositoryId);
    core.db.delete(repositories).where(eq(repositories.id, repo.id)).run();
    // Found on a worker and accepted into this project: listed as discovered again while a worker has it.
    core.sqlite.query("UPDATE discovered_repositories SET status = 'new', repository_id = NULL WHERE repository_id = ? AND status = 'accepted'").run(repo.id);
    ensurePrimary(core, p.id);
    touch(core, p.id, iso());
    return repo;
  });
  return { project: getProject(core, orgId, projectId), repository: repositoryRecord({ ...removed, primary: false }) };
}

/** A free project name: `base`, else `base-2`, `base-3`... */
function freeName(core: Core, orgId: string, base: string): string {
  for (let n = 1; ; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    const taken = core.db
      .select({ id: projects.id })
      .from(projects)
      .where(and(eq(projects.orgId, orgId), eq(projects.name, name), eq(projects.archived, false)))
      .get();
    if (!taken) return name;
  }
}

/** Moves the repository into a new project of its own (keeping its id); 201 {project, from}. */
export function splitRepository(core: Core, orgId: string, projectId: string, repositoryId: string, input: { name?: string } = {}) {
  const newId_ = run(core, () => {
    const p = projectRow(core, orgId, projectId);
    assertLive(p);
    const repo = repositoryRow(core, p.id, repositoryId);
    const fresh = txInsertProject(core, orgId, { name: input.name ?? freeName(core, orgId, repo.name), policy: p.policy });
    const now = iso();
    core.db.update(repositories).set({ projectId: fresh.id, primary: true, updatedAt: now }).where(eq(repositories.id, repo.id)).run();
    ensurePrimary(core, p.id);
    touch(core, p.id, now);
    return fresh.id;
  });
  return { project: getProject(core, orgId, newId_), from: getProject(core, orgId, projectId) };
}
