// The checkout an attempt works in: a fresh clone of the project's primary repository at its
// branch (a review: at head, with base fetched and named), an empty directory when the project
// has none, or, for a retry that continues, the previous attempt's kept checkout.
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { ClaimResult } from "../protocol/requests";
import { git, gitOk, type GitAuth } from "./git";

export interface Checkout {
  workdir: string;
  /** The repository the checkout is a clone of (none for an empty directory). */
  repository: boolean;
  env: Record<string, string>;
  note: string;
}

/** The ref that marks the commit a task's checkout started from: its changes are measured from it. */
export const START_REF = "refs/ao/start";

/** The token of a repository, as git's authentication for that repository's URL. */
export const authOf = (repo: { url: string; token?: string }): GitAuth | null => (repo.token ? { url: repo.url, token: repo.token } : null);

/** Where a task's last unfinished checkout is kept for a retry that continues it. */
export const keptDir = (runsDir: string, taskId: string) => join(runsDir, "kept", taskId);

/**
 * The commit a ref names in the clone: a remote branch, a tag or sha, or fetched from origin. Refs
 * come from task input: each goes after "--" (rev-parse: --end-of-options, its "--" means paths),
 * so one spelled like an option (--upload-pack=...) is never read as one.
 */
async function resolveRef(dir: string, ref: string, auth: GitAuth | null): Promise<string> {
  for (const candidate of [`refs/remotes/origin/${ref}`, `${ref}^{commit}`]) {
    const r = await git(["rev-parse", "--verify", "--quiet", "--end-of-options", candidate], dir);
    if (r.code === 0 && r.stdout) return r.stdout;
  }
  await gitOk(["fetch", "--quiet", "--", "origin", ref], dir, undefined, { auth });
  return gitOk(["rev-parse", "FETCH_HEAD"], dir);
}

export async function prepareCheckout(claim: ClaimResult, runDir: string, runsDir: string): Promise<Checkout> {
  const workdir = join(runDir, "work");
  rmSync(workdir, { recursive: true, force: true });
  mkdirSync(runDir, { recursive: true });
  const repo = claim.project.repositories[0];
  // The server refuses such a review, but its project's repositories may have gone since: with
  // nothing checked out, the agent would "review" an empty directory and complete.
  if (claim.task.kind === "review" && !repo) {
    throw new Error("a review task needs a repository to review, and the project has none: add one to the project, then restart the task");
  }
  const kept = keptDir(runsDir, claim.task.id);
  if (claim.runMode === "continue" && existsSync(kept)) {
    renameSync(kept, workdir);
    return { workdir, repository: existsSync(join(workdir, ".git")), env: {}, note: "continuing in the previous attempt's checkout" };
  }
  if (!repo) {
    mkdirSync(workdir, { recursive: true });
    return { workdir, repository: false, env: {}, note: "the project has no repository: an empty directory" };
  }
  const auth = authOf(repo);
  const review = claim.task.kind === "review" ? claim.task.review : null;
  if (!review) {
    const branched = await git(["clone", "--quiet", "--branch", repo.branch, "--", repo.url, workdir], runDir, undefined, { auth });
    let note = `cloned ${repo.url} at ${repo.branch}`;
    if (branched.code !== 0) {
      rmSync(workdir, { recursive: true, force: true });
      await gitOk(["clone", "--quiet", "--", repo.url, workdir], runDir, undefined, { auth });
      note = `cloned ${repo.url} (branch ${repo.branch} not found: default branch)`;
    }
    // A repository with no commit yet has no HEAD to mark: its changes are measured from nothing.
    await git(["update-ref", "--", START_REF, "HEAD"], workdir);
    return { workdir, repository: true, env: {}, note };
  }
  await gitOk(["clone", "--quiet", "--", repo.url, workdir], runDir, undefined, { auth });
  const head = await resolveRef(workdir, review.head, auth);
  const base = await resolveRef(workdir, review.base, auth);
  await gitOk(["checkout", "--quiet", "--detach", head, "--"], workdir);
  await gitOk(["update-ref", "--", "refs/ao/base", base], workdir);
  await gitOk(["update-ref", "--", "refs/ao/head", head], workdir);
  return {
    workdir,
    repository: true,
    env: { AO_REVIEW_BASE: review.base, AO_REVIEW_HEAD: review.head, AO_REVIEW_BASE_SHA: base, AO_REVIEW_HEAD_SHA: head },
    note: `cloned ${repo.url} for review: head ${review.head} (${head.slice(0, 12)}), base ${review.base} (${base.slice(0, 12)})`,
  };
}
