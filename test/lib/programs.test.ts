// Every database program the server makes is run (scripts/check-programs.ts): a generator called
// without yield* or a store runs nothing, and TypeScript would not say so.
import { expect, test } from "bun:test";
import { findUnrunPrograms } from "../../scripts/check-programs";

test("no database program is made and left unrun", () => {
  expect(findUnrunPrograms()).toEqual([]);
}, 180_000);
