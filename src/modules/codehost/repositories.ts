// POST /codehost/repositories: a new repository at GitHub and a project holding it. An
// organization's repository is created through the app's installation on it (the app has
// administration: write); a personal account's through the person's own connection, because
// GitHub lets an app create repositories only in organizations.
import { and, eq, sql } from "drizzle-orm";
import type { Core } from "../../server/core";
import { conflict, invalid } from "../../server/errors";
import { codehostInstallations, codehostRepositories, projects, repositories } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { getProject, insertProject, refusingDuplicates, type RepositoryRow } from "../projects/service";
import { exec, row } from "../../db/query";
import { credentialsOf, requireApp } from "./app";
import { apiClient, githubFailure, statusOf, withInstallation } from "./github";
import { repositoryRecord, repositoryValues, userToken } from "./service";

export interface CreateRepositoryRequest {
  owner: string;
  name: string;
  private?: boolean;
  description?: string;
}

interface GithubRepository {
  id: number;
  full_name: string;
  private: boolean;
  clone_url: string;
  html_url: string;
  default_branch?: string;
}

export async function createCodehostRepository(core: Core, orgId: string, userId: string, body: CreateRepositoryRequest) {
  const app = await core.store.read(requireApp(core));
  const installation = await core.store.read(
    row(
      core.db
        .select()
        .from(codehostInstallations)
        .where(and(eq(codehostInstallations.orgId, orgId), sql`lower(${codehostInstallations.accountLogin}) = ${body.owner.toLowerCase()}`)),
    ),
  );
  const params = { name: body.name, private: body.private ?? true, description: body.description, auto_init: true };
  let created: GithubRepository;
  const installationId: number | null = installation?.id ?? null;
  try {
    if (installation && installation.accountType === "Organization") {
      if (installation.suspended) throw conflict(`the app's installation on ${installation.accountLogin} is suspended`, { field: "owner" });
      created = (await withInstallation(core, credentialsOf(core, app), installation.id, (o) => o.request("POST /orgs/{org}/repos", { org: installation.accountLogin, ...params })))
        .data as unknown as GithubRepository;
    } else {
      const me = await core.store.read(userToken(core, userId));
      if (me.login.toLowerCase() !== body.owner.toLowerCase()) {
        throw invalid(`owner must be an organization where the app is installed, or your own account (${me.login})`, [
          { field: "owner", message: "no installation of the app on this organization here, and not your GitHub login" },
        ]);
      }
      created = (await (await apiClient(core, me.token)).request("POST /user/repos", params)).data as unknown as GithubRepository;
    }
  } catch (err) {
    if (statusOf(err) === 422) throw conflict(`GitHub refused the repository ${body.owner}/${body.name}: it may exist already`, { field: "name" });
    throw githubFailure(err, `creating ${body.owner}/${body.name}`);
  }
  const now = iso();
  return core.store.write(refusingDuplicates(insertCreated(core, orgId, installationId, created, body.name, now)));
}

/** The created repository as synced, and a project holding it as its primary. */
function* insertCreated(core: Core, orgId: string, installationId: number | null, created: GithubRepository, name: string, now: string) {
  if (installationId !== null) yield* exec(core.db.insert(codehostRepositories).values(repositoryValues(orgId, installationId, created, now)).onConflictDoNothing());
  // The project takes the repository's name, or owner/name when a live project has that name.
  const taken = yield* row(core.db.select({ id: projects.id }).from(projects).where(and(eq(projects.orgId, orgId), eq(projects.name, name), eq(projects.archived, false))));
  const project = yield* insertProject(core, orgId, { name: taken ? created.full_name : name });
  // GitHub's clone URL is trusted as it is (the stand-in of tests answers http on loopback).
  const held: RepositoryRow = {
    id: newId("rep"),
    orgId,
    projectId: project.id,
    url: created.clone_url,
    name,
    branch: created.default_branch ?? "main",
    primary: true,
    createdAt: now,
    updatedAt: now,
  };
  yield* exec(core.db.insert(repositories).values(held));
  return { project: yield* getProject(core, orgId, project.id), repository: repositoryRecord(repositoryValues(orgId, installationId ?? 0, created, now)) };
}
