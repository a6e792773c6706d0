// A claim's repositories that belong to an installation of the app get a token minted for that
// repository alone and this attempt (contents and pull requests write), and `push` when the
// project opens pull requests. Minted after the claim's transaction has committed: no
// transaction waits on GitHub.
import type { Core } from "../../server/core";
import type { ClaimResult } from "../../protocol/requests";
import { changeTask } from "../tasks/store";
import { appRow, credentialsOf } from "./app";
import { installationToken, troubleOf, WORKER_PERMISSIONS } from "./github";
import { pullRequestMode } from "./policy";
import { codehostRepositoryFor } from "./service";

export async function withRepositoryTokens(core: Core, orgId: string, claim: ClaimResult): Promise<ClaimResult> {
  // A claim without repositories needs no app: its row is not read (a drizzle read cost 13% of the
  // server's time in bench/vs-bullmq.ts).
  if (claim.project.repositories.length === 0) return claim;
  const app = await core.store.read(appRow(core));
  if (!app) return claim;
  const push = pullRequestMode(claim.project.policy) !== "off";
  const repositories = await Promise.all(
    claim.project.repositories.map(async (repo) => {
      const found = await core.store.read(codehostRepositoryFor(core, orgId, repo.url));
      if (!found || found.suspended) return repo;
      try {
        const { token } = await installationToken(core, credentialsOf(core, app), found.installationId, { repositoryIds: [found.id], permissions: { ...WORKER_PERMISSIONS } });
        return { ...repo, token, push };
      } catch (err) {
        const trouble = troubleOf(err);
        core.log.warn("could not mint a GitHub token for a claim", { taskId: claim.task.id, repository: found.fullName, status: trouble.status, reason: trouble.message });
        try {
          await changeTask(core, orgId, claim.task.id, () => ({
            events: [{ type: "error", data: { message: `could not get a GitHub token for ${found.fullName} (${trouble.message}); the worker fetches it without one`, attempt: claim.attempt } }],
          }));
        } catch {}
        return repo;
      }
    }),
  );
  return { ...claim, project: { ...claim.project, repositories } };
}
