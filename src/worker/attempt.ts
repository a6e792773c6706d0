// One attempt of one task on this worker: checkout, agent, timeline, person's answers, artifacts,
// the final transition, cleanup. A stale lease or a cancel stops the agent and reports nothing.
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync } from "node:fs";
import { join, relative } from "node:path";
import type { Control } from "../protocol/messages";
import { PlanItem, planProblems, type ClaimResult, type Plan, type TransitionRequest } from "../protocol/requests";
import { commitTaskChanges } from "./changes";
import { prepareCheckout, keptDir, type Checkout } from "./checkout";
import { HttpError, type WorkerClient } from "./client";
import { EventSink } from "./events";
import { instructionsFor } from "./instructions";
import { recordAgent } from "./orphans";
import { agentPolicyOf, decideTool } from "./policy";
import type { Agent, AgentRun, AgentUsage, Answer } from "./agents/types";
import { BudgetGuard, UsageReporter } from "./usage";
import { usd } from "../lib/money";
import { withoutNul } from "../lib/text";
import { fieldMessage } from "../lib/field-messages";
import type { Confine } from "./confine";

export interface AttemptDeps {
  client: WorkerClient;
  agent: Agent;
  runsDir: string;
  /** Files the agent's commands must not read (AgentContext.unreadable). */
  unreadable: string[];
  /** How the agent is started, given the attempt's directory (AgentContext.confine). */
  confineIn: (runDir: string) => Confine;
  killGraceMs: number;
  log(line: string): void;
}

/** Artifact names the server accepts: letters, digits and . _ + -, no leading dot or dash. */
export function artifactNameOf(relativePath: string): string {
  const safe = relativePath.replace(/[\\/]+/g, "_").replace(/[^A-Za-z0-9._+-]/g, "_").replace(/^[.-]+/, "");
  return (safe || "artifact").slice(-128);
}

/**
 * The artifact name of each file, distinct: two paths that make the same name (`a b.txt` and
 * `a_b.txt`, `sub/x` and `sub_x`) get -2, -3 before the extension, so neither replaces the other.
 */
export function artifactNamesOf(relativePaths: string[]): Map<string, string> {
  const names = new Map<string, string>();
  const taken = new Set<string>();
  for (const rel of relativePaths) {
    let name = artifactNameOf(rel);
    if (taken.has(name)) {
      const dot = name.lastIndexOf(".");
      const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ""];
      let n = 2;
      while (taken.has(`${stem}-${n}${ext}`.slice(-128))) n++;
      name = `${stem}-${n}${ext}`.slice(-128);
    }
    taken.add(name);
    names.set(rel, name);
  }
  return names;
}

function listFiles(dir: string, root = dir, out: string[] = []): string[] {
  if (!existsSync(dir)) return out;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) listFiles(path, root, out);
    else if (entry.isFile()) out.push(relative(root, path));
  }
  return out.sort();
}

/** Longest summary, error and question the server takes (src/protocol/requests.ts). */
const MAX_SUMMARY = 20_000;
const MAX_NEEDS = 10_000;

/** The plan a plan task wrote, or an error message when it wrote none or a malformed one. */
export function readPlan(artifactsDir: string): TransitionRequest["plan"] | string {
  const path = join(artifactsDir, "plan.json");
  if (!existsSync(path)) return "the plan task wrote no $AO_ARTIFACTS_DIR/plan.json";
  let plan: unknown;
  try {
    plan = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    return `plan.json is not valid JSON: ${(err as Error).message}`;
  }
  const problems = planProblems(plan);
  if (problems.length === 0) return plan as Plan;
  // The agent's author reads this on the task's timeline: say which fields, in the server's words.
  const faults = new Map<string, string>();
  for (const p of problems) {
    const field = p.path.slice(1).replaceAll("/", ".") || "(root)";
    if (!faults.has(field)) faults.set(field, fieldMessage(p));
  }
  const said = [...faults].slice(0, 3).map(([field, message]) => `${field}: ${message}`);
  return `plan.json does not have the shape ${PLAN_SHAPE} (${said.join("; ")}${faults.size > 3 ? "; ..." : ""})`;
}

