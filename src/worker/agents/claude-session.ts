// A retry that continues finds the previous attempt's Claude Code session. Claude Code keeps a
// session under its configuration directory in a folder named after the working directory, and
// each attempt works in a directory of its own (RUNS/<task>-a<N>/work, the kept checkout moved
// there), so `--continue` alone would find nothing: the newest session of an earlier attempt of
// the same task is copied into the new directory's folder and resumed by its id.
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { basename, dirname, join } from "node:path";

/** Claude Code's folder name for a working directory. */
export const projectFolderOf = (dir: string) => dir.replace(/[^a-zA-Z0-9]/g, "-");

export function claudeConfigDir(env: Record<string, string | undefined>): string {
  return env.CLAUDE_CONFIG_DIR || join(env.HOME || homedir(), ".claude");
}

/** The id of the newest session an earlier attempt of this task left, made resumable here; null when there is none. */
export function previousSession(workdir: string, env: Record<string, string | undefined>): string | null {
  const attemptDir = dirname(workdir);
  const m = /^(.*-a)\d+$/.exec(basename(attemptDir));
  if (!m) return null;
  const projects = join(claudeConfigDir(env), "projects");
  const here = projectFolderOf(workdir);
  const earlier = new RegExp(`^${projectFolderOf(join(dirname(attemptDir), m[1])).replace(/[-]/g, "\\-")}\\d+\\-${projectFolderOf(basename(workdir))}$`);
  let newest: { path: string; mtime: number } | null = null;
  try {
    for (const folder of readdirSync(projects)) {
      if (folder === here || !earlier.test(folder)) continue;
      for (const file of readdirSync(join(projects, folder))) {
        if (!file.endsWith(".jsonl")) continue;
        const path = join(projects, folder, file);
        const mtime = statSync(path).mtimeMs;
        if (!newest || mtime > newest.mtime) newest = { path, mtime };
      }
    }
  } catch {
    return null;
  }
  if (!newest) return null;
  const target = join(projects, here, basename(newest.path));
  mkdirSync(dirname(target), { recursive: true });
  if (!existsSync(target)) copyFileSync(newest.path, target);
  return basename(newest.path, ".jsonl");
}
