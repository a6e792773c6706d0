// policy.budget.perDayUsd: a project whose cost today (UTC) is at or over it gets no new offers
// until the next day or a raised budget. The dispatcher asks for every queued task it looks at,
// so the answer comes from memory: one entry per project per day, read once from the database,
// kept up to date by usage reports and dropped when the project's policy changes. On PostgreSQL
// the servers share the database, not this memory: a server that adds to a project's cost tells
// the others, which drop their entry and read the cost afresh at their next question.
import type { Core } from "../../server/core";
import { budgetOf } from "../projects/policy";
import { dayOf, projectCostOn } from "./service";
import { usd } from "../../lib/money";
import { get, type Q } from "../../db/query";

const SELECT_POLICY = "SELECT policy FROM projects WHERE id = ?";

interface Entry {
  day: string;
  perDayUsd: number | null;
  costUsd: number;
}

/** The bus channel on which a server says it added to a project's cost today. */
const SPENT = "budgets.spent";

export class DailyBudgets {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly core: Core) {
    if (core.sqlite !== null) return;
    core.bus.on(SPENT, ({ from, orgId, projectId, reached }: { from: unknown; orgId: unknown; projectId: unknown; reached: unknown }) => {
      if (from === core.instanceId || typeof orgId !== "string" || typeof projectId !== "string") return;
      this.forget(projectId);
      if (reached === true) core.events.emit("project.budgetReached", { orgId, projectId });
    });
    // Messages missed while the bus was down: every entry is read afresh.
    core.bus.onReconnect(() => this.entries.clear());
  }

  /** A cached entry answers without a query. */
  private *entry(projectId: string): Q<Entry> {
    const day = dayOf();
    const cached = this.entries.get(projectId);
    if (cached && cached.day === day) return cached;
    const row = yield* get<{ policy: string }>(SELECT_POLICY, projectId);
    let perDayUsd: number | null = null;
    try {
      perDayUsd = row ? (budgetOf(JSON.parse(row.policy)).perDayUsd ?? null) : null;
    } catch {}
    const entry: Entry = { day, perDayUsd, costUsd: perDayUsd === null ? 0 : yield* projectCostOn(this.core, projectId, day) };
    this.entries.set(projectId, entry);
    return entry;
  }

  /** True while the project's cost today is at or over its daily budget. */
  *over(projectId: string): Q<boolean> {
    const e = yield* this.entry(projectId);
    return e.perDayUsd !== null && e.costUsd >= e.perDayUsd;
  }

  /** Why the project's queued tasks wait, or null when its daily budget does not hold them. */
  *reason(projectId: string): Q<string | null> {
    const e = yield* this.entry(projectId);
    return e.perDayUsd !== null && e.costUsd >= e.perDayUsd ? `project over its daily budget (${usd(e.costUsd)} of ${usd(e.perDayUsd)})` : null;
  }

  /**
   * A usage report added `added` dollars to the project's `day`. When that took the project to its
   * daily budget, its queued tasks now wait for it: "project.budgetReached", here and (PostgreSQL)
   * on the other servers, which hear of every addition unless this one knows the project has no
   * daily budget, and read its cost afresh.
   */
  added(orgId: string, projectId: string, day: string, added: number) {
    const e = this.entries.get(projectId);
    let reached = false;
    if (e && e.day === day && e.perDayUsd !== null) {
      reached = e.costUsd < e.perDayUsd && e.costUsd + added >= e.perDayUsd;
      e.costUsd += added;
    }
    if (reached) this.core.events.emit("project.budgetReached", { orgId, projectId });
    if (this.core.sqlite === null && !(e && e.day === day && e.perDayUsd === null)) this.core.bus.publish(SPENT, { from: this.core.instanceId, orgId, projectId, reached });
  }

  /** The project's policy changed: read it afresh at the next question. */
  forget(projectId: string) {
    this.entries.delete(projectId);
  }
}

const gates = new WeakMap<Core, DailyBudgets>();

export function dailyBudgetsOf(core: Core): DailyBudgets {
  let g = gates.get(core);
  if (!g) gates.set(core, (g = new DailyBudgets(core)));
  return g;
}
