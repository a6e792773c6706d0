// The worker's own files kept from the commands of agents that have no sandbox of their own.
// Claude Code and exec run their commands as the worker's user; the worker starts them inside
// bubblewrap, which shows them the whole file system as it is, except that each unreadable file
// (the worker's credential) is covered by a node nobody can open: a `cat`, a copy or an overwrite
// of it is refused, by any path or link. Codex is not wrapped: its own sandbox denies the same
// files (codex.ts). Where bubblewrap is missing or cannot run (no user namespaces, say), commands
// run as before and the worker says so once at its start.
import { existsSync } from "node:fs";
import { realPath } from "./policy";

/** A command and its arguments, as they are to be started. */
export type Command = { command: string; args: string[] };

/** Turns a command into one that runs confined (or returns it as it is, unconfined). */
export type Confine = (c: Command) => Command;

export interface Confinement {
  confine: Confine;
  /** Whether commands run confined, and if not, why: for the worker's first lines. */
  status: string;
}

/** Commands as they are: what tests and machines without bubblewrap get. */
export const unconfined: Confine = (c) => c;

/**
 * The confinement for this machine, tried once: a trial run of bubblewrap with the same covers
 * must succeed, or every command runs unconfined (`status` says why). `bwrap`: the program to use.
 */
export function confinementFor(unreadable: readonly string[], bwrap = Bun.which("bwrap")): Confinement {
  if (!bwrap) {
    const why = process.platform === "linux" ? "bubblewrap (bwrap) is not installed" : "bubblewrap runs on Linux only";
    return { confine: unconfined, status: `agent commands can read the worker's credential: ${why}` };
  }
  // By real path: bubblewrap cannot mount over a path that goes through a link.
  const covers = unreadable.filter((p) => existsSync(p)).flatMap((p) => ["--ro-bind", "/dev/null", realPath(p)]);
  const prefix = [bwrap, "--dev-bind", "/", "/", ...covers, "--"];
  const trial = Bun.spawnSync([...prefix, "/bin/sh", "-c", ":"], { stdout: "ignore", stderr: "pipe" });
  if (trial.exitCode !== 0) {
    const why = trial.stderr.toString().trim().split("\n")[0] || `exit ${trial.exitCode}`;
    return { confine: unconfined, status: `agent commands can read the worker's credential: bubblewrap cannot run here (${why})` };
  }
  return {
    // A program that is not there is left to fail as it is, with the system's reason (ENOENT),
    // rather than as bubblewrap's exit code 1.
    confine: (c) => (Bun.which(c.command) ? { command: prefix[0], args: [...prefix.slice(1), c.command, ...c.args] } : c),
    status: "agent commands run in bubblewrap, without the worker's credential",
  };
}
