// Tests that need Debian's bubblewrap at /usr/bin/bwrap: the worker's confinement of Claude Code
// and exec (src/worker/confine.ts), and Codex, which prefers that bubblewrap to its own
// (src/worker/agents/codex-helper.ts). CI installs it (.ci/run) and fails them without it; on a
// machine without it they are skipped with a notice, as the browser tests are without chromium.
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { needing } from "./needs";

export const BWRAP = "/usr/bin/bwrap";
const bwrap = needing(BWRAP, "bubblewrap", "this needs Debian's bubblewrap", "bubblewrap");

/** test() for a test that needs bubblewrap. */
export const testWithBwrap = bwrap.test;
/** describe() for tests that all need bubblewrap. */
export const describeWithBwrap = bwrap.describe;

/** What the one-level stand-in says when it is started inside itself. */
export const NESTING_REFUSED = "bwrap: No permissions to create new namespace";

/**
 * Writes at `path` a bwrap that runs the real one but refuses to run inside itself, as on a machine
 * that allows one level of user namespaces; returns `path`.
 */
export function oneLevelBwrap(path: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `#!/bin/sh\n[ -n "$ONE_LEVEL" ] && { echo "${NESTING_REFUSED}" >&2; exit 1; }\nONE_LEVEL=1 exec ${BWRAP} "$@"\n`);
  chmodSync(path, 0o755);
  return path;
}
