// Usage and cost (issue 10): what each attempt's agent reported, kept per attempt and UTC day
// (src/db/schema/tasks.ts, task_usage). A worker reports an attempt's cumulative usage; the server
// adds the difference to today's row, so a report repeated or arriving late adds nothing twice.
import type { Core } from "../../server/core";
import { invalid, notFound } from "../../server/errors";
import { iso } from "../../lib/time";
import type { Usage } from "../../protocol/requests";
import type { TaskRow } from "../tasks/record";
import { budgetOf } from "../projects/policy";
import { all, get, run, type Q } from "../../db/query";

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

const SELECT_TASK = "SELECT * FROM tasks WHERE id = ?";
const OF_ATTEMPT = `SELECT ${SUMS} FROM task_usage WHERE task_id = ? AND attempt = ?`;
const OF_TASK = `SELECT ${SUMS} FROM task_usage WHERE task_id = ?`;
// The latest row that named a model.
const MODEL_OF = "SELECT model FROM task_usage WHERE task_id = ? AND model IS NOT NULL ORDER BY updated_at DESC LIMIT 1";
const OF_TASKS = `SELECT task_id, ${SUMS}, (SELECT u2.model FROM task_usage u2 WHERE u2.task_id = u.task_id AND u2.model IS NOT NULL
     ORDER BY u2.updated_at DESC LIMIT 1) AS model
   FROM task_usage u WHERE task_id IN (SELECT value FROM json_each(?)) GROUP BY task_id`;
const ADD = `INSERT INTO task_usage (task_id, attempt, day, org_id, project_id, input_tokens, output_tokens, cache_read_tokens,
     cache_write_tokens, cost_usd, model, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
   ON CONFLICT (task_id, attempt, day) DO UPDATE SET input_tokens = task_usage.input_tokens + excluded.input_tokens,
     output_tokens = task_usage.output_tokens + excluded.output_tokens, cache_read_tokens = task_usage.cache_read_tokens + excluded.cache_read_tokens,
     cache_write_tokens = task_usage.cache_write_tokens + excluded.cache_write_tokens, cost_usd = task_usage.cost_usd + excluded.cost_usd,
     model = COALESCE(excluded.model, task_usage.model), updated_at = excluded.updated_at`;
const PROJECT_DAY = "SELECT COALESCE(SUM(cost_usd), 0) AS cost FROM task_usage WHERE project_id = ? AND day = ?";
const PROJECT_DAYS = `SELECT day, ${SUMS} FROM task_usage WHERE org_id = ? AND project_id = ? AND day >= ? AND day <= ? GROUP BY day ORDER BY day`;
const PROJECT_TASKS = "SELECT COUNT(DISTINCT task_id) AS n FROM task_usage WHERE org_id = ? AND project_id = ? AND day >= ? AND day <= ?";
const SELECT_PROJECT = "SELECT id, policy FROM projects WHERE id = ? AND org_id = ?";

/** The UTC day of a time, YYYY-MM-DD. */
export const dayOf = (ms = Date.now()) => iso(ms).slice(0, 10);

/** Rounds away float dust (0.1 + 0.2) to a millionth of a dollar. */
export const money = (n: number) => Math.round(n * 1e6) / 1e6;

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
export function* taskUsage(_core: Core, taskId: string): Q<UsageTotals | null> {
  const r = (yield* get<SumRow>(OF_TASK, taskId))!;
  if (r.rows === 0) return null;
  return totalsOf(r, (yield* get<{ model: string }>(MODEL_OF, taskId))?.model ?? null);
}

/** The usage of several tasks with one query (list pages). */
export function* usageOfTasks(_core: Core, taskIds: string[]): Q<Map<string, UsageTotals>> {
  const out = new Map<string, UsageTotals>();
  if (taskIds.length === 0) return out;
  for (const r of yield* all<SumRow & { task_id: string; model: string | null }>(OF_TASKS, JSON.stringify(taskIds))) out.set(r.task_id, totalsOf(r, r.model));
  return out;
}

