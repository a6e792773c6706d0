// Pull requests and reviews as a task's result, written at GitHub through the app's installation.
// Each is a row of codehost_jobs, claimed by one server's runner and retried with backoff when
// GitHub answers 5xx or a rate limit (Retry-After and x-ratelimit-reset honoured), so neither a
// restart nor a bad minute at GitHub loses it. Each back-off is logged and put on the task's timeline.
// A claim holds for claimMs and the runner renews it while the job runs; a claim that ran out (its
// server died mid-job) is taken over by any server's runner.
import type { Core } from "../../server/core";
import { guarded } from "../../server/core";
import { codehostJobs, type CodehostJobKind } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import type { PullRequestInfo, TaskRow } from "../tasks/record";
import { changeTask, findTask, type TaskChange } from "../tasks/store";
import { appRow, credentialsOf } from "./app";
import { statusOf, troubleOf, withInstallation } from "./github";
import { pullRequestMode } from "./policy";
import { codehostRepositoryFor } from "./service";
import { all, exec, get, run, type Q } from "../../db/query";

const POLL_MS = 1000;
const MAX_BACKOFF_MS = 3600_000;
const CLAIM_MS = 60_000;

interface JobRow {
  id: string;
  org_id: string;
  task_id: string;
  kind: CodehostJobKind;
  payload: string;
  attempts: number;
}

// A read first: the poll writes nothing while nothing is due (a full disk, a busy database).
// While a job is working, next_attempt_at is when its claim runs out.
const DUE = `SELECT 1 AS due FROM codehost_jobs WHERE status = 'pending' AND next_attempt_at <= ?
  UNION ALL SELECT 1 AS due FROM codehost_jobs WHERE status = 'working' AND next_attempt_at <= ? LIMIT 1`;
// A claim not renewed in time: its runner is gone, so the job is due again.
const EXPIRED = "UPDATE codehost_jobs SET status = 'pending', claim = NULL WHERE status = 'working' AND next_attempt_at <= ?";
// Exactly once: a job is claimed by the UPDATE that moves it from pending to working; the outer
// status test is checked again on the row itself should another server have claimed it meanwhile.
const CLAIM = `UPDATE codehost_jobs SET status = 'working', claim = ?, next_attempt_at = ?, updated_at = ?
  WHERE status = 'pending' AND id IN (SELECT id FROM codehost_jobs WHERE status = 'pending' AND next_attempt_at <= ? ORDER BY next_attempt_at LIMIT 8)
  RETURNING id, org_id, task_id, kind, payload, attempts`;
const RENEW = "UPDATE codehost_jobs SET next_attempt_at = ? WHERE status = 'working' AND claim = ?";
// Under the claim only: a runner whose claim was taken over leaves the job to the new one.
const FINISH = "UPDATE codehost_jobs SET status = ?, claim = NULL, updated_at = ?, last_error = ?, attempts = ? WHERE id = ? AND claim = ?";
const LATER = "UPDATE codehost_jobs SET status = 'pending', claim = NULL, next_attempt_at = ?, updated_at = ?, last_error = ?, attempts = ? WHERE id = ? AND claim = ?";
const EXISTING = "SELECT id FROM codehost_jobs WHERE task_id = ? AND kind = ? AND status IN ('pending', 'working')";
const REPOSITORY = "SELECT url, branch FROM repositories WHERE id = ? AND org_id = ?";
const PRIMARY = "SELECT id, url, branch FROM repositories WHERE project_id = ? ORDER BY is_primary DESC, id LIMIT 1";
const POLICY = "SELECT policy FROM projects WHERE id = ?";

type Repository = { url: string; branch: string };
const primaryOf = (projectId: string) => get<Repository & { id: string }>(PRIMARY, projectId);

/**
 * SQLite has one server: at its start a job left working was left by a crash and is due again at
 * once (at least once; opening is idempotent below). On PostgreSQL it waits for its claim to run out.
 */
function* recover(): Q<void> {
  if (yield* get("SELECT 1 FROM codehost_jobs WHERE status = 'working' LIMIT 1")) yield* run("UPDATE codehost_jobs SET status = 'pending', claim = NULL WHERE status = 'working'");
}

