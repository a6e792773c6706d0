// Projects (SPEC §8): create, read, update, archive. Repositories are in repositories.ts.
// Every query is scoped by orgId: another org's project is "not found".
import { forgetProjects } from "./cache";
import { and, asc, desc, eq, inArray, lt } from "drizzle-orm";
import type { Core } from "../../server/core";
import { conflict, invalid, notFound } from "../../server/errors";
import { projects, repositories } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { DEFAULT_LIMIT, decodeCursor, pageFrom } from "../tasks/cursor";
import { txAddRepository, type NewRepositoryInput } from "./repositories";
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
export function projectRow(core: Core, orgId: string, projectId: string): ProjectRow {
  const p = core.db.select().from(projects).where(and(eq(projects.id, projectId), eq(projects.orgId, orgId))).get();
  if (!p) throw notFound("project");
  return p;
}

export function repositoriesOf(core: Core, projectId: string): RepositoryRow[] {
  return core.db.select().from(repositories).where(eq(repositories.projectId, projectId)).orderBy(asc(repositories.id)).all();
}

export function getProject(core: Core, orgId: string, projectId: string): ProjectRecord {
  const p = projectRow(core, orgId, projectId);
  return projectRecord(p, repositoriesOf(core, p.id));
}

export function listProjects(core: Core, orgId: string, q: { limit?: number; cursor?: string; archived?: boolean }) {
  const limit = q.limit ?? DEFAULT_LIMIT;
  const after = decodeCursor(q.cursor, "prj");
  const probe = core.db
    .select()
    .from(projects)
    .where(and(eq(projects.orgId, orgId), q.archived ? undefined : eq(projects.archived, false), after ? lt(projects.id, after) : undefined))
    .orderBy(desc(projects.id))
    .limit(limit + 1)
    .all();
  const ids = probe.slice(0, limit).map((p) => p.id);
  const repos = ids.length ? core.db.select().from(repositories).where(inArray(repositories.projectId, ids)).all() : [];
  const byProject = Map.groupBy(repos, (r) => r.projectId);
  return pageFrom(probe, limit, (p) => p.id, (p) => projectRecord(p, byProject.get(p.id) ?? []));
}

/** Turns the unique-index refusals of the projects and repositories tables into 409s. */
export function uniqueConflict(err: unknown): never {
  const message = String((err as Error)?.message ?? "");
  if ((err as { code?: string }).code === "SQLITE_CONSTRAINT_UNIQUE") {
    if (message.includes("projects.name")) throw conflict("a project with this name already exists", { field: "name" });
    if (message.includes("repositories.url")) throw conflict("this project already has a repository with this URL", { field: "url" });
  }
  throw err;
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

/** Inserts a project row inside the caller's transaction. */
export function txInsertProject(core: Core, orgId: string, input: { name: string; knowledge?: string; policy?: unknown }): ProjectRow {
  assertPolicy(input.policy);
  const now = iso();
  const row: ProjectRow = {
    id: newId("prj"),
    orgId,
    name: cleanName(input.name),
    knowledge: input.knowledge ?? "",
    policy: input.policy ?? {},
    archived: false,
    createdAt: now,
    updatedAt: now,
  };
  core.db.insert(projects).values(row).run();
  return row;
}

export function createProject(
  core: Core,
  orgId: string,
  input: { name: string; knowledge?: string; policy?: unknown; repositories?: NewRepositoryInput[] },
): ProjectRecord {
  try {
    const id = core.sqlite
      .transaction(() => {
        const p = txInsertProject(core, orgId, input);
        input.repositories?.forEach((r, i) => txAddRepository(core, p, r, `repositories.${i}`));
        return p.id;
      })
      .immediate();
    return getProject(core, orgId, id);
  } catch (err) {
    uniqueConflict(err);
  }
}

export function updateProject(
  core: Core,
  orgId: string,
  projectId: string,
  patch: { name?: string; knowledge?: string; policy?: unknown; archived?: false },
): ProjectRecord {
  assertPolicy(patch.policy);
  try {
    core.sqlite
      .transaction(() => {
        projectRow(core, orgId, projectId);
        const set: Partial<ProjectRow> = { updatedAt: iso() };
        if (patch.name !== undefined) set.name = cleanName(patch.name);
        if (patch.knowledge !== undefined) set.knowledge = patch.knowledge;
        if (patch.policy !== undefined) set.policy = patch.policy as Record<string, unknown>;
        if (patch.archived === false) set.archived = false;
        core.db.update(projects).set(set).where(eq(projects.id, projectId)).run();
      })
      .immediate();
  } catch (err) {
    uniqueConflict(err);
  } finally {
    forgetProjects(core);
  }
  if (patch.policy !== undefined) core.events.emit("project.policyChanged", { orgId, projectId });
  return getProject(core, orgId, projectId);
}

/** DELETE archives: no new tasks, hidden from the list; existing tasks and repositories stay. */
export function archiveProject(core: Core, orgId: string, projectId: string): ProjectRecord {
  const p = projectRow(core, orgId, projectId);
  if (!p.archived) core.db.update(projects).set({ archived: true, updatedAt: iso() }).where(eq(projects.id, projectId)).run();
  forgetProjects(core);
  return getProject(core, orgId, projectId);
}
