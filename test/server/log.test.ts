// Repeated warnings and errors are logged once per cause and interval (server/log.ts): a full
// disk once made the same stack trace thousands of times a second.
import { expect, test } from "bun:test";
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, linesByTurn, withoutRepeats } from "../../src/server/log";

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

// The server's lines leave once per event-loop turn (log.ts, linesByTurn): one write for the lines of
// a group commit's answers instead of one each, and none lost when the process exits.
test("lines are held until the end of their turn, then written together", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ao-log-"));
  const path = join(dir, "out.log");
  const fd = openSync(path, "w");
  const log = createLogger({ sink: linesByTurn(fd) });
  for (let i = 0; i < 3; i++) log.info("request", { i });
  expect(readFileSync(path, "utf8")).toBe("");
  await new Promise((r) => setImmediate(r));
  await new Promise((r) => setImmediate(r));
  const lines = readFileSync(path, "utf8").trim().split("\n").map((l) => JSON.parse(l));
  expect(lines.map((l) => l.i)).toEqual([0, 1, 2]);
  closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
});

for (const [how, end] of [
  ["process.exit()", "process.exit(3)"],
  ["an uncaught error", "throw new Error('boom')"],
] as const) {
  test(`the lines of the last turn are written when the process ends by ${how}`, async () => {
    const script = `import { createLogger } from ${JSON.stringify(join(import.meta.dir, "../../src/server/log.ts"))};
      const log = createLogger();
      for (let i = 0; i < 3; i++) log.info("last", { i });
      ${end};`;
    const child = Bun.spawn([process.execPath, "-e", script], { stderr: "pipe", stdout: "ignore" });
    const err = await new Response(child.stderr).text();
    expect(await child.exited).not.toBe(0);
    const lines = err.split("\n").filter((l) => l.startsWith("{")).map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.msg, l.i])).toEqual([["last", 0], ["last", 1], ["last", 2]]);
  });
}

test("a line logged while the process goes on is on stderr without waiting for another", async () => {
  const script = `import { createLogger } from ${JSON.stringify(join(import.meta.dir, "../../src/server/log.ts"))};
    const log = createLogger();
    log.info("first");
    setTimeout(() => {}, 30_000);`;
  const child = Bun.spawn([process.execPath, "-e", script], { stderr: "pipe", stdout: "ignore" });
  try {
    const reader = child.stderr.getReader();
    let text = "";
    while (!text.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(JSON.parse(text.split("\n")[0]).msg).toBe("first");
  } finally {
    child.kill();
  }
});
