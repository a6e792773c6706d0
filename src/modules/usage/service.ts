// Usage and cost (issue 10): what each attempt's agent reported, kept per attempt and UTC day
// (src/db/schema/tasks.ts, task_usage). A worker reports an attempt's cumulative usage; the server
// adds the difference to today's row, so a report repeated or arriving late adds nothing twice.
import type { Core } from "../../server/core";
import { invalid, notFound } from "../../server/errors";
import { iso } from "../../lib/time";
import type { Usage } from "../../protocol/requests";
import type { TaskRow } from "../tasks/record";
import { budgetOf } from "../projects/policy";

export interface UsageTotals {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
  /** The model most recently reported. */
  model: string | null;
}

interface SumRow {
  input: number | null;
  output: number | null;
  cache_read: number | null;
  cache_write: number | null;
  cost: number | null;
  rows: number;
}

const SUMS = `COALESCE(SUM(input_tokens), 0) AS input, COALESCE(SUM(output_tokens), 0) AS output,
  COALESCE(SUM(cache_read_tokens), 0) AS cache_read, COALESCE(SUM(cache_write_tokens), 0) AS cache_write,
  COALESCE(SUM(cost_usd), 0) AS cost, COUNT(*) AS rows`;

const statements = new WeakMap<Core, ReturnType<typeof prepare>>();
function prepare(core: Core) {
  const q = core.sqlite;
  return {
    task: q.query<TaskRow, [string]>("SELECT * FROM tasks WHERE id = ?"),
    ofAttempt: q.query<SumRow, [string, number]>(`SELECT ${SUMS} FROM task_usage WHERE task_id = ? AND attempt = ?`),
    ofTask: q.query<SumRow, [string]>(`SELECT ${SUMS} FROM task_usage WHERE task_id = ?`),
    // The latest row that named a model (SQLite takes the bare column from the row of MAX).
    modelOf: q.query<{ model: string | null }, [string]>(
      "SELECT model, MAX(updated_at) AS at FROM task_usage WHERE task_id = ? AND model IS NOT NULL",
    ),
    ofTasks: q.query<SumRow & { task_id: string; model: string | null }, [string]>(
      `SELECT task_id, ${SUMS}, (SELECT u2.model FROM task_usage u2 WHERE u2.task_id = u.task_id AND u2.model IS NOT NULL
         ORDER BY u2.updated_at DESC LIMIT 1) AS model
       FROM task_usage u WHERE task_id IN (SELECT value FROM json_each(?)) GROUP BY task_id`,
    ),
    add: q.query(
      `INSERT INTO task_usage (task_id, attempt, day, org_id, project_id, input_tokens, output_tokens, cache_read_tokens,
         cache_write_tokens, cost_usd, model, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (task_id, attempt, day) DO UPDATE SET input_tokens = input_tokens + excluded.input_tokens,
         output_tokens = output_tokens + excluded.output_tokens, cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
         cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens, cost_usd = cost_usd + excluded.cost_usd,
         model = COALESCE(excluded.model, model), updated_at = excluded.updated_at`,
    ),
    projectDay: q.query<{ cost: number }, [string, string]>(
      "SELECT COALESCE(SUM(cost_usd), 0) AS cost FROM task_usage WHERE project_id = ? AND day = ?",
    ),
    projectDays: q.query<SumRow & { day: string }, [string, string, string, string]>(
      `SELECT day, ${SUMS} FROM task_usage WHERE org_id = ? AND project_id = ? AND day >= ? AND day <= ? GROUP BY day ORDER BY day`,
    ),
    projectTasks: q.query<{ n: number }, [string, string, string, string]>(
      "SELECT COUNT(DISTINCT task_id) AS n FROM task_usage WHERE org_id = ? AND project_id = ? AND day >= ? AND day <= ?",
    ),
    project: q.query<{ id: string; policy: string }, [string, string]>("SELECT id, policy FROM projects WHERE id = ? AND org_id = ?"),
  };
}
export function usageStatements(core: Core) {
  let s = statements.get(core);
  if (!s) statements.set(core, (s = prepare(core)));
  return s;
}

/** The UTC day of a time, YYYY-MM-DD. */
export const dayOf = (ms = Date.now()) => iso(ms).slice(0, 10);

/** Rounds away float dust (0.1 + 0.2) to a millionth of a dollar. */
const money = (n: number) => Math.round(n * 1e6) / 1e6;

function totalsOf(r: SumRow, model: string | null): UsageTotals {
  return {
    inputTokens: r.input ?? 0,
    outputTokens: r.output ?? 0,
    cacheReadTokens: r.cache_read ?? 0,
    cacheWriteTokens: r.cache_write ?? 0,
    costUsd: money(r.cost ?? 0),
    model,
  };
}

/** A task's usage summed over its attempts, or null when nothing was reported. */
export function taskUsage(core: Core, taskId: string): UsageTotals | null {
  const s = usageStatements(core);
  const r = s.ofTask.get(taskId)!;
  return r.rows === 0 ? null : totalsOf(r, s.modelOf.get(taskId)?.model ?? null);
}

/** The usage of several tasks with one query (list pages). */
export function usageOfTasks(core: Core, taskIds: string[]): Map<string, UsageTotals> {
  const out = new Map<string, UsageTotals>();
  if (taskIds.length === 0) return out;
  for (const r of usageStatements(core).ofTasks.all(JSON.stringify(taskIds))) out.set(r.task_id, totalsOf(r, r.model));
  return out;
}

