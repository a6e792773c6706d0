// The app's own webhook events, after the integration checked their signature with the app's
// webhook secret: installation and installation_repositories keep the record current without a
// sync; pull_request closed / reopened move the pull request of a task. Other events (issues,
// comments, labeled pull requests) go on to the github integration's usual interpretation.
import { and, eq, sql } from "drizzle-orm";
import type { Core } from "../../server/core";
import { codehostInstallations, codehostRepositories } from "../../db/schema";
import { iso } from "../../lib/time";
import type { PullRequestInfo, TaskRow } from "../tasks/record";
import { txChangeTask, type TaskChange } from "../tasks/store";
import { appRow, type AppRow } from "./app";
import { forgetInstallationTokens } from "./github";
import { repositoryValues } from "./service";
import { normalizeRepoUrl } from "../../protocol/repo-url";
import { all, exec, get, row, type Q } from "../../db/query";

export interface AppEventResult {
  /** Why this delivery is done with (answered 200 ignored with this reason), or null: interpret it as usual. */
  handled: string | null;
  changes: TaskChange[];
}

/** The app whose webhooks this integration receives, or null. */
export function* appOfIntegration(core: Core, integrationId: string): Q<AppRow | null> {
  const app = yield* appRow(core);
  return app?.integrationId === integrationId ? app : null;
}

const field = (value: unknown, path: string): any => path.split(".").reduce((v: any, k) => (v && typeof v === "object" ? v[k] : undefined), value);

/** The installation a payload names, when it is connected to an org here. */
function* knownInstallation(core: Core, payload: unknown) {
  const installationId = Number(field(payload, "installation.id"));
  if (!Number.isSafeInteger(installationId)) return undefined;
  return yield* row(core.db.select().from(codehostInstallations).where(eq(codehostInstallations.id, installationId)));
}

/** Runs inside the delivery's write. */
export function* appEvent(core: Core, event: string | null, payload: unknown): Q<AppEventResult> {
  const action = field(payload, "action");
  const installationId = Number(field(payload, "installation.id"));
  const known = yield* knownInstallation(core, payload);
  const now = iso();
  switch (event) {
    case "installation": {
      if (!known) return { handled: "installation not connected to an organization here (install it from ao to connect it)", changes: [] };
      // Deleted, suspended, new permissions accepted: GitHub has revoked or changed its tokens.
      forgetInstallationTokens(core, installationId);
      if (action === "deleted") {
        yield* exec(core.db.delete(codehostInstallations).where(eq(codehostInstallations.id, installationId)));
        return { handled: "installation removed", changes: [] };
      }
      const set: Partial<typeof codehostInstallations.$inferInsert> = { updatedAt: now };
      if (action === "suspend") set.suspended = true;
      if (action === "unsuspend") set.suspended = false;
      const selection = field(payload, "installation.repository_selection");
      if (typeof selection === "string") set.repositorySelection = selection;
      yield* exec(core.db.update(codehostInstallations).set(set).where(eq(codehostInstallations.id, installationId)));
      // "created" lists the repositories the installation can reach.
      const repos = field(payload, "repositories");
      if (action === "created" && Array.isArray(repos)) yield* addRepositories(core, known.orgId, installationId, repos, now);
      return { handled: `installation ${String(action)} recorded`, changes: [] };
    }
    case "installation_repositories": {
      if (!known) return { handled: "installation not connected to an organization here", changes: [] };
      const added = field(payload, "repositories_added");
      const removed = field(payload, "repositories_removed");
      if (Array.isArray(added)) yield* addRepositories(core, known.orgId, installationId, added, now);
      if (Array.isArray(removed) && removed.length) {
        const ids = removed.map((r) => Number(r?.id)).filter(Number.isSafeInteger);
        if (ids.length) {
          // json_each gives text on PostgreSQL: the ids are numbers.
          const listed = sql`${codehostRepositories.id} IN (SELECT CAST(value AS BIGINT) FROM json_each(${JSON.stringify(ids)}))`;
          yield* exec(core.db.delete(codehostRepositories).where(and(eq(codehostRepositories.installationId, installationId), listed)));
        }
      }
      return { handled: `repositories of installation ${installationId} updated`, changes: [] };
    }
    case "pull_request": {
      if (action !== "closed" && action !== "reopened") return { handled: null, changes: [] };
      if (!known) return { handled: "installation not connected to an organization here", changes: [] };
      const state: PullRequestInfo["state"] = action === "reopened" ? "open" : field(payload, "pull_request.merged") ? "merged" : "closed";
      const number = Number(field(payload, "pull_request.number"));
      const repository = String(field(payload, "repository.full_name") ?? "");
      const changes: TaskChange[] = [];
      for (const task of yield* tasksOfPull(known.orgId, repository, number, String(field(payload, "pull_request.head.ref") ?? ""))) {
        const current = JSON.parse(task.pull_request!) as PullRequestInfo;
        if (current.state === state) continue;
        const next = { ...current, state };
        const actor = field(payload, "sender.login");
        changes.push(
          yield* txChangeTask(core, known.orgId, task.id, () => ({
            patch: { pull_request: JSON.stringify(next) },
            events: [{ type: "pull_request", data: { action: state === "open" ? "reopened" : state, number, url: current.url, ...(actor ? { by: String(actor) } : {}) } }],
          })),
        );
      }
      return { handled: changes.length ? `pull request #${number} is ${state}` : `no task has pull request #${number} of ${repository}`, changes };
    }
    default:
      return { handled: null, changes: [] };
  }
}