/** A claimed batch of jobs. */
interface Claimed {
  claim: string;
  jobs: JobRow[];
}

function* claimDue(claimMs: number): Q<Claimed> {
  // Read here, once the write has its turn: a wait for the writers' lock does not eat into the claim.
  const now = Date.now();
  yield* run(EXPIRED, now);
  const claim = crypto.randomUUID();
  return { claim, jobs: yield* all<JobRow>(CLAIM, claim, now + claimMs, iso(now), now) };
}

const runners = new WeakMap<Core, Runner>();

class Runner {
  private timer: ReturnType<typeof setInterval>;
  private busy = false;
  private stopped = false;
  private readonly recovered: Promise<void>;

  constructor(private readonly core: Core) {
    this.recovered =
      core.store.dialect === "sqlite"
        ? core.store.write(recover()).catch((error) => core.log.error("codehost jobs: recovering working jobs failed", { error: String(error) }))
        : Promise.resolve();
    this.timer = setInterval(guarded(core.log, "codehost jobs", () => this.wake()), POLL_MS);
    core.onClose.push(() => {
      this.stopped = true;
      clearInterval(this.timer);
    });
  }

  wake() {
    if (this.busy || this.stopped) return;
    this.busy = true;
    void this.drain()
      .catch((error) => this.core.log.error("codehost jobs failed", { error: String((error as Error)?.stack ?? error) }))
      .finally(() => (this.busy = false));
  }

  private claimMs(): number {
    return this.core.config.github.claimMs ?? CLAIM_MS;
  }

  private async drain() {
    await this.recovered;
    for (;;) {
      if (this.stopped) return;
      const now = Date.now();
      if (!(await this.core.store.read(get(DUE, now, now)))) return;
      const { claim, jobs } = await this.core.store.write(claimDue(this.claimMs()));
      if (jobs.length === 0) return;
      const renewing = setInterval(() => void this.renew(claim), Math.max(10, Math.floor(this.claimMs() / 3)));
      try {
        await Promise.all(jobs.map((job) => this.run(job, claim)));
      } finally {
        clearInterval(renewing);
      }
    }
  }

  /** Keeps the batch's claim while its jobs run (a GitHub request has no deadline of its own). */
  private async renew(claim: string) {
    try {
      const claimMs = this.claimMs();
      await this.core.store.write(
        (function* () {
          return yield* run(RENEW, Date.now() + claimMs, claim);
        })(),
      );
    } catch (error) {
      this.core.log.warn("codehost jobs: renewing a claim failed", { error: String(error) });
    }
  }

  /** Writes a job's end or next try under its claim; false when another server took the job over meanwhile. */
  private async finish(job: JobRow, claim: string, write: Q<{ changes: number }>): Promise<boolean> {
    if ((await this.core.store.write(write)).changes === 1) return true;
    this.core.log.warn("codehost jobs: the claim ran out and another server took the job over; its result is not recorded here", { taskId: job.task_id, kind: job.kind });
    return false;
  }

  private async run(job: JobRow, claim: string) {
    const core = this.core;
    const attempts = job.attempts + 1;
    try {
      const payload = JSON.parse(job.payload) as Record<string, unknown>;
      const done = job.kind === "open_pull_request" ? await openPullRequest(core, job, payload) : await postReview(core, job);
      await this.finish(job, claim, run(FINISH, "done", iso(), done, attempts, job.id, claim));
    } catch (err) {
      const trouble = troubleOf(err);
      const what = job.kind === "open_pull_request" ? "opening the pull request" : "posting the review";
      if (trouble.transient && attempts < core.config.github.maxTries) {
        const backoff = Math.min(MAX_BACKOFF_MS, core.config.github.retryBaseMs * 2 ** (attempts - 1));
        const delay = Math.min(MAX_BACKOFF_MS, Math.max(backoff, trouble.retryAfterMs ?? 0));
        if (!(await this.finish(job, claim, run(LATER, Date.now() + delay, iso(), trouble.message, attempts, job.id, claim)))) return;
        const seconds = Math.ceil(delay / 1000);
        core.log.warn(`GitHub: ${what} backs off`, { taskId: job.task_id, attempt: attempts, retryInSec: seconds, reason: trouble.message });
        note(core, job, { action: "backing_off", message: `${what}: ${trouble.message}; backing off, next try in ${seconds} s`, attempt: attempts, retryInSec: seconds });
        return;
      }
      if (!(await this.finish(job, claim, run(FINISH, "failed", iso(), trouble.message, attempts, job.id, claim)))) return;
      core.log.warn(`GitHub: ${what} failed`, { taskId: job.task_id, attempt: attempts, reason: trouble.message });
      note(core, job, { action: "failed", message: `${what} failed: ${trouble.message}`, attempt: attempts });
    }
  }
}

