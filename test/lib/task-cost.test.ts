// How a task's cost and the usage pages write money (src/lib/money.ts: the task page, the project's
// usage, ao task show): cents always, a hundredth of a cent under a dollar; a task's cost of 0 with
// tokens used is not reported, not free.
import { describe, expect, test } from "bun:test";
import { costText, fineUsd } from "../../src/lib/money";

describe("fineUsd", () => {
  const cases: [number, string][] = [
    [0, "$0.00"],
    [0.0042, "$0.0042"],
    [0.5, "$0.5000"],
    [1, "$1.00"],
    [9.99, "$9.99"],
    [10, "$10.00"],
    [18.42, "$18.42"],
    [1234.5, "$1234.50"],
  ];
  for (const [amount, shown] of cases) test(`${amount} reads ${shown}`, () => expect(fineUsd(amount)).toBe(shown));
});

describe("costText", () => {
  const usage = (costUsd: number, inputTokens = 0, outputTokens = 0) => ({ inputTokens, outputTokens, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd, model: null });
  const cases: { name: string; usage: ReturnType<typeof usage>; ended: boolean; shown: string }[] = [
    { name: "tokens but no cost yet, running (Claude Code reports its cost at the end)", usage: usage(0, 1200, 300), ended: false, shown: "not reported yet" },
    { name: "tokens but no cost, ended", usage: usage(0, 1200, 300), ended: true, shown: "not reported" },
    { name: "cache tokens alone count as tokens", usage: { ...usage(0), cacheReadTokens: 5000 }, ended: true, shown: "not reported" },
    { name: "nothing used", usage: usage(0), ended: true, shown: "$0.00" },
    { name: "a cost under a dollar", usage: usage(0.0421, 1200, 300), ended: false, shown: "$0.0421" },
    { name: "a cost over ten dollars", usage: usage(18.42, 120_000, 30_000), ended: true, shown: "$18.42" },
  ];
  for (const c of cases) test(`${c.name}: ${c.shown}`, () => expect(costText(c.usage, c.ended)).toBe(c.shown));
});
