// Projects (SPEC §8): create, read, update, archive. Repositories are in repositories.ts.
// Every query is scoped by orgId: another org's project is "not found".
import { and, asc, desc, eq, lt, sql } from "drizzle-orm";
import type { Core } from "../../server/core";
import { conflict, invalid, notFound } from "../../server/errors";
import { projects, repositories } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { DEFAULT_LIMIT, decodeCursor, pageFrom } from "../tasks/cursor";
import { insertRepository, type NewRepositoryInput } from "./repositories";
import { exec, isUniqueViolation, row, rows, type Q } from "../../db/query";
import { isOneLine, LINE_MESSAGE } from "../../lib/text";
import { checkProjectPolicy } from "./policy";
import { assertPullRequestsPolicy } from "../codehost/policy";

export type ProjectRow = typeof projects.$inferSelect;
export type RepositoryRow = typeof repositories.$inferSelect;

export const repositoryRecord = (r: RepositoryRow) => ({ id: r.id, url: r.url, name: r.name, branch: r.branch, primary: r.primary });

export function projectRecord(p: ProjectRow, repos: RepositoryRow[]) {
  return {
    id: p.id,
    orgId: p.orgId,
    name: p.name,
    knowledge: p.knowledge,
    policy: p.policy,
    archived: p.archived,
    // The primary first, then in the order they were added.
    repositories: [...repos].sort((a, b) => Number(b.primary) - Number(a.primary) || (a.id < b.id ? -1 : 1)).map(repositoryRecord),
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  };
}

export type ProjectRecord = ReturnType<typeof projectRecord>;

/** A project of this org, or 404. */
export function* projectRow(core: Core, orgId: string, projectId: string): Q<ProjectRow> {
  const p = yield* row(core.db.select().from(projects).where(and(eq(projects.id, projectId), eq(projects.orgId, orgId))));
  if (!p) throw notFound("project");
  return p;
}

export function* repositoriesOf(core: Core, projectId: string): Q<RepositoryRow[]> {
  return yield* rows(core.db.select().from(repositories).where(eq(repositories.projectId, projectId)).orderBy(asc(repositories.id)));
}

export function* getProject(core: Core, orgId: string, projectId: string): Q<ProjectRecord> {
  const p = yield* projectRow(core, orgId, projectId);
  return projectRecord(p, yield* repositoriesOf(core, p.id));
}

export function* listProjects(core: Core, orgId: string, q: { limit?: number; cursor?: string; archived?: boolean }) {
  const limit = q.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(q.cursor, "prj");
  const probe = yield* rows(
    core.db
      .select()
      .from(projects)
      .where(and(eq(projects.orgId, orgId), q.archived ? undefined : eq(projects.archived, false), after ? lt(projects.id, after) : undefined))
      .orderBy(desc(projects.id))
      .limit(limit + 1),
  );
  const ids = probe.slice(0, limit).map((p) => p.id);
  // One SQL text whatever the page's size (json_each, not a list of placeholders).
  const repos = ids.length ? yield* rows(core.db.select().from(repositories).where(sql`${repositories.projectId} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`)) : [];
  const byProject = Map.groupBy(repos, (r) => r.projectId);
  return pageFrom(probe, limit, (p) => p.id, (p) => projectRecord(p, byProject.get(p.id) ?? []));
}

/**
 * Turns the unique-index refusals of the projects and repositories tables into 409s. SQLite names
 * the columns in its message, PostgreSQL the index.
 */
export function uniqueConflict(err: unknown): never {
  if (isUniqueViolation(err)) {
    const message = `${String((err as Error)?.message ?? "")} ${String((err as { constraint?: unknown }).constraint ?? "")}`;
    if (message.includes("projects.name") || message.includes("projects_org_name_live")) throw conflict("a project with this name already exists", { field: "name" });
    if (message.includes("repositories.url") || message.includes("repositories_project_url")) throw conflict("this project already has a repository with this URL", { field: "url" });
  }
  throw err;
}

/** A program whose unique-index refusals become 409s (uniqueConflict). */
export function* refusingDuplicates<T>(program: Q<T>): Q<T> {
  try {
    return yield* program;
  } catch (err) {
    uniqueConflict(err);
  }
}

export function assertPolicy(policy: unknown): asserts policy is Record<string, unknown> | undefined {
  if (policy !== undefined && (policy === null || typeof policy !== "object" || Array.isArray(policy))) {
    throw invalid("policy must be a JSON object", [{ field: "policy", message: "a JSON object" }]);
  }
  // The keys ao acts on (agent, budget, preferredAgent, ...): src/modules/projects/policy.ts.
  if (policy !== undefined) checkProjectPolicy(policy as Record<string, unknown>);
  assertPullRequestsPolicy(policy as Record<string, unknown> | undefined);
}

export function cleanName(name: string): string {
  const trimmed = name.trim();
  if (!isOneLine(trimmed)) throw invalid("the name is not valid", [{ field: "name", message: LINE_MESSAGE }]);
  return trimmed;
}

/** Inserts a project row. */
export function* insertProject(core: Core, orgId: string, input: { name: string; knowledge?: string; policy?: unknown }): Q<ProjectRow> {
  assertPolicy(input.policy);
  const now = iso();
  const p: ProjectRow = {
    id: newId("prj"),
    orgId,
    name: cleanName(input.name),
    knowledge: input.knowledge ?? "",
    policy: input.policy ?? {},
    archived: false,
    createdAt: now,
    updatedAt: now,
  };
  yield* exec(core.db.insert(projects).values(p));
  return p;
}

/** Run with core.store.write (a project and its repositories commit together). */
export function createProject(
  core: Core,
  orgId: string,
  input: { name: string; knowledge?: string; policy?: unknown; repositories?: NewRepositoryInput[] },
): Q<ProjectRecord> {
  return refusingDuplicates(
    (function* () {
      const p = yield* insertProject(core, orgId, input);
      for (const [i, r] of (input.repositories ?? []).entries()) yield* insertRepository(core, p, r, `repositories.${i}`);
      return yield* getProject(core, orgId, p.id);
    })(),
  );
}

/** Run with writeProjects; the caller announces project.policyChanged after the commit when the policy was given. */
export function* updateProject(
  core: Core,
  orgId: string,
  projectId: string,
  patch: { name?: string; knowledge?: string; policy?: unknown; archived?: false },
): Q<ProjectRecord> {
  assertPolicy(patch.policy);
  yield* projectRow(core, orgId, projectId);
  const set: Partial<ProjectRow> = { updatedAt: iso() };
  if (patch.name !== undefined) set.name = cleanName(patch.name);
  if (patch.knowledge !== undefined) set.knowledge = patch.knowledge;
  if (patch.policy !== undefined) set.policy = patch.policy as Record<string, unknown>;
  if (patch.archived === false) set.archived = false;
  yield* refusingDuplicates(exec(core.db.update(projects).set(set).where(eq(projects.id, projectId))));
  return yield* getProject(core, orgId, projectId);
}

/** DELETE archives: no new tasks, hidden from the list; existing tasks and repositories stay. Run with writeProjects. */
export function* archiveProject(core: Core, orgId: string, projectId: string): Q<ProjectRecord> {
  const p = yield* projectRow(core, orgId, projectId);
  if (!p.archived) yield* exec(core.db.update(projects).set({ archived: true, updatedAt: iso() }).where(eq(projects.id, projectId)));
  return yield* getProject(core, orgId, projectId);
}
