// The checkout an attempt works in: a fresh clone of the project's primary repository at its
// branch (a review: at head, with base fetched and named), an empty directory when the project
// has none, or, for a retry that continues, the previous attempt's kept checkout.
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { ClaimResult } from "../protocol/requests";
import { git, gitOk } from "./git";

export interface Checkout {
  workdir: string;
  env: Record<string, string>;
  note: string;
}

/** Where a task's last unfinished checkout is kept for a retry that continues it. */
export const keptDir = (runsDir: string, taskId: string) => join(runsDir, "kept", taskId);

/**
 * The commit a ref names in the clone: a remote branch, a tag or sha, or fetched from origin. Refs
 * come from task input: each goes after "--" (rev-parse: --end-of-options, its "--" means paths),
 * so one spelled like an option (--upload-pack=...) is never read as one.
 */
async function resolveRef(dir: string, ref: string): Promise<string> {
  for (const candidate of [`refs/remotes/origin/${ref}`, `${ref}^{commit}`]) {
    const r = await git(["rev-parse", "--verify", "--quiet", "--end-of-options", candidate], dir);
    if (r.code === 0 && r.stdout) return r.stdout;
  }
  await gitOk(["fetch", "--quiet", "--", "origin", ref], dir);
  return gitOk(["rev-parse", "FETCH_HEAD"], dir);
}

export async function prepareCheckout(claim: ClaimResult, runDir: string, runsDir: string): Promise<Checkout> {
  const workdir = join(runDir, "work");
  rmSync(workdir, { recursive: true, force: true });
  mkdirSync(runDir, { recursive: true });
  const kept = keptDir(runsDir, claim.task.id);
  if (claim.runMode === "continue" && existsSync(kept)) {
    renameSync(kept, workdir);
    return { workdir, env: {}, note: "continuing in the previous attempt's checkout" };
  }
  const repo = claim.project.repositories[0];
  if (!repo) {
    mkdirSync(workdir, { recursive: true });
    return { workdir, env: {}, note: "the project has no repository: an empty directory" };
  }
  const review = claim.task.kind === "review" ? claim.task.review : null;
  if (!review) {
    const branched = await git(["clone", "--quiet", "--branch", repo.branch, "--", repo.url, workdir], runDir);
    if (branched.code !== 0) {
      rmSync(workdir, { recursive: true, force: true });
      await gitOk(["clone", "--quiet", "--", repo.url, workdir], runDir);
      return { workdir, env: {}, note: `cloned ${repo.url} (branch ${repo.branch} not found: default branch)` };
    }
    return { workdir, env: {}, note: `cloned ${repo.url} at ${repo.branch}` };
  }
  await gitOk(["clone", "--quiet", "--", repo.url, workdir], runDir);
  const head = await resolveRef(workdir, review.head);
  const base = await resolveRef(workdir, review.base);
  await gitOk(["checkout", "--quiet", "--detach", head, "--"], workdir);
  await gitOk(["update-ref", "--", "refs/ao/base", base], workdir);
  await gitOk(["update-ref", "--", "refs/ao/head", head], workdir);
  return {
    workdir,
    env: { AO_REVIEW_BASE: review.base, AO_REVIEW_HEAD: review.head, AO_REVIEW_BASE_SHA: base, AO_REVIEW_HEAD_SHA: head },
    note: `cloned ${repo.url} for review: head ${review.head} (${head.slice(0, 12)}), base ${review.base} (${base.slice(0, 12)})`,
  };
}