/** What a task's attempts before `attempt` cost. */
export function* costBefore(_core: Core, taskId: string, attempt: number): Q<number> {
  const total = (yield* get<SumRow>(OF_TASK, taskId))!;
  const current = (yield* get<SumRow>(OF_ATTEMPT, taskId, attempt))!;
  return money((total.cost ?? 0) - (current.cost ?? 0));
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
 * Run it in a write: `check` sees the task row inside the transaction (the lease); a smaller
 * number than already recorded (an agent that restarted its count) adds nothing rather than subtracting.
 */
export function* recordUsage(_core: Core, taskId: string, usage: Usage, check: (row: TaskRow) => void): Q<Recorded> {
  const row = yield* get<TaskRow>(SELECT_TASK, taskId);
  if (!row) throw notFound("task");
  check(row);
  const before = totalsOf((yield* get<SumRow>(OF_ATTEMPT, taskId, row.attempt))!, null);
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
  if (!nothing || (usage.model && (yield* get<{ model: string }>(MODEL_OF, taskId))?.model !== usage.model)) {
    yield* run(ADD, taskId, row.attempt, day, row.org_id, row.project_id, delta.input, delta.output, delta.cacheRead, delta.cacheWrite, delta.cost, usage.model ?? null, iso());
  }
  return { costUsd: money((yield* get<SumRow>(OF_TASK, taskId))!.cost ?? 0), added: delta.cost, projectId: row.project_id, day };
}

/** What a project's tasks cost on one UTC day. */
export function* projectCostOn(_core: Core, projectId: string, day: string): Q<number> {
  return money((yield* get<{ cost: number }>(PROJECT_DAY, projectId, day))!.cost);
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
export function* projectUsage(_core: Core, orgId: string, projectId: string, q: { from?: string; to?: string }): Q<ProjectUsage> {
  const to = q.to !== undefined ? parseDay(q.to, "to") : dayOf();
  const from = q.from !== undefined ? parseDay(q.from, "from") : dayOf(Date.parse(`${to}T00:00:00Z`) - 29 * 86_400_000);
  if (from > to) throw invalid("from is after to", [{ field: "from", message: `on or before to (${to})` }]);
  const span = Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000) + 1;
  if (span > MAX_DAYS) throw invalid(`the period is longer than ${MAX_DAYS} days`, [{ field: "from", message: `at most ${MAX_DAYS} days before to` }]);
  if (!(yield* get(SELECT_PROJECT, projectId, orgId))) throw notFound("project");
  const byDay = new Map((yield* all<SumRow & { day: string }>(PROJECT_DAYS, orgId, projectId, from, to)).map((r) => [r.day, r]));
  const zero: SumRow = { input: 0, output: 0, cache_read: 0, cache_write: 0, cost: 0, rows: 0 };
  const days: ProjectUsage["days"] = [];
  const sum = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0 };
  for (let i = 0; i < span; i++) {
    const day = dayOf(Date.parse(`${from}T00:00:00Z`) + i * 86_400_000);
    const { model: _, ...t } = totalsOf(byDay.get(day) ?? zero, null);
    days.push({ day, ...t });
    for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += t[k];
  }
  const tasks = (yield* get<{ n: number }>(PROJECT_TASKS, orgId, projectId, from, to))!.n;
  return { projectId, from, to, totals: { ...sum, costUsd: money(sum.costUsd), tasks }, days };
}

/** The per-task budget of a project's policy, for a task: null when the project sets none. */
export function* taskBudget(core: Core, row: Pick<TaskRow, "id" | "attempt" | "budget_usd">, policy: unknown, attempt: number) {
  const { perTaskUsd } = budgetOf(policy);
  if (perTaskUsd === undefined) return null;
  // A policy raised above what a person approved earlier wins: the allowance never shrinks below perTaskUsd.
  const allowanceUsd = Math.max(row.budget_usd ?? 0, perTaskUsd);
  return { perTaskUsd, allowanceUsd, costUsd: yield* costBefore(core, row.id, attempt) };
}
