// Codex's sandbox helper, where a system bubblewrap is installed (Linux). Codex (0.169) prefers
// /usr/bin/bwrap to the one it ships, and through it starts its file-system helper by the name
// `codex-linux-sandbox`, looked up on a PATH that does not hold Codex's own links of that name. A
// thread whose permission profile denies a path (ao's always does) then never starts: "bwrap: execvp
// codex-linux-sandbox: No such file or directory". So the adapter gives the app-server a PATH that
// starts with a directory of its own, and links `codex-linux-sandbox` there to the running Codex
// (one binary that acts as the helper when started by that name, as Codex's own links do).
import { mkdirSync, readlinkSync, rmSync, symlinkSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { processIds, statFields } from "../orphans";

const SANDBOX_HELPER = "codex-linux-sandbox";

/** The directory for the helper's link: beside the checkout (never in it), or null off Linux. */
export function helperDirFor(workdir: string): string | null {
  if (process.platform !== "linux") return null;
  const dir = join(dirname(workdir), "codex-helper");
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** The environment with `dir` first on PATH. */
export function withHelperDir(env: Record<string, string>, dir: string | null): Record<string, string> {
  return dir ? { ...env, PATH: env.PATH ? `${dir}:${env.PATH}` : dir } : env;
}

/** The executable of a process, or null when it is gone or not ours to read. */
function exeOf(pid: number): string | null {
  try {
    return readlinkSync(`/proc/${pid}/exe`);
  } catch {
    return null;
  }
}

/** The processes whose parent is `pid` (from /proc; their order is the system's). */
function childrenOf(pid: number): number[] {
  return processIds().filter((p) => {
    try {
      return Number(statFields(p)[1]) === pid;
    } catch {
      return false; // gone meanwhile
    }
  });
}

/**
 * Links the helper to the Codex binary that `pid` runs: the process itself when `codex` on PATH is
 * the binary, else the first of its descendants that is (the npm package's `codex` is a Node.js
 * script that starts it). Call it once the app-server answers, so that the binary runs. Returns the
 * binary linked, or null when none was found (the helper is then left to Codex).
 */
export function linkSandboxHelper(dir: string, pid: number): string | null {
  const queue = [pid];
  for (let seen = 0; queue.length > 0 && seen < 50; seen++) {
    const p = queue.shift()!;
    const exe = exeOf(p);
    if (exe && basename(exe).startsWith("codex")) {
      const link = join(dir, SANDBOX_HELPER);
      rmSync(link, { force: true });
      symlinkSync(exe, link);
      return exe;
    }
    queue.push(...childrenOf(p));
  }
  return null;
}
