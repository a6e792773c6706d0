// US dollars to the cent ($2.14), as people read an amount in a message: the server's and the
// worker's (a daily budget reached, a task over its allowance), a timeline line, `ao task show`'s
// budget. These are budgets and the costs that reached them, dollars where cents are enough; the
// web app writes a task's own cost finer (src/web/components/money.ts). No imports: the worker,
// the CLI and the browser bundle (through src/modules/tasks/event-text.ts) take it.

export const usd = (n: number): string => `$${n.toFixed(2)}`;
