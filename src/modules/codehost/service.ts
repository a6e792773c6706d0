// Installations, the person's connection, sync, and the synced repositories (SPEC §10). GitHub
// calls happen outside transactions; what they return is written in one short transaction after.
import { and, asc, eq, gt, or, sql } from "drizzle-orm";
import type { Octokit } from "@octokit/rest";
import type { Core } from "../../server/core";
import { conflict, forbidden, invalid } from "../../server/errors";
import { codehostConnections, codehostInstallations, codehostRepositories } from "../../db/schema";
import { iso } from "../../lib/time";
import { normalizeRepoUrl } from "../../protocol/repo-url";
import { pageOf } from "../orgs/paging";
import { appRow, consumeState, credentialsOf, newState, requireApp, type AppRow } from "./app";
import { all, exec, get, row, rows, type Q } from "../../db/query";
import { apiClient, appClient, githubFailure, oauthApp, statusOf, withInstallation } from "./github";

export type InstallationRow = typeof codehostInstallations.$inferSelect;
export type CodehostRepositoryRow = typeof codehostRepositories.$inferSelect;

export function* installationRecord(core: Core, row: InstallationRow) {
  const count = (yield* get<{ n: number }>("SELECT count(*) AS n FROM codehost_repositories WHERE installation_id = ?", row.id))!.n;
  return {
    id: row.id,
    account: { login: row.accountLogin, type: row.accountType, id: row.accountId },
    repositorySelection: row.repositorySelection,
    suspended: row.suspended,
    repositories: count,
    syncedAt: row.syncedAt,
  };
}

export function* installationsOf(core: Core, orgId: string): Q<InstallationRow[]> {
  return yield* rows(core.db.select().from(codehostInstallations).where(eq(codehostInstallations.orgId, orgId)).orderBy(asc(codehostInstallations.id)));
}

/** The records of the org's installations, each with its count of repositories. */
function* installationRecordsOf(core: Core, orgId: string) {
  const records = [];
  for (const r of yield* installationsOf(core, orgId)) records.push(yield* installationRecord(core, r));
  return records;
}

export function* codehostStatus(core: Core, orgId: string, userId: string) {
  const app = yield* appRow(core);
  const connection = yield* row(core.db.select().from(codehostConnections).where(eq(codehostConnections.userId, userId)));
  const owned = !!app && app.orgId === orgId;
  return {
    app: app ? { slug: app.slug, name: app.name, htmlUrl: app.htmlUrl, appId: app.appId, ownedByThisOrg: owned, integrationId: owned ? app.integrationId : null } : null,
    installations: yield* installationRecordsOf(core, orgId),
    connection: connection ? { login: connection.login } : null,
    githubUrl: core.config.github.url,
  };
}

/** A link that installs the app on a GitHub account; GitHub returns to the setup URL with the state. Run with core.store.write. */
export function* startInstallation(core: Core, orgId: string, userId: string) {
  const app = yield* requireApp(core);
  const state = yield* newState(core, "install", orgId, userId);
  return { url: `${core.config.github.url}/apps/${encodeURIComponent(app.slug)}/installations/new?state=${encodeURIComponent(state)}`, state };
}

interface GithubInstallation {
  id: number;
  account: { login: string; type: string; id: number } | null;
  repository_selection: string;
  suspended_at?: string | null;
}

interface GithubRepository {
  id: number;
  full_name: string;
  private: boolean;
  clone_url: string;
  html_url: string;
  default_branch?: string;
}

function installationValues(orgId: string, gh: GithubInstallation, now: string) {
  return {
    orgId,
    accountLogin: gh.account?.login ?? "",
    accountType: gh.account?.type ?? "User",
    accountId: gh.account?.id ?? 0,
    repositorySelection: gh.repository_selection,
    suspended: !!gh.suspended_at,
    updatedAt: now,
  };
}

