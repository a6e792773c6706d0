// An attempt's usage on its way to the server, and the per-task budget the worker enforces.
// Agents report usage often (every model turn); the server hears of it at most every
// USAGE_EVERY_MS, plus once before each transition, so the final figure and the figure a budget
// question quotes are always recorded.
import type { TaskBudget } from "../protocol/requests";
import { HttpError, type WorkerClient } from "./client";
import type { AgentUsage } from "./agents/types";

export const USAGE_EVERY_MS = 2000;

export class UsageReporter {
  private latest: AgentUsage | null = null;
  private sent: AgentUsage | null = null;
  private lastSentAt = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private sending: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly client: Pick<WorkerClient, "usage">,
    private readonly taskId: string,
    private readonly leaseToken: string,
    /** The server refused the lease: this attempt is no longer ours. */
    private readonly onStale: () => void,
    private readonly log: (line: string) => void,
  ) {}

  /** The attempt's cumulative usage changed: reported now, or when USAGE_EVERY_MS has passed since the last report. */
  update(u: AgentUsage) {
    if (this.stopped) return;
    this.latest = u;
    if (this.timer) return;
    const wait = Math.max(0, this.lastSentAt + USAGE_EVERY_MS - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, wait);
  }

  /** Sends the latest usage unless the server has it already; resolves when done (errors are logged, not thrown). */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    this.sending = this.sending.then(() => this.send());
    return this.sending;
  }

  stop() {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private async send() {
    const u = this.latest;
    if (!u || u === this.sent || this.stopped) return;
    this.lastSentAt = Date.now();
    try {
      await this.client.usage(this.taskId, {
        leaseToken: this.leaseToken,
        usage: {
          inputTokens: u.inputTokens,
          outputTokens: u.outputTokens,
          cacheReadTokens: u.cacheReadTokens,
          cacheWriteTokens: u.cacheWriteTokens,
          costUsd: u.costUsd,
          model: u.model === null ? null : u.model.slice(0, 200),
        },
      });
      this.sent = u;
    } catch (err) {
      if (err instanceof HttpError && (err.status === 404 || err.status === 401 || err.details?.reason === "stale_lease")) {
        this.stop();
        this.onStale();
      } else {
        this.log(`usage report of ${this.taskId} failed: ${(err as Error).message}`);
      }
    }
  }
}

/** Cleans an agent's report: whole non-negative token counts, a non-negative finite cost. */
export function cleanUsage(u: Partial<Record<keyof AgentUsage, unknown>>): AgentUsage {
  const count = (v: unknown) => (typeof v === "number" && Number.isFinite(v) && v > 0 ? Math.min(Math.floor(v), Number.MAX_SAFE_INTEGER) : 0);
  const cost = typeof u.costUsd === "number" && Number.isFinite(u.costUsd) && u.costUsd > 0 ? Math.min(u.costUsd, 1_000_000) : 0;
  return {
    inputTokens: count(u.inputTokens),
    outputTokens: count(u.outputTokens),
    cacheReadTokens: count(u.cacheReadTokens),
    cacheWriteTokens: count(u.cacheWriteTokens),
    costUsd: cost,
    model: typeof u.model === "string" && u.model !== "" ? u.model : null,
  };
}

/**
 * policy.budget.perTaskUsd on the worker: the claim says what the task may cost in all and what
 * its earlier attempts cost; once this attempt takes it past the allowance the attempt pauses the
 * agent and asks. An approval raises the allowance by perTaskUsd, as the server records it.
 */
export class BudgetGuard {
  /** A budget question is open: the agent is paused until a person answers. */
  holding = false;
  private allowanceUsd: number;

  constructor(private readonly budget: TaskBudget | null | undefined) {
    this.allowanceUsd = budget?.allowanceUsd ?? Infinity;
  }

  /** The task's cost and the allowance it passed, the first time `u` takes it past; else null. */
  crossed(u: AgentUsage | null): { costUsd: number; allowanceUsd: number } | null {
    if (!this.budget || !u || this.holding) return null;
    const costUsd = this.budget.costUsd + u.costUsd;
    if (costUsd <= this.allowanceUsd) return null;
    this.holding = true;
    return { costUsd, allowanceUsd: this.allowanceUsd };
  }

  approved() {
    this.holding = false;
    if (this.budget) this.allowanceUsd += this.budget.perTaskUsd;
  }

  /** The server did not take the question (the task was not running): ask again at the next report. */
  released() {
    this.holding = false;
  }
}
