// Tests that need Debian's bubblewrap at /usr/bin/bwrap: the worker's confinement of Claude Code
// and exec (src/worker/confine.ts), and Codex, which prefers that bubblewrap to its own
// (src/worker/agents/codex-helper.ts). CI installs it (.ci/run) and fails them without it; on a
// machine without it they are skipped with a notice, as the browser tests are without chromium.
import { needing } from "./needs";

export const BWRAP = "/usr/bin/bwrap";
const bwrap = needing(BWRAP, "bubblewrap", "this needs Debian's bubblewrap", "bubblewrap");

/** test() for a test that needs bubblewrap. */
export const testWithBwrap = bwrap.test;
/** describe() for tests that all need bubblewrap. */
export const describeWithBwrap = bwrap.describe;