/** Records an installation for the org; one bound to another org is refused (one installation, one org). */
function* bindInstallation(core: Core, orgId: string, gh: GithubInstallation): Q<void> {
  const existing = yield* row(core.db.select().from(codehostInstallations).where(eq(codehostInstallations.id, gh.id)));
  if (existing && existing.orgId !== orgId) throw conflict("this installation is already connected to another organization of this server", { reason: "installation_taken" });
  const now = iso();
  const values = installationValues(orgId, gh, now);
  if (existing) yield* exec(core.db.update(codehostInstallations).set(values).where(eq(codehostInstallations.id, gh.id)));
  else yield* exec(core.db.insert(codehostInstallations).values({ id: gh.id, ...values, createdAt: now }));
}

export function repositoryValues(orgId: string, installationId: number, r: GithubRepository, now: string): CodehostRepositoryRow {
  return {
    installationId,
    id: r.id,
    orgId,
    fullName: r.full_name,
    private: r.private,
    cloneUrl: r.clone_url,
    htmlUrl: r.html_url,
    defaultBranch: r.default_branch ?? "main",
    urlKey: normalizeRepoUrl(r.clone_url),
    syncedAt: now,
  };
}

/** Every repository the installation can reach, every page of them (octokit.paginate follows the Link headers). */
async function fetchRepositories(core: Core, app: AppRow, installationId: number): Promise<GithubRepository[]> {
  return withInstallation(core, credentialsOf(core, app), installationId, (octokit: Octokit) =>
    octokit.paginate("GET /installation/repositories", { per_page: 100 }) as Promise<GithubRepository[]>,
  );
}

/** Replaces the installation's recorded repositories with GitHub's list. */
function* replaceRepositories(core: Core, orgId: string, installationId: number, repos: GithubRepository[]): Q<void> {
  const now = iso();
  yield* exec(core.db.delete(codehostRepositories).where(eq(codehostRepositories.installationId, installationId)));
  for (const r of repos) yield* exec(core.db.insert(codehostRepositories).values(repositoryValues(orgId, installationId, r, now)));
  yield* exec(core.db.update(codehostInstallations).set({ syncedAt: now, updatedAt: now }).where(eq(codehostInstallations.id, installationId)));
}

async function syncRepositories(core: Core, app: AppRow, orgId: string, installationId: number): Promise<number> {
  let repos: GithubRepository[];
  try {
    repos = await fetchRepositories(core, app, installationId);
  } catch (err) {
    throw githubFailure(err, `listing the repositories of installation ${installationId}`);
  }
  await core.store.write(replaceRepositories(core, orgId, installationId, repos));
  return repos.length;
}

/**
 * The setup URL: GitHub's browser redirect after an installation (or its change). The state says
 * which org asked; without one (a change made at GitHub) only an installation known here is refreshed.
 */
export async function finishInstallation(core: Core, query: { installation_id?: string; setup_action?: string; state?: string }) {
  const app = await core.store.read(requireApp(core));
  const id = Number(query.installation_id);
  if (!query.installation_id || !Number.isSafeInteger(id) || id <= 0) throw invalid("installation_id is missing or not a number", [{ field: "installation_id", message: "GitHub's installation id" }]);
  let orgId: string;
  if (query.state) {
    const flow = await core.store.write(consumeState(core, "install", query.state));
    orgId = flow.orgId;
    // The state only says who asked, not which installation they made: anyone can send any id.
    await requireInstallationOfPerson(core, flow.userId, id);
  } else {
    const known = await core.store.read(row(core.db.select().from(codehostInstallations).where(eq(codehostInstallations.id, id))));
    // No state: nothing binds this browser to an org, so an unknown installation is not taken.
    if (!known) orgId = (await core.store.write(consumeState(core, "install", undefined))).orgId;
    else orgId = known.orgId;
  }
  let gh: GithubInstallation;
  try {
    // Asked of GitHub as the app: the id must be an installation of this app, whatever the browser says.
    gh = (await (await appClient(core, credentialsOf(core, app))).request("GET /app/installations/{installation_id}", { installation_id: id })).data as unknown as GithubInstallation;
  } catch (err) {
    throw githubFailure(err, `reading installation ${id}`);
  }
  await core.store.write(bindInstallation(core, orgId, gh));
  await syncRepositories(core, app, orgId, id);
  return { orgId, installationId: id };
}

