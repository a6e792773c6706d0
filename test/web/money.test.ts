// How the web app writes money (src/web/components/money.ts): cents always, a hundredth of a
// cent under a dollar. Scenarios as data: the amount and what the page shows.
import { describe, expect, test } from "bun:test";
import { usd } from "../../src/web/components/money";

describe("usd", () => {
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
  for (const [amount, shown] of cases) test(`${amount} reads ${shown}`, () => expect(usd(amount)).toBe(shown));
});