function* addRepositories(core: Core, orgId: string, installationId: number, repos: any[], now: string): Q<void> {
  for (const r of repos) {
    const id = Number(r?.id);
    const fullName = typeof r?.full_name === "string" ? r.full_name : null;
    if (!Number.isSafeInteger(id) || !fullName) continue;
    // Webhook payloads carry the short form of a repository: its URLs follow from the web host.
    const htmlUrl = typeof r.html_url === "string" ? r.html_url : `${core.config.github.url}/${fullName}`;
    const cloneUrl = typeof r.clone_url === "string" ? r.clone_url : `${core.config.github.url}/${fullName}.git`;
    yield* exec(
      core.db
        .insert(codehostRepositories)
        .values(repositoryValues(orgId, installationId, { id, full_name: fullName, private: !!r.private, clone_url: cloneUrl, html_url: htmlUrl, default_branch: r.default_branch }, now))
        .onConflictDoNothing(),
    );
  }
}

/** The tasks of the org whose pull request this is: by its head branch ao/<taskId>, else by number. */
function* tasksOfPull(orgId: string, repository: string, number: number, headRef: string): Q<TaskRow[]> {
  const matches = (t: TaskRow | null): t is TaskRow => {
    if (!t || t.org_id !== orgId || !t.pull_request) return false;
    const pr = JSON.parse(t.pull_request) as PullRequestInfo;
    return pr.number === number && pr.repository.toLowerCase() === repository.toLowerCase();
  };
  const m = /^ao\/(tsk_[0-9a-z]+)$/.exec(headRef);
  if (m) {
    const t = (yield* get<TaskRow>("SELECT * FROM tasks WHERE id = ?", m[1])) ?? null;
    if (matches(t)) return [t];
  }
  // pull_request is JSON.stringify'd PullRequestInfo: "number":N is followed by a comma or the
  // closing brace. The text match narrows the rows without a JSON function of either database;
  // matches() reads the JSON and decides.
  const rowsOf = yield* all<TaskRow>(
    "SELECT * FROM tasks WHERE org_id = ? AND pull_request IS NOT NULL AND (pull_request LIKE ? OR pull_request LIKE ?)",
    orgId,
    `%"number":${number},%`,
    `%"number":${number}}%`,
  );
  return rowsOf.filter(matches);
}

/**
 * Where a task from the app's webhook goes: the organization the installation is connected to, and
 * its project holding the repository; the integration's own project when that is the same
 * organization and no project holds it. Refused: no organization here takes it.
 */
export function* appTaskTarget(
  core: Core,
  integration: { org_id: string; project_id: string },
  payload: unknown,
): Q<{ orgId: string; projectId: string } | { refused: string }> {
  const known = yield* knownInstallation(core, payload);
  // An installation made on GitHub, not from ao, belongs to no organization here. Of a public app it
  // may be anyone's: its issues and comments must not become tasks (prompts) in the owner's org.
  if (!known) return { refused: "installation not connected to an organization here (install it from ao to connect it)" };
  const orgId = known.orgId;
  const urls = [field(payload, "repository.clone_url"), field(payload, "repository.html_url")].filter((u): u is string => typeof u === "string").map(normalizeRepoUrl);
  if (urls.length) {
    const held = (
      yield* all<{ project_id: string; url: string }>(
        "SELECT r.project_id, r.url FROM repositories r JOIN projects p ON p.id = r.project_id WHERE r.org_id = ? AND p.archived = 0 ORDER BY r.is_primary DESC, r.id",
        orgId,
      )
    ).find((r) => urls.includes(normalizeRepoUrl(r.url)));
    if (held) return { orgId, projectId: held.project_id };
  }
  if (orgId === integration.org_id) return { orgId, projectId: integration.project_id };
  return { refused: `no project of the installation's organization holds ${String(field(payload, "repository.full_name"))}` };
}
