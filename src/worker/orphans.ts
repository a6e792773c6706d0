// Agents left running by a worker that died (kill -9, power loss): each attempt records its
// agent's process group with the process's start time, and the next start of the worker ends
// that group only if the same process still exists. A bare pid could, after a reboot, name an
// unrelated process group of the same user.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const FILE = "agent.pid";

/** When the process started, as the system tells it (Linux: /proc; elsewhere: ps), or null. */
export function processStart(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Field 22 (starttime), counted after the command name, which may contain spaces.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? null;
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