/**
 * GitHub's advice for the setup URL: the installation_id is only a browser parameter, so check
 * with the person's own user token that they can reach it (GET /user/installations, every page).
 * Otherwise an admin of one org could bind an installation someone else made to their own org
 * and get tokens for its repositories.
 */
async function requireInstallationOfPerson(core: Core, userId: string, installationId: number) {
  const c = await core.store.read(row(core.db.select().from(codehostConnections).where(eq(codehostConnections.userId, userId))));
  if (!c)
    throw conflict("connect your GitHub account first (GitHub -> Connect your GitHub account, or POST /orgs/:orgId/codehost/user), then install the app again", {
      reason: "no_connection",
    });
  let mine: GithubInstallation[];
  try {
    mine = (await (await apiClient(core, core.sealer.open(c.tokenSealed))).paginate("GET /user/installations", { per_page: 100 })) as unknown as GithubInstallation[];
  } catch (err) {
    // GitHub no longer takes the person's token (expired or revoked): the same way out as without one.
    if (statusOf(err) === 401)
      throw conflict(`GitHub no longer accepts your connection (${c.login}): connect your GitHub account again, then install the app again`, { reason: "no_connection" });
    throw githubFailure(err, "listing the installations your GitHub account can reach");
  }
  if (!mine.some((i) => i.id === installationId))
    throw forbidden(`installation ${installationId} is not one your GitHub account (${c.login}) can reach; install the app from ao with the account connected here`);
}

/** The org's installations as GitHub lists them now; one uninstalled at GitHub while no webhook reached us goes, with its repositories. */
function* refreshInstallations(core: Core, orgId: string, ours: InstallationRow[], atGithub: Map<number, GithubInstallation>): Q<void> {
  const now = iso();
  for (const r of ours) {
    const gh = atGithub.get(r.id);
    if (!gh) yield* exec(core.db.delete(codehostInstallations).where(eq(codehostInstallations.id, r.id)));
    else yield* exec(core.db.update(codehostInstallations).set(installationValues(orgId, gh, now)).where(eq(codehostInstallations.id, r.id)));
  }
}

/** Sync now: the app's installations (all pages), and every page of each of this org's installations' repositories. */
export async function syncOrg(core: Core, orgId: string) {
  const app = await core.store.read(requireApp(core));
  let atGithubList: GithubInstallation[];
  try {
    atGithubList = (await (await appClient(core, credentialsOf(core, app))).paginate("GET /app/installations", { per_page: 100 })) as unknown as GithubInstallation[];
  } catch (err) {
    throw githubFailure(err, "listing the app's installations");
  }
  const atGithub = new Map(atGithubList.map((i) => [i.id, i]));
  const bound = new Map((await core.store.read(all<{ id: number; org_id: string }>("SELECT id, org_id FROM codehost_installations"))).map((r) => [r.id, r.org_id]));
  const ours = await core.store.read(installationsOf(core, orgId));
  await core.store.write(refreshInstallations(core, orgId, ours, atGithub));
  for (const r of ours) if (atGithub.has(r.id)) await syncRepositories(core, app, orgId, r.id);
  const installations = await core.store.read(installationRecordsOf(core, orgId));
  return {
    installations,
    repositories: installations.reduce((n, i) => n + i.repositories, 0),
    unclaimed: atGithubList.filter((i) => !bound.has(i.id)).length,
  };
}

export function* listRepositories(core: Core, orgId: string, q: { limit?: number; cursor?: string; q?: string }) {
  const needle = q.q?.trim().toLowerCase();
  return yield* pageOf(
    q,
    2,
    (after, n) =>
      rows(
        core.db
          .select()
          .from(codehostRepositories)
          .where(
            and(
              eq(codehostRepositories.orgId, orgId),
              // ESCAPE said out loud: PostgreSQL's default, SQLite has none.
              needle ? sql`lower(${codehostRepositories.fullName}) LIKE ${`%${needle.replace(/[%_\\]/g, "\\$&")}%`} ESCAPE '\\'` : undefined,
              after
                ? or(gt(codehostRepositories.fullName, after[0]), and(eq(codehostRepositories.fullName, after[0]), gt(codehostRepositories.id, Number(after[1]))))
                : undefined,
            ),
          )
          .orderBy(asc(codehostRepositories.fullName), asc(codehostRepositories.id))
          .limit(n),
      ),
    (r: CodehostRepositoryRow) => [r.fullName, String(r.id)],
    repositoryRecord,
  );
}