/** A timeline event about a job; the task may be gone (deleted org), which is no reason to fail. */
async function note(core: Core, job: JobRow, data: Record<string, unknown>, patch?: { pull_request: string }) {
  try {
    await changeTask(core, job.org_id, job.task_id, () => ({ patch, events: [{ type: job.kind === "post_review" ? "review" : "pull_request", data }] }));
  } catch (error) {
    core.log.warn("could not record a pull request event", { taskId: job.task_id, error: String(error) });
  }
}

export function startRunner(core: Core): Runner {
  let r = runners.get(core);
  if (!r) runners.set(core, (r = new Runner(core)));
  return r;
}

/** Queues a job (inside the caller's write); a job of that kind already waiting for the task is enough. */
export function* enqueueJob(core: Core, orgId: string, taskId: string, kind: CodehostJobKind, payload: Record<string, unknown>): Q<boolean> {
  if (yield* get(EXISTING, taskId, kind)) return false;
  const now = iso();
  yield* exec(
    core.db.insert(codehostJobs).values({ id: newId("evt"), orgId, taskId, kind, payload, status: "pending", attempts: 0, nextAttemptAt: Date.now(), createdAt: now, updatedAt: now }),
  );
  return true;
}

function taskLink(core: Core, taskId: string) {
  return `${core.config.publicUrl}/tasks/${taskId}`;
}

function splitName(fullName: string) {
  const [owner, repo] = fullName.split("/");
  return { owner, repo };
}

interface GithubPull {
  number: number;
  html_url: string;
  state: string;
  draft?: boolean;
  merged?: boolean;
  head: { ref: string };
}

/** Opens the pull request of a task's pushed branch; returns a note for the job row. */
async function openPullRequest(core: Core, job: JobRow, payload: Record<string, unknown>): Promise<string> {
  const task = await core.store.read(findTask(core, job.org_id, job.task_id));
  const app = await core.store.read(appRow(core));
  if (!task || !app) return "nothing to do: the task or the app is gone";
  const policy = await core.store.read(get<{ policy: string }>(POLICY, task.project_id));
  const mode = pullRequestMode(JSON.parse(policy?.policy ?? "{}"));
  if (mode === "off") return "the project's policy says pullRequests: off";
  const repository = await core.store.read(get<Repository>(REPOSITORY, String(payload.repositoryId), job.org_id));
  const found = repository && (await core.store.read(codehostRepositoryFor(core, job.org_id, repository.url)));
  if (!repository || !found) return "the repository is not on an installation of the app";
  const branch = String(payload.branch);
  // The worker names the base by its commit; GitHub wants a branch: the one the task checked out.
  const given = typeof payload.base === "string" && payload.base && !/^[0-9a-f]{40}$/.test(payload.base) ? payload.base : null;
  const base = given ?? (repository.branch || found.defaultBranch);
  const { owner, repo } = splitName(found.fullName);
  const body = [
    task.summary?.trim() || "The agent left no summary.",
    "",
    `---`,
    `Opened by [ao](${taskLink(core, task.id)}) for task [${task.id}](${taskLink(core, task.id)}).`,
  ].join("\n");
  const pull = await withInstallation(core, credentialsOf(core, app), found.installationId, async (octokit) => {
    try {
      return (await octokit.request("POST /repos/{owner}/{repo}/pulls", { owner, repo, title: task.title, head: branch, base, body, draft: mode === "draft" })).data as unknown as GithubPull;
    } catch (err) {
      // 422: one exists for this branch already (an earlier try got through before a restart).
      if (statusOf(err) !== 422) throw err;
      const open = (await octokit.request("GET /repos/{owner}/{repo}/pulls", { owner, repo, head: `${owner}:${branch}`, state: "all" })).data as unknown as GithubPull[];
      const same = open.find((p) => p.head.ref === branch);
      if (!same) throw err;
      return same;
    }
  });
  const info: PullRequestInfo = { number: pull.number, url: pull.html_url, state: "open", headBranch: branch, repository: found.fullName, draft: !!pull.draft };
  core.log.info("pull request opened", { taskId: task.id, repository: found.fullName, number: pull.number });
  note(core, job, { action: "opened", number: pull.number, url: pull.html_url, draft: !!pull.draft, headBranch: branch, base }, { pull_request: JSON.stringify(info) });
  return `opened #${pull.number}`;
}

