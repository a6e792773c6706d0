// An ordinary task's result in its repository: what the agent left in the checkout (tracked
// changes and new files git does not ignore) becomes one commit on ao/<taskId>, its diff the
// artifact changes.diff, its size the task's `changes`, and, when the server asks, a pushed branch.
import { join } from "node:path";
import type { ClaimedTask, RepositoryInfo, TaskChanges } from "../protocol/requests";
import { authOf, START_REF } from "./checkout";
import { git, gitOk } from "./git";

export const DIFF_ARTIFACT = "changes.diff";

const AGENT_EMAIL = "agent@ao.invalid";
const AGENT_NAMES: Record<string, string> = { claude: "Claude Code via ao", codex: "Codex via ao" };

/** The commit's author: the agent, under a name a reviewer recognises. */
export function agentAuthor(agentName: string): { name: string; email: string } {
  return { name: AGENT_NAMES[agentName] ?? "ao agent", email: AGENT_EMAIL };
}

/** A name or address fit for a header line of a commit message (no newline, no angle brackets). */
const headerSafe = (s: string) => s.replace(/[\r\n<>]+/g, " ").replace(/\s+/g, " ").trim();

export function commitMessage(task: Pick<ClaimedTask, "id" | "title" | "createdBy">): string[] {
  const lines = [headerSafe(task.title) || task.id, `ao task ${task.id}`];
  const by = task.createdBy;
  if (by && headerSafe(by.email)) lines.push(`Co-authored-by: ${headerSafe(by.name) || headerSafe(by.email)} <${headerSafe(by.email)}>`);
  return lines;
}

export interface ChangesInput {
  workdir: string;
  artifactsDir: string;
  task: Pick<ClaimedTask, "id" | "title" | "createdBy">;
  repository: RepositoryInfo;
  agentName: string;
  /** Tells the timeline something went wrong that fails nothing (a refused push). */
  warn(message: string): void;
}

async function sha(workdir: string, ref: string): Promise<string | null> {
  const r = await git(["rev-parse", "--verify", "--quiet", "--end-of-options", `${ref}^{commit}`], workdir);
  return r.code === 0 && r.stdout ? r.stdout : null;
}

/**
 * Commits what the task changed on ao/<taskId> and measures it from the commit the checkout
 * started at. Nothing changed: zero counts and no branch. Throws when git itself fails.
 */
export async function commitTaskChanges(input: ChangesInput): Promise<TaskChanges> {
  const { workdir, task, repository } = input;
  const branch = `ao/${task.id}`;
  // A checkout kept from an older worker has no start mark: the branch it was cloned at stands in.
  const base = (await sha(workdir, START_REF)) ?? (await sha(workdir, `refs/remotes/origin/${repository.branch}`));
  await gitOk(["add", "--all", "--", "."], workdir);
  const staged = (await git(["diff", "--cached", "--quiet"], workdir)).code === 1;
  const head = await sha(workdir, "HEAD");
  // The agent may have committed on its own: that is a change too.
  if (!staged && head === base) return { files: 0, additions: 0, deletions: 0, branch: null, commit: null, base, pushed: false };

  // Move HEAD onto the task's branch without touching the index or the files.
  if (head) await gitOk(["update-ref", "--", `refs/heads/${branch}`, head], workdir);
  await gitOk(["symbolic-ref", "HEAD", `refs/heads/${branch}`], workdir);
  if (staged) {
    const author = agentAuthor(input.agentName);
    const message = commitMessage(task).flatMap((line) => ["-m", line]);
    await gitOk(
      // The repository's own hooks and signing setup are not the agent's to satisfy here.
      ["-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false", "commit", "--quiet", "--no-verify", ...message],
      workdir,
      undefined,
      { env: { GIT_AUTHOR_NAME: author.name, GIT_AUTHOR_EMAIL: author.email, GIT_COMMITTER_NAME: author.name, GIT_COMMITTER_EMAIL: author.email } },
    );
  }
  const commit = (await sha(workdir, "HEAD"))!;
  // Measured from the start; a repository that had no commit is measured from the empty tree.
  const from = base ?? (await gitOk(["hash-object", "-t", "tree", "/dev/null"], workdir));
  await gitOk(["diff", "--no-color", "--no-ext-diff", `--output=${join(input.artifactsDir, DIFF_ARTIFACT)}`, from, commit, "--"], workdir);
  let files = 0;
  let additions = 0;
  let deletions = 0;
  for (const line of (await gitOk(["diff", "--numstat", from, commit, "--"], workdir)).split("\n")) {
    if (!line) continue;
    const [add, del] = line.split("\t");
    files++;
    // binary files show "-" for both counts
    additions += Number(add) || 0;
    deletions += Number(del) || 0;
  }

  let pushed = false;
  if (repository.push) {
    const r = await git(["push", "--quiet", "--force", "--", "origin", `refs/heads/${branch}:refs/heads/${branch}`], workdir, undefined, {
      auth: authOf(repository),
    });
    if (r.code === 0) pushed = true;
    else input.warn(`could not push ${branch} to origin: ${r.stderr || r.stdout || `git exited with ${r.code}`}`);
  }
  return { files, additions, deletions, branch, commit, base, pushed };
}