/** {"tasks": [{"title", "prompt", "priority"?, ...}]}, from the schema. */
const PLAN_SHAPE = `{"tasks": [{${Object.keys(PlanItem.properties)
  .map((k) => `"${k}"${(PlanItem.required as string[]).includes(k) ? "" : "?"}`)
  .join(", ")}}]}`;

/** An agent's text as the server takes it: NUL characters (U+0000, not storable) dropped, at most `max` long. */
export function clipText(raw: string, max: number): string {
  const text = withoutNul(raw);
  return text.length <= max ? text : `${text.slice(0, max - 40)}… (${text.length - max + 40} more characters)`;
}

export class Attempt {
  readonly taskId: string;
  readonly attempt: number;
  private run: AgentRun | null = null;
  private stopped: "cancelled" | "stale" | null = null;
  private summary: string | undefined;
  private answers: Answer[] = [];
  private pausedBeforeStart = false;
  /** Transitions go out one at a time, in the order the agent asked for them. */
  private transitions: Promise<unknown> = Promise.resolve();
  private readonly sink: EventSink;
  private readonly usage: UsageReporter;
  private readonly budget: BudgetGuard;
  private lastUsage: AgentUsage | null = null;
  private readonly runDir: string;
  readonly done: Promise<void>;

  constructor(
    private readonly deps: AttemptDeps,
    private readonly claim: ClaimResult,
  ) {
    this.taskId = claim.task.id;
    this.attempt = claim.attempt;
    this.runDir = join(deps.runsDir, `${claim.task.id}-a${claim.attempt}`);
    this.sink = new EventSink(deps.client, this.taskId, claim.leaseToken, () => void this.stop("stale"), deps.log);
    this.usage = new UsageReporter(deps.client, this.taskId, claim.leaseToken, () => void this.stop("stale"), deps.log);
    this.budget = new BudgetGuard(claim.budget);
    this.done = this.execute();
  }

  control(message: Control) {
    switch (message.action) {
      case "pause":
        if (this.run) this.run.pause();
        else this.pausedBeforeStart = true;
        return;
      case "resume":
        // Resumed into an open budget question: the agent stays paused until the answer.
        if (this.budget.holding) return;
        if (this.run) this.run.resume();
        else this.pausedBeforeStart = false;
        return;
      case "cancel":
        return void this.stop("cancelled");
      case "input":
        return this.answer({ kind: "input", text: message.input ?? "" });
      case "approve":
        if (this.budget.holding) return this.budgetApproved();
        return this.answer({ kind: "approve" });
      case "deny":
        // Denying a budget question cancels the task: the server sends cancel, the agent hears nothing.
        if (this.budget.holding) return;
        return this.answer({ kind: "deny", reason: message.reason ?? "" });
    }
  }

  private answer(a: Answer) {
    if (this.run) this.run.answer(a);
    else this.answers.push(a);
  }

  /** The agent reported its cumulative usage: recorded (rate-limited) and held against the task's budget. */
  private onUsage(u: AgentUsage) {
    if (this.stopped) return;
    this.lastUsage = u;
    this.usage.update(u);
    const over = this.budget.crossed(u);
    if (over) void this.askBudget(over);
  }

  /** Over budget: the agent pauses (it keeps its state) and a person decides whether the task goes on. */
  private async askBudget(over: { costUsd: number; allowanceUsd: number }) {
    this.run?.pause();
    this.sink.push("decision", {
      kind: "budget",
      decision: "ask",
      by: "project budget",
      rule: "policy.budget.perTaskUsd",
      costUsd: over.costUsd,
      allowanceUsd: over.allowanceUsd,
    });
    const refused = await this.transition({ to: "needs_approval", needs: { kind: "budget", message: `over budget: ${usd(over.costUsd)} of ${usd(over.allowanceUsd)}; continue?` } });
    if (refused && !this.stopped) {
      // Not asked (the task was waiting on another question, or paused): the agent goes on and the next report asks again.
      this.budget.released();
      this.run?.resume();
    }
  }

  private budgetApproved() {
    this.budget.approved();
    // The last report can pass the raised allowance too: then ask again at once, the agent still
    // stopped (resumed and stopped again, it ran for a moment no allowance covered).
    const over = this.budget.crossed(this.lastUsage);
    if (over) return void this.askBudget(over);
    this.run?.resume();
  }

