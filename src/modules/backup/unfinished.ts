// The mark of a restore under way. `ao restore` writes it into the directory before anything else
// and removes it last, so a restore that was killed (kill -9, a lost SSH session, a full disk)
// leaves a directory that says so: ao serve refuses it instead of starting a new, empty instance
// beside the restored key and artifacts, and ao restore and ao doctor name it.
import { existsSync } from "node:fs";
import { join } from "node:path";

export const UNFINISHED_RESTORE = "ao-restore.unfinished";
export const AFTER_UNFINISHED_RESTORE = "empty the directory and run ao restore again";

/** "an ao restore into DIR did not finish" when it holds the mark, or null. */
export function unfinishedRestore(dataDir: string): string | null {
  if (!existsSync(join(dataDir, UNFINISHED_RESTORE))) return null;
  return `an ao restore into ${dataDir} did not finish (it holds ${UNFINISHED_RESTORE})`;
}
