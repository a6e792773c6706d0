// Tests that need a program from a Debian package (chromium, bubblewrap). CI installs them
// (.ci/run), and there a missing program is a failing test; on a developer's machine without it
// the tests are skipped, with a line saying so.
import { existsSync } from "node:fs";
import { describe, test } from "bun:test";

/**
 * describe() and test() for tests that need `path`, from Debian's package `pkg`. `need` says what
 * needs it; `tag` starts the line of a skip.
 */
export function needing(path: string, pkg: string, need: string, tag: string) {
  const missing = !existsSync(path);
  const refuse = () => {
    throw new Error(`${path} is missing: ${need} (apt-get install -y ${pkg}; .ci/run does it)`);
  };
  const skipping = (name: string) => console.warn(`[${tag}] ${path} is missing: skipping "${name}" (apt-get install -y ${pkg} to run it; CI fails instead)`);
  return {
    describe(name: string, body: () => void) {
      if (!missing) return describe(name, body);
      if (process.env.CI) return describe(name, () => void test(`${path} is installed`, refuse));
      skipping(name);
      return describe.skip(name, body);
    },
    test(name: string, fn: () => void | Promise<unknown>, timeout?: number) {
      if (!missing) return test(name, fn, timeout);
      if (process.env.CI) return test(name, refuse);
      skipping(name);
      return test.skip(name, fn);
    },
  };
}
