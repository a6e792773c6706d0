// Tests that need Debian's bubblewrap at /usr/bin/bwrap: the worker's confinement of Claude Code
// and exec (src/worker/confine.ts), and Codex, which prefers that bubblewrap to its own
// (src/worker/agents/codex-helper.ts). CI installs it (.ci/run) and fails them without it; on a
// machine without it they are skipped with a notice, as the browser tests are without chromium.
import { existsSync } from "node:fs";
import { describe, test } from "bun:test";

export const BWRAP = "/usr/bin/bwrap";
const missing = !existsSync(BWRAP);
const why = `${BWRAP} is missing: this needs Debian's bubblewrap (apt-get install -y bubblewrap; .ci/run does it)`;
const refuse = () => {
  throw new Error(why);
};

/** test() for a test that needs bubblewrap. */
export function testWithBwrap(name: string, fn: () => void | Promise<unknown>, timeout?: number) {
  if (!missing) return test(name, fn, timeout);
  if (process.env.CI) return test(name, refuse);
  console.warn(`[bubblewrap] skipping "${name}": ${why}; CI fails instead`);
  return test.skip(name, fn);
}

/** describe() for tests that all need bubblewrap. */
export function describeWithBwrap(name: string, body: () => void) {
  if (!missing) return describe(name, body);
  if (process.env.CI) return describe(name, () => void test(`${BWRAP} is installed`, refuse));
  console.warn(`[bubblewrap] skipping "${name}": ${why}; CI fails instead`);
  return describe.skip(name, body);
}
