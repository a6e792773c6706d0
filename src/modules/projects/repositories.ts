// Repositories of a project (SPEC §8): add, move in, rename / change branch / make primary, split, remove.
// Invariant: a project that has repositories has exactly one primary (the first one added, until
// another is made primary); moving or splitting one out fixes the primaries on both sides. The
// partial unique index repositories_one_primary guards it in the database. A project with
// unfinished reviews keeps its last repository (assertNotLastForReviews).
import { and, asc, eq, ne } from "drizzle-orm";
import type { Core } from "../../server/core";
import { conflict, invalid, notFound } from "../../server/errors";
import { projects, repositories } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { isBranchName, parseGitUrl } from "./urls";
import { normalizeRepoUrl } from "../../protocol/repo-url";
import { exec, row, rows, run, type Q } from "../../db/query";
import { unfinishedReviews } from "../tasks/service";
import {
  getProject,
  insertProject,
  projectRow,
  refusingDuplicates,
  repositoryRecord,
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

function* repositoryRow(core: Core, projectId: string, repositoryId: string): Q<RepositoryRow> {
  const r = yield* row(core.db.select().from(repositories).where(and(eq(repositories.id, repositoryId), eq(repositories.projectId, projectId))));
  if (!r) throw notFound("repository");
  return r;
}

/**
 * The URLs of the project's repositories, read once for the two things a repository joining it
 * needs: whether it has any (the first one is primary) and whether it has this one (assertNewUrl).
 */
function* urlsOf(core: Core, projectId: string): Q<string[]> {
  return (yield* rows(core.db.select({ url: repositories.url }).from(repositories).where(eq(repositories.projectId, projectId)))).map((r) => r.url);
}

/**
 * Refuses a repository the project already has under another spelling of its URL (GitHub.com for
 * github.com, the .git suffix, ssh for https: host and path compared as workers' clones are). The
 * unique index catches the same spelling; the URLs are read in the write, so no other write comes between.
 */
function assertNewUrl(urls: string[], url: string, field: string) {
  const same = normalizeRepoUrl(url);
  if (urls.some((u) => normalizeRepoUrl(u) === same)) throw conflict("this project already has a repository with this URL", { field });
}

/**
 * Refuses to take the project's last repository away (`how`: removed, moved...) while reviews of the
 * project are unfinished: each runs in a checkout of it, and a worker fails one in a project without
 * any. Counted in the write that would take it, so a review created meanwhile either counts or is
 * refused itself for want of a repository (txCreateTask).
 */
function* assertNotLastForReviews(core: Core, project: ProjectRow, how: string): Q<void> {
  if ((yield* urlsOf(core, project.id)).length > 1) return;
  const n = yield* unfinishedReviews(project.orgId, project.id);
  if (n === 0) return;
  const reviews = n === 1 ? "1 unfinished review of this project needs" : `${n} unfinished reviews of this project need`;
  throw conflict(`${reviews} a repository to review, and this is its last one: it cannot be ${how} until they finish or are cancelled, or another repository is added`, {
    unfinishedReviews: n,
  });
}

const touch = (core: Core, projectId: string, now: string) => exec(core.db.update(projects).set({ updatedAt: now }).where(eq(projects.id, projectId)));

/** When a project has repositories but no primary, the oldest becomes primary. */
function* ensurePrimary(core: Core, projectId: string): Q<void> {
  const repos = yield* rows(core.db.select().from(repositories).where(eq(repositories.projectId, projectId)).orderBy(asc(repositories.id)));
  if (repos.length > 0 && !repos.some((r) => r.primary)) {
    yield* exec(core.db.update(repositories).set({ primary: true }).where(eq(repositories.id, repos[0].id)));
  }
}

/** Adds a repository by URL to a project (inside the caller's write). */
export function* insertRepository(core: Core, project: ProjectRow, input: NewRepositoryInput, field = "url"): Q<RepositoryRow> {
  const parsed = parseGitUrl(input.url);
  if (!parsed) {
    throw invalid("the repository URL is not valid", [
      { field: field === "url" ? "url" : `${field}.url`, message: "an https://, ssh:// or user@host:path git URL (no passwords)" },
    ]);
  }
  if (input.branch !== undefined) assertBranch(input.branch, field === "url" ? "branch" : `${field}.branch`);
  const urls = yield* urlsOf(core, project.id);
  assertNewUrl(urls, parsed.url, field === "url" ? "url" : `${field}.url`);
  const now = iso();
  const r: RepositoryRow = {
    id: newId("rep"),
    orgId: project.orgId,
    projectId: project.id,
    url: parsed.url,
    name: input.name ?? parsed.name,
    branch: input.branch ?? "main",
    primary: urls.length === 0,
    createdAt: now,
    updatedAt: now,
  };
  yield* exec(core.db.insert(repositories).values(r));
  yield* touch(core, project.id, now);
  return r;
}

type Change = { project: ProjectRecord; repository: ReturnType<typeof repositoryRecord> };

function* answer(core: Core, orgId: string, projectId: string, repositoryId: string): Q<Change> {
  const project = yield* getProject(core, orgId, projectId);
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

// The changes below are programs to run with writeProjects (cache.ts): one transaction, then the
// cached project rows are forgotten.

export function addRepository(core: Core, orgId: string, projectId: string, input: NewRepositoryInput): Q<Change> {
  return refusingDuplicates(
    (function* () {
      const p = yield* projectRow(core, orgId, projectId);
      assertLive(p);
      const added = yield* insertRepository(core, p, input);
      return yield* answer(core, orgId, projectId, added.id);
    })(),
  );
}

/** Moves a repository of another project of the org into this one, keeping its id. */
export function moveRepository(core: Core, orgId: string, projectId: string, input: { fromProjectId: string; repositoryId: string }): Q<Change> {
  return refusingDuplicates(
    (function* () {
      const target = yield* projectRow(core, orgId, projectId);
      assertLive(target);
      const source = yield* projectRow(core, orgId, input.fromProjectId);
      const repo = yield* repositoryRow(core, source.id, input.repositoryId);
      if (source.id === target.id) throw conflict("the repository is already in this project");
      const targetUrls = yield* urlsOf(core, target.id);
      assertNewUrl(targetUrls, repo.url, "repositoryId");
      yield* assertNotLastForReviews(core, source, "moved to another project");
      const now = iso();
      yield* exec(core.db.update(repositories).set({ projectId: target.id, primary: targetUrls.length === 0, updatedAt: now }).where(eq(repositories.id, repo.id)));
      yield* ensurePrimary(core, source.id);
      yield* touch(core, source.id, now);
      yield* touch(core, target.id, now);
      return yield* answer(core, orgId, projectId, input.repositoryId);
    })(),
  );
}

export function updateRepository(
  core: Core,
  orgId: string,
  projectId: string,
  repositoryId: string,
  patch: { name?: string; branch?: string; primary?: boolean },
): Q<Change> {
  return refusingDuplicates(
    (function* () {
      const p = yield* projectRow(core, orgId, projectId);
      assertLive(p);
      const repo = yield* repositoryRow(core, p.id, repositoryId);
      if (patch.branch !== undefined) assertBranch(patch.branch, "branch");
      if (patch.primary === false && repo.primary) {
        throw conflict("a project with repositories has exactly one primary: make another repository primary instead");
      }
      const now = iso();
      if (patch.primary === true && !repo.primary) {
        // Unset first: the partial unique index allows one primary per project at any moment.
        yield* exec(
          core.db
            .update(repositories)
            .set({ primary: false, updatedAt: now })
            .where(and(eq(repositories.projectId, p.id), ne(repositories.id, repo.id), eq(repositories.primary, true))),
        );
      }
      const set: Partial<RepositoryRow> = { updatedAt: now };
      if (patch.name !== undefined) set.name = patch.name;
      if (patch.branch !== undefined) set.branch = patch.branch;
      if (patch.primary === true) set.primary = true;
      yield* exec(core.db.update(repositories).set(set).where(eq(repositories.id, repo.id)));
      yield* touch(core, p.id, now);
      return yield* answer(core, orgId, projectId, repositoryId);
    })(),
  );
}

/**
 * Removes a repository from the project; the next oldest becomes primary when it was the
 * primary. Tasks never point at a repository (they run in whatever the primary is when they
 * start), so they keep their record, but the last one stays while reviews need it; the workers'
 * clone records of it go with it.
 */
export function removeRepository(core: Core, orgId: string, projectId: string, repositoryId: string): Q<Change> {
  return refusingDuplicates(
    (function* () {
      const p = yield* projectRow(core, orgId, projectId);
      assertLive(p);
      const repo = yield* repositoryRow(core, p.id, repositoryId);
      yield* assertNotLastForReviews(core, p, "removed");
      yield* exec(core.db.delete(repositories).where(eq(repositories.id, repo.id)));
      // Found on a worker and accepted into this project: listed as discovered again while a worker has it.
      yield* run("UPDATE discovered_repositories SET status = 'new', repository_id = NULL WHERE repository_id = ? AND status = 'accepted'", repo.id);
      yield* ensurePrimary(core, p.id);
      yield* touch(core, p.id, iso());
      return { project: yield* getProject(core, orgId, projectId), repository: repositoryRecord({ ...repo, primary: false }) };
    })(),
  );
}

/** A free project name: `base`, else `base-2`, `base-3`... */
function* freeName(core: Core, orgId: string, base: string): Q<string> {
  for (let n = 1; ; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    const taken = yield* row(
      core.db
        .select({ id: projects.id })
        .from(projects)
        .where(and(eq(projects.orgId, orgId), eq(projects.name, name), eq(projects.archived, false))),
    );
    if (!taken) return name;
  }
}

/** Moves the repository into a new project of its own (keeping its id); 201 {project, from}. */
export function splitRepository(core: Core, orgId: string, projectId: string, repositoryId: string, input: { name?: string } = {}) {
  return refusingDuplicates(
    (function* () {
      const p = yield* projectRow(core, orgId, projectId);
      assertLive(p);
      const repo = yield* repositoryRow(core, p.id, repositoryId);
      yield* assertNotLastForReviews(core, p, "split into a project of its own");
      const fresh = yield* insertProject(core, orgId, { name: input.name ?? (yield* freeName(core, orgId, repo.name)), policy: p.policy });
      const now = iso();
      yield* exec(core.db.update(repositories).set({ projectId: fresh.id, primary: true, updatedAt: now }).where(eq(repositories.id, repo.id)));
      yield* ensurePrimary(core, p.id);
      yield* touch(core, p.id, now);
      return { project: yield* getProject(core, orgId, fresh.id), from: yield* getProject(core, orgId, projectId) };
    })(),
  );
}
