// Money as the pages show it: always with its cents ($18.42, not $18), and to a hundredth of a
// cent under a dollar, where one task's cost usually is ($0.0042, not $0.00). Messages, timeline
// lines and budgets, amounts of dollars, are written to the cent (src/lib/money.ts).
import type { Usage } from "../app/types";

export function usd(n: number): string {
  if (n === 0) return "$0.00";
  return `$${n < 1 ? n.toFixed(4) : n.toFixed(2)}`;
}

/**
 * A task's cost. Claude Code reports its cost only in its final result, so a running task's cost
 * is 0 while its tokens grow: with tokens used, a cost of 0 was not reported, it is not free.
 */
export function costText(u: Usage, ended: boolean): string {
  const tokens = u.inputTokens + u.outputTokens + u.cacheReadTokens + u.cacheWriteTokens;
  if (u.costUsd === 0 && tokens > 0) return ended ? "not reported" : "not reported yet";
  return usd(u.costUsd);
}
