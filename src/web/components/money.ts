// Money as the pages show it: always with its cents ($18.42, not $18), and to a hundredth of a
// cent under a dollar, where one task's cost usually is ($0.0042, not $0.00).

export function usd(n: number): string {
  if (n === 0) return "$0.00";
  return `$${n < 1 ? n.toFixed(4) : n.toFixed(2)}`;
}
