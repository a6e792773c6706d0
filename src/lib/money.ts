// Money in US dollars, as people read it. No imports: the worker, the CLI and the browser bundle
// take it (the bundle through src/modules/tasks/event-text.ts and the pages).

/**
 * To the cent ($2.14), as an amount reads in a message: the server's and the worker's (a daily
 * budget reached, a task over its allowance), a timeline line, `ao task show`'s budget. These are
 * budgets and the costs that reached them, dollars where cents are enough.
 */
export const usd = (n: number): string => `$${n.toFixed(2)}`;

/**
 * Finer, for a task's own cost and the usage pages: always with its cents ($18.42, not $18), and
 * to a hundredth of a cent under a dollar, where one task's cost usually is ($0.0042, not $0.00).
 */
export function fineUsd(n: number): string {
  if (n === 0) return "$0.00";
  return `$${n < 1 ? n.toFixed(4) : n.toFixed(2)}`;
}

export interface TaskUsageLike {
  costUsd: number;
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/**
 * A task's cost, on the task page and in `ao task show`. Claude Code reports its cost only in its
 * final result, so a running task's cost is 0 while its tokens grow: with tokens used (of any
 * kind), a cost of 0 was not reported, it is not free.
 */
export function costText(u: TaskUsageLike, ended: boolean): string {
  const tokens = u.inputTokens + u.outputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  if (u.costUsd === 0 && tokens > 0) return ended ? "not reported" : "not reported yet";
  return fineUsd(u.costUsd);
}
