// Agents left running by a worker that died (kill -9, power loss): each attempt records its
// agent's process group with the process's start time, and the next start of the worker ends
// that group only if the same process still exists. A bare pid could, after a reboot, name an
// unrelated process group of the same user. Codex's sandbox helpers live outside that group and
// are found by the checkout they were started for.
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const FILE = "agent.pid";

/**
 * The fields of /proc/<pid>/stat after the command name (which may contain spaces): [0] is the
 * state, [1] the parent's pid, [19] the start time. Throws when the process is gone (or off Linux).
 */
export function statFields(pid: number | string): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/** The ids of the processes the system lists in /proc (Linux); throws elsewhere. */
export function processIds(): number[] {
  return readdirSync("/proc")
    .filter((p) => /^\d+$/.test(p))
    .map(Number);
}

/** When the process started, as the system tells it (Linux: /proc; elsewhere: ps), or null. */
export function processStart(pid: number): string | null {
  try {
    return statFields(pid)[19] ?? null;
  } catch {}
  try {
    const r = Bun.spawnSync(["ps", "-o", "lstart=", "-p", String(pid)], { stdout: "pipe", stderr: "ignore" });
    const out = r.stdout.toString().trim();
    return r.exitCode === 0 && out ? out : null;
  } catch {
    return null;
  }
}

export function recordAgent(runDir: string, pid: number) {
  writeFileSync(join(runDir, FILE), JSON.stringify({ pid, start: processStart(pid) }));
}

/** Ends the agent group an earlier run left behind; true when one was killed. */
export function killOrphan(runDir: string): boolean {
  let rec: { pid?: unknown; start?: unknown };
  try {
    rec = JSON.parse(readFileSync(join(runDir, FILE), "utf8"));
  } catch {
    return false;
  }
  const pid = Number(rec.pid);
  if (!Number.isInteger(pid) || pid <= 1 || typeof rec.start !== "string" || processStart(pid) !== rec.start) return false;
  try {
    process.kill(-pid, "SIGKILL");
    return true;
  } catch {
    return false;
  }
}

/**
 * Ends the file-system helpers Codex started in its sandbox for a checkout at or under `dir`, and
 * returns how many. Under a permission profile Codex runs them in bubblewrap in a session of their
 * own, out of the app-server's process group, and some outlive the app-server (seen with Codex
 * 0.169 on Linux): each would sleep on until the machine restarts. The Codex adapter calls this
 * when its app-server exits, and the worker's next start for the runs a killed worker left.
 * Linux only; elsewhere there is no /proc and nothing of the kind.
 */
export function killSandboxHelpers(dir: string): number {
  let pids: number[];
  try {
    pids = processIds();
  } catch {
    return 0;
  }
  let killed = 0;
  for (const pid of pids) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "latin1").split("\0");
      const at = argv.indexOf("--sandbox-policy-cwd");
      const cwd = at >= 0 ? argv[at + 1] : undefined;
      if (cwd === undefined || !argv.includes("--codex-run-as-fs-helper")) continue;
      if (cwd !== dir && !cwd.startsWith(`${dir}/`)) continue;
      process.kill(pid, "SIGKILL");
      killed++;
    } catch {
      // Gone meanwhile, or not ours to read.
    }
  }
  return killed;
}
