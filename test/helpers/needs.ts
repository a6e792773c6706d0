// Tests that need something of the machine: a program from a Debian package (chromium,
// bubblewrap), or a right (root, to make a mount namespace). CI provides them (.ci/run runs as root
// and installs the packages), and there a lack is a failing test; on a developer's machine it
// skips the tests, with a line saying so.
import { existsSync } from "node:fs";
import { describe, test } from "bun:test";

/**
 * What the machine lacks for some tests: the error they fail with in CI (a describe() as one test
 * named `check`), and the line of a skip.
 */
export interface Lack {
  check: string;
  refuse: string;
  skip(name: string): string;
}

/** describe() and test() for tests that cannot run where `lack` is not null. */
export function requiring(lack: Lack | null) {
  const refuse = () => {
    throw new Error(lack!.refuse);
  };
  return {
    describe(name: string, body: () => void) {
      if (!lack) return describe(name, body);
      if (process.env.CI) return describe(name, () => void test(lack.check, refuse));
      console.warn(lack.skip(name));
      return describe.skip(name, body);
    },
    test(name: string, fn: () => void | Promise<unknown>, timeout?: number) {
      if (!lack) return test(name, fn, timeout);
      if (process.env.CI) return test(name, refuse);
      console.warn(lack.skip(name));
      return test.skip(name, fn);
    },
  };
}

/**
 * describe() and test() for tests that need `path`, from Debian's package `pkg`. `need` says what
 * needs it; `tag` starts the line of a skip.
 */
export function needing(path: string, pkg: string, need: string, tag: string) {
  return requiring(
    existsSync(path)
      ? null
      : {
          check: `${path} is installed`,
          refuse: `${path} is missing: ${need} (apt-get install -y ${pkg}; .ci/run does it)`,
          skip: (name) => `[${tag}] ${path} is missing: skipping "${name}" (apt-get install -y ${pkg} to run it; CI fails instead)`,
        },
  );
}