/** The pull request a review task is about: the one its webhook named, else the open one of its head. */
async function pullOfReview(octokit: import("@octokit/rest").Octokit, task: TaskRow, owner: string, repo: string): Promise<{ number: number; url: string } | null> {
  const source = task.source ? (JSON.parse(task.source) as { item?: { type?: string; number?: number; url?: string } }) : null;
  if (source?.item?.type === "github_pull_request" && Number.isInteger(source.item.number)) return { number: source.item.number!, url: source.item.url ?? "" };
  const review = task.review ? (JSON.parse(task.review) as { base: string; head: string }) : null;
  if (!review) return null;
  const pulls = (await octokit.request("GET /repos/{owner}/{repo}/pulls", { owner, repo, head: `${owner}:${review.head}`, base: review.base, state: "open" })).data as unknown as (GithubPull & { base: { ref: string } })[];
  const pull = pulls.find((p) => p.head.ref === review.head && p.base.ref === review.base);
  return pull ? { number: pull.number, url: pull.html_url } : null;
}

/** Posts a completed review task's summary as a pull request review (event COMMENT). */
async function postReview(core: Core, job: JobRow): Promise<string> {
  const task = await core.store.read(findTask(core, job.org_id, job.task_id));
  const app = await core.store.read(appRow(core));
  if (!task || !app) return "nothing to do: the task or the app is gone";
  const repository = await core.store.read(primaryOf(task.project_id));
  const found = repository && (await core.store.read(codehostRepositoryFor(core, job.org_id, repository.url)));
  if (!found) return "the repository is not on an installation of the app";
  const { owner, repo } = splitName(found.fullName);
  const body = [task.summary?.trim() || "The review left no summary.", "", "---", `Review by [ao](${taskLink(core, task.id)}), task ${task.id}.`].join("\n");
  const posted = await withInstallation(core, credentialsOf(core, app), found.installationId, async (octokit) => {
    const pull = await pullOfReview(octokit, task, owner, repo);
    if (!pull) return null;
    const review = (await octokit.request("POST /repos/{owner}/{repo}/pulls/{pull_number}/reviews", { owner, repo, pull_number: pull.number, event: "COMMENT", body }))
      .data as unknown as { id: number; html_url: string };
    return { pull, review };
  });
  if (!posted) {
    note(core, job, { action: "skipped", message: "no open pull request matches the review's head and base" });
    return "no pull request to review";
  }
  const head = task.review ? (JSON.parse(task.review) as { head: string }).head : "";
  const info: PullRequestInfo = { number: posted.pull.number, url: posted.pull.url, state: "open", headBranch: head, repository: found.fullName, reviewUrl: posted.review.html_url };
  note(core, job, { action: "posted", number: posted.pull.number, url: posted.review.html_url }, { pull_request: JSON.stringify(info) });
  return `review posted on #${posted.pull.number}`;
}

/**
 * The task hook (inside the change's transaction): a review task that completes on an app
 * repository queues its review, so the completion and the review commit together.
 */
export function* reviewHook(core: Core, change: TaskChange): Q<void> {
  const { before, after } = change;
  if (after.kind !== "review" || after.status !== "completed" || before?.status === "completed") return;
  if (!(yield* appRow(core))) return;
  const repository = yield* primaryOf(after.project_id);
  if (!repository || !(yield* codehostRepositoryFor(core, after.org_id, repository.url))) return;
  yield* enqueueJob(core, after.org_id, after.id, "post_review", {});
}