  private async stop(why: "cancelled" | "stale") {
    if (this.stopped) return;
    this.stopped = why;
    this.usage.stop();
    this.deps.log(`${why === "cancelled" ? "cancelling" : "dropping (lease lost)"} ${this.taskId} attempt ${this.attempt}`);
    await this.run?.cancel(this.deps.killGraceMs);
  }

  /** Reports a transition; resolves with the server's refusal (an HttpError), or null. */
  private transition(body: Omit<TransitionRequest, "leaseToken">): Promise<HttpError | null> {
    const next = this.transitions.then(async (): Promise<HttpError | null> => {
      if (this.stopped) return null;
      await this.sink.flush();
      // The usage the transition follows from is on the server first (the final figure; the cost a budget question quotes).
      await this.usage.flush();
      try {
        await this.deps.client.transition(this.taskId, { leaseToken: this.claim.leaseToken, ...body });
        return null;
      } catch (err) {
        if (err instanceof HttpError && (err.status === 409 || err.status === 404 || err.status === 401)) {
          if (err.details?.reason === "stale_lease" || err.status !== 409) void this.stop("stale");
          else this.deps.log(`transition to ${body.to} refused: ${err.message}`);
        } else {
          this.deps.log(`transition to ${body.to} failed: ${(err as Error).message}`);
        }
        return err instanceof HttpError ? err : null;
      }
    });
    this.transitions = next;
    return next;
  }

  /** Completes the attempt; a result the server refuses (400, e.g. a plan it cannot apply) fails it with the reason instead. */
  private async complete(plan: TransitionRequest["plan"], changes: TransitionRequest["changes"]): Promise<boolean> {
    const refused = await this.transition({ to: "completed", summary: this.summary, ...(plan ? { plan } : {}), ...(changes ? { changes } : {}) });
    if (refused?.status !== 400) return refused === null;
    const fields = Array.isArray(refused.details) ? refused.details.map((d: { field?: string; message?: string }) => `${d.field}: ${d.message}`).join("; ") : "";
    await this.transition({ to: "failed", error: clipText(`the server refused the result: ${refused.message}${fields ? ` (${fields})` : ""}`, MAX_SUMMARY), summary: this.summary });
    return false;
  }

  private async execute() {
    let outcome: "completed" | "failed" | "stopped" = "failed";
    const artifactsDir = join(this.runDir, "artifacts");
    try {
      const checkout = await prepareCheckout(this.claim, this.runDir, this.deps.runsDir);
      this.sink.push("log", { stream: "worker", line: checkout.note });
      mkdirSync(artifactsDir, { recursive: true });
      if (this.stopped) return void (outcome = "stopped");
      const t = this.claim.task;
      const env: Record<string, string> = {
        ...(process.env as Record<string, string>),
        ...checkout.env,
        AO_TASK_ID: t.id,
        AO_TASK_KIND: t.kind,
        AO_TASK_TITLE: t.title,
        AO_TASK_PROMPT: t.prompt,
        AO_TASK_ATTEMPT: String(this.attempt),
        AO_TASK_RUN_MODE: this.claim.runMode,
        AO_PROJECT_ID: this.claim.project.id,
        AO_PROJECT_NAME: this.claim.project.name,
        AO_ARTIFACTS_DIR: artifactsDir,
      };
      this.run = this.deps.agent.start({
        claim: this.claim,
        workdir: checkout.workdir,
        artifactsDir,
        unreadable: this.deps.unreadable,
        confine: this.deps.confineIn(this.runDir),
        env,
        instructions: instructionsFor(this.claim),
        emit: (type, data) => this.sink.push(type, data),
        // Cut to what the server takes: a too long text would have the whole transition refused.
        summary: (text) => void (this.summary = clipText(text, MAX_SUMMARY)),
        ask: (kind, message) => void this.transition({ to: kind === "input" ? "needs_input" : "needs_approval", needs: { message: clipText(message, MAX_NEEDS) } }),
        decide: (call) => decideTool(agentPolicyOf(this.claim.project.policy), checkout.workdir, call, this.deps.unreadable),
        usage: (u) => this.onUsage(u),
      });
      // A worker killed mid-attempt finds this at its next start and ends the orphaned agent.
      recordAgent(this.runDir, this.run.pid);
      if (this.pausedBeforeStart) this.run.pause();
      for (const a of this.answers.splice(0)) this.run.answer(a);
      const exit = await this.run.exited;
      await this.transitions;
      if (this.stopped) return void (outcome = "stopped");
      // Before the upload: the diff is one of the artifacts.
      const changes = exit.code === 0 && t.kind === "task" ? await this.recordChanges(checkout, artifactsDir) : undefined;
      await this.uploadArtifacts(artifactsDir);
      if (exit.code === 0) {
        const plan = t.kind === "plan" ? readPlan(artifactsDir) : undefined;
        if (typeof plan === "string") {
          await this.transition({ to: "failed", error: plan, summary: this.summary });
        } else {
          if (await this.complete(plan, changes)) outcome = "completed";
        }
      } else {
        const how = exit.signal ? `was killed by ${exit.signal}` : `exited with code ${exit.code}`;
        await this.transition({ to: "failed", ...(exit.reported ? {} : { error: `the agent ${how}` }), summary: this.summary });
      }
    } catch (err) {
      if (this.stopped) return void (outcome = "stopped");
      // No error event of our own: the server writes the transition's error as one.
      await this.transition({ to: "failed", error: clipText((err as Error).message, MAX_SUMMARY), summary: this.summary });
    } finally {
      await this.sink.flush().catch(() => {});
      this.usage.stop();
      this.cleanup(outcome);
    }
  }