export const repositoryRecord = (r: CodehostRepositoryRow) => ({
  id: r.id,
  installationId: r.installationId,
  fullName: r.fullName,
  private: r.private,
  cloneUrl: r.cloneUrl,
  htmlUrl: r.htmlUrl,
  defaultBranch: r.defaultBranch,
});

/** The synced repository a project's repository URL names, in this org, on a live installation. */
export function* codehostRepositoryFor(core: Core, orgId: string, url: string): Q<(CodehostRepositoryRow & { suspended: boolean }) | null> {
  const row = yield* get<{ installation_id: number; id: number; full_name: string; clone_url: string; html_url: string; default_branch: string; private: number; suspended: number }>(
    `SELECT r.installation_id, r.id, r.full_name, r.clone_url, r.html_url, r.default_branch, r.private, i.suspended
     FROM codehost_repositories r JOIN codehost_installations i ON i.id = r.installation_id
     WHERE r.org_id = ? AND r.url_key = ? ORDER BY i.suspended ASC LIMIT 1`,
    orgId,
    normalizeRepoUrl(url),
  );
  if (!row) return null;
  return {
    installationId: row.installation_id,
    id: row.id,
    orgId,
    fullName: row.full_name,
    private: row.private === 1,
    cloneUrl: row.clone_url,
    htmlUrl: row.html_url,
    defaultBranch: row.default_branch,
    urlKey: normalizeRepoUrl(url),
    syncedAt: "",
    suspended: row.suspended === 1,
  };
}

// --- The person's own connection (OAuth web flow of the app) ---

export async function startUserConnection(core: Core, orgId: string, userId: string) {
  const { app, state } = await core.store.write(
    (function* () {
      const app = yield* requireApp(core);
      return { app, state: yield* newState(core, "user", orgId, userId) };
    })(),
  );
  const { url } = (await oauthApp(core, credentialsOf(core, app))).getWebFlowAuthorizationUrl({
    state,
    redirectUrl: `${core.config.publicUrl}/api/v1/codehost/user/callback`,
  });
  return { url, state };
}

export async function finishUserConnection(core: Core, code: string | undefined, state: string | undefined) {
  const app = await core.store.read(requireApp(core));
  const flow = await core.store.write(consumeState(core, "user", state));
  if (!code) throw invalid("the callback has no code", [{ field: "code", message: "required" }]);
  let auth: { token: string; refreshToken?: string; expiresAt?: string };
  let user: { login: string; id: number };
  try {
    const created = await (await oauthApp(core, credentialsOf(core, app))).createToken({ code, state: state!, redirectUrl: `${core.config.publicUrl}/api/v1/codehost/user/callback` } as any);
    auth = created.authentication as typeof auth;
    user = (await (await apiClient(core, auth.token)).request("GET /user")).data as { login: string; id: number };
  } catch (err) {
    throw githubFailure(err, "authorizing your GitHub account");
  }
  const now = iso();
  const values = {
    login: user.login,
    githubUserId: user.id,
    tokenSealed: core.sealer.seal(auth.token),
    refreshTokenSealed: auth.refreshToken ? core.sealer.seal(auth.refreshToken) : null,
    expiresAt: auth.expiresAt ?? null,
    updatedAt: now,
  };
  await core.store.write(
    exec(core.db.insert(codehostConnections).values({ userId: flow.userId, ...values, createdAt: now }).onConflictDoUpdate({ target: codehostConnections.userId, set: values })),
  );
  return { orgId: flow.orgId, login: user.login };
}

/** The person's own GitHub token, or 409 saying how to connect. */
export function* userToken(core: Core, userId: string): Q<{ login: string; token: string }> {
  const c = yield* row(core.db.select().from(codehostConnections).where(eq(codehostConnections.userId, userId)));
  if (!c) throw conflict("connect your GitHub account first (POST /orgs/:orgId/codehost/user)", { reason: "no_connection", field: "owner" });
  return { login: c.login, token: core.sealer.open(c.tokenSealed) };
}

