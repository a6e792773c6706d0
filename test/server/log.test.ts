// Repeated warnings and errors are logged once per cause and interval (server/log.ts): a full
// disk once made the same stack trace thousands of times a second.
import { expect, test } from "bun:test";
import { withoutRepeats } from "../../src/server/log";

test("one line per level, message and cause per interval; the next one says how many were left out", () => {
  const lines: [string, string, Record<string, unknown> | undefined][] = [];
  const sink = (level: string) => (m: string, f?: Record<string, unknown>) => void lines.push([level, m, f]);
  let now = 0;
  const log = withoutRepeats({ info: sink("info"), warn: sink("warn"), error: sink("error") }, 1000, () => now);
  const full = { error: "SQLiteError: database or disk is full\n    at claim (leases.ts:1)" };
  for (let i = 0; i < 500; i++) log.error("worker message failed", full);
  log.error("worker message failed", { error: "TypeError: x is undefined\n    at y" }); // another cause
  log.warn("worker message failed", full); // another level
  log.info("hello");
  log.info("hello"); // info is never limited
  expect(lines).toEqual([
    ["error", "worker message failed", full],
    ["error", "worker message failed", { error: "TypeError: x is undefined\n    at y" }],
    ["warn", "worker message failed", full],
    ["info", "hello", undefined],
    ["info", "hello", undefined],
  ]);
  now = 999;
  log.error("worker message failed", full);
  expect(lines).toHaveLength(5);
  now = 1000;
  log.error("worker message failed", full);
  expect(lines.at(-1)).toEqual(["error", "worker message failed", { ...full, repeated: 500 }]);
  log.error("disk", { cause: "ENOSPC", path: "/a" });
  log.error("disk", { cause: "ENOSPC", path: "/b" });
  expect(lines.filter((l) => l[1] === "disk")).toHaveLength(1);
});

test("the lines of different requests are never repeats of each other, even at error level", () => {
  const lines: string[] = [];
  const log = withoutRepeats({ info: () => {}, warn: () => {}, error: (_m, f) => void lines.push(String(f?.requestId)) }, 60_000, () => 0);
  for (const requestId of ["r1", "r2", "r3"]) log.error("request", { requestId, method: "POST", route: "/x", status: 500 });
  expect(lines).toEqual(["r1", "r2", "r3"]);
});