/** What a task's attempts before `attempt` cost. */
export function costBefore(core: Core, taskId: string, attempt: number): number {
  const all = usageStatements(core).ofTask.get(taskId)!;
  const current = usageStatements(core).ofAttempt.get(taskId, attempt)!;
  return money((all.cost ?? 0) - (current.cost ?? 0));
}

export interface Recorded {
  /** The task's cost so far (all attempts). */
  costUsd: number;
  /** What this report added, and to which project and day. */
  added: number;
  projectId: string;
  day: string;
}

/**
 * Records an attempt's cumulative usage: the growth since the last report goes to today's row.
 * `check` sees the task row inside the transaction (the lease); a smaller number than already
 * recorded (an agent that restarted its count) adds nothing rather than subtracting.
 */
export function recordUsage(core: Core, taskId: string, usage: Usage, check: (row: TaskRow) => void): Recorded {
  const s = usageStatements(core);
  return core.sqlite
    .transaction((): Recorded => {
      const row = s.task.get(taskId);
      if (!row) throw notFound("task");
      check(row);
      const before = totalsOf(s.ofAttempt.get(taskId, row.attempt)!, null);
      const grow = (now: number, was: number) => Math.max(0, now - was);
      const delta = {
        input: grow(usage.inputTokens, before.inputTokens),
        output: grow(usage.outputTokens, before.outputTokens),
        cacheRead: grow(usage.cacheReadTokens, before.cacheReadTokens),
        cacheWrite: grow(usage.cacheWriteTokens, before.cacheWriteTokens),
        cost: money(grow(usage.costUsd, before.costUsd)),
      };
      const day = dayOf();
      const nothing = delta.input + delta.output + delta.cacheRead + delta.cacheWrite + delta.cost === 0;
      // A report with nothing new still records the model the first time it is named.
      if (!nothing || (usage.model && s.modelOf.get(taskId)?.model !== usage.model)) {
        s.add.run(taskId, row.attempt, day, row.org_id, row.project_id, delta.input, delta.output, delta.cacheRead, delta.cacheWrite, delta.cost, usage.model, iso());
      }
      return { costUsd: money(s.ofTask.get(taskId)!.cost ?? 0), added: delta.cost, projectId: row.project_id, day };
    })
    .immediate();
}

/** What a project's tasks cost on one UTC day. */
export function projectCostOn(core: Core, projectId: string, day: string): number {
  return money(usageStatements(core).projectDay.get(projectId, day)!.cost);
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const MAX_DAYS = 366;

/** A query's date as a UTC day: YYYY-MM-DD, or an ISO time (its UTC day). */
function parseDay(value: string, field: string): string {
  const ms = Date.parse(DAY.test(value) ? `${value}T00:00:00Z` : value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(ms)) throw invalid(`${field} is not an ISO date`, [{ field, message: "an ISO 8601 date (2026-01-31) or time" }]);
  const day = dayOf(ms);
  // Date.parse rolls 2026-02-31 over to March: a date that does not exist is refused, not moved.
  if (DAY.test(value) && day !== value) throw invalid(`${field} is not a date`, [{ field, message: "no such day" }]);
  return day;
}

export interface ProjectUsage {
  projectId: string;
  from: string;
  to: string;
  totals: Omit<UsageTotals, "model"> & { tasks: number };
  days: (Omit<UsageTotals, "model"> & { day: string })[];
}

/** A project's usage from `from` to `to` (UTC days, both included; default the last 30 days), in total and per day. */
export function projectUsage(core: Core, orgId: string, projectId: string, q: { from?: string; to?: string }): ProjectUsage {
  const to = q.to !== undefined ? parseDay(q.to, "to") : dayOf();
  const from = q.from !== undefined ? parseDay(q.from, "from") : dayOf(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000);
  if (from > to) throw invalid("from is after to", [{ field: "from", message: `on or before to (${to})` }]);
  const span = Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000) + 1;
  if (span > MAX_DAYS) throw invalid(`the period is longer than ${MAX_DAYS} days`, [{ field: "from", message: `at most ${MAX_DAYS} days before to` }]);
  const s = usageStatements(core);
  if (!s.project.get(projectId, orgId)) throw notFound("project");
  const byDay = new Map(s.projectDays.all(orgId, projectId, from, to).map((r) => [r.day, r]));
  const zero: SumRow = { input: 0, output: 0, cache_read: 0, cache_write: 0, cost: 0, rows: 0 };
  const days: ProjectUsage["days"] = [];
  const sum = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
  for (let i = 0; i < span; i++) {
    const day = dayOf(Date.parse(`${from}T00:00:00Z`) + i * 86_400_000);
    const { model: _, ...t } = totalsOf(byDay.get(day) ?? zero, null);
    days.push({ day, ...t });
    for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += t[k];
  }
  const tasks = s.projectTasks.get(orgId, projectId, from, to)!.n;
  return { projectId, from, to, totals: { ...sum, costUsd: money(sum.costUsd), tasks }, days };
}

/** The per-task budget of a project's policy, for a task: null when the project sets none. */
export function taskBudget(core: Core, row: Pick<TaskRow, "id" | "attempt" | "budget_usd">, policy: unknown, attempt: number) {
  const { perTaskUsd } = budgetOf(policy);
  if (perTaskUsd === undefined) return null;
  // A policy raised above what a person approved earlier wins: the allowance never shrinks below perTaskUsd.
  const allowanceUsd = Math.max(row.budget_usd ?? 0, perTaskUsd);
  return { perTaskUsd, allowanceUsd, costUsd: costBefore(core, row.id, attempt) };
}

export const usd = (n: number) => `$${n.toFixed(2)}`;
