// How messages, timeline lines and `ao task show`'s budget write US dollars (src/lib/money.ts):
// to the cent, rounded, cents always shown.
import { expect, test } from "bun:test";
import { usd } from "../../src/lib/money";

const cases: [number, string][] = [
  [0, "$0.00"],
  [0.004, "$0.00"],
  [0.006, "$0.01"],
  [2, "$2.00"],
  [2.141, "$2.14"],
  [18.5, "$18.50"],
  [1234.567, "$1234.57"],
];
for (const [amount, shown] of cases) test(`usd(${amount}) reads ${shown}`, () => expect(usd(amount)).toBe(shown));
