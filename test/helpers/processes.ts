// Processes the tests start and watch.
import { readFileSync } from "node:fs";
import { statFields } from "../../src/worker/orphans";

/** A process's state as /proc tells it ("R", "S", "T" stopped, "Z" zombie...), or "gone". */
export function processState(pid: number): string {
  try {
    return statFields(pid)[0]!;
  } catch {
    return "gone";
  }
}

/**
 * How many times the process has given up the CPU of its own accord (/proc's
 * voluntary_ctxt_switches): a stopped process that is continued and stopped again counts one more
 * (it wakes to stop itself), one left stopped counts none.
 */
export function voluntarySwitches(pid: number): number {
  return Number(/^voluntary_ctxt_switches:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))![1]);
}

/** True while the process exists and is not a zombie (an unreaped orphan has finished). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const state = processState(pid);
  return state !== "gone" && state !== "Z";
}

/**
 * This process's environment without ao's settings (AO_*), the allocator's (MIMALLOC_*, which
 * `ao serve` sets itself) and the names in `drop`: a child started with it is configured only by
 * what its test passes.
 */
export function inheritedEnv(...drop: string[]): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("AO_") && !k.startsWith("MIMALLOC_") && !drop.includes(k)));
}

/** A running process's environment, as the kernel holds it. */
export function environOf(pid: number): Record<string, string> {
  const entries = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0").filter(Boolean);
  return Object.fromEntries(entries.map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]));
}

/** A running process's command line, as the kernel holds it. */
export function argvOf(pid: number): string[] {
  return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").slice(0, -1);
}