  /**
   * An ordinary task's changes to its repository, committed on ao/<taskId> (and pushed when the
   * server asks). A git failure here fails nothing: the task completes without them, and says why.
   */
  private async recordChanges(checkout: Checkout, artifactsDir: string): Promise<TransitionRequest["changes"]> {
    const repository = this.claim.project.repositories[0];
    if (!checkout.repository || !repository) return undefined;
    try {
      const changes = await commitTaskChanges({
        workdir: checkout.workdir,
        artifactsDir,
        task: this.claim.task,
        repository,
        agentName: this.deps.agent.name,
        warn: (message) => this.sink.push("error", { message }),
      });
      if (changes.branch)
        this.deps.log(`${this.taskId}: ${changes.files} file(s) changed on ${changes.branch}${repository.push ? (changes.pushed ? ", pushed" : ", push failed") : ""}`);
      return changes;
    } catch (err) {
      this.sink.push("error", { message: `could not record the task's changes: ${(err as Error).message}` });
      return undefined;
    }
  }

  private async uploadArtifacts(dir: string) {
    const files = listFiles(dir);
    // The server numbers the timeline in the order writes reach it: lines the agent printed
    // before leaving these files must be there before the artifact events.
    if (files.length > 0) await this.sink.flush();
    const names = artifactNamesOf(files);
    for (const rel of files) {
      const name = names.get(rel)!;
      try {
        const size = statSync(join(dir, rel)).size;
        await this.deps.client.upload(this.taskId, this.claim.leaseToken, name, Bun.file(join(dir, rel)));
        this.deps.log(`uploaded ${name} (${size} bytes) for ${this.taskId}`);
      } catch (err) {
        this.sink.push("error", { message: `could not upload artifact ${name}: ${(err as Error).message}` });
      }
    }
  }

  /** A completed attempt leaves nothing; an unfinished one keeps its checkout for a retry that continues. */
  private cleanup(outcome: "completed" | "failed" | "stopped") {
    try {
      const work = join(this.runDir, "work");
      if (outcome !== "completed" && existsSync(work)) {
        const kept = keptDir(this.deps.runsDir, this.taskId);
        rmSync(kept, { recursive: true, force: true });
        mkdirSync(join(kept, ".."), { recursive: true });
        renameSync(work, kept);
        // Its age for pruning counts from now, not from the clone.
        utimesSync(kept, new Date(), new Date());
      }
      rmSync(this.runDir, { recursive: true, force: true });
    } catch (err) {
      this.deps.log(`cleanup of ${this.runDir} failed: ${(err as Error).message}`);
    }
  }
}
