// The worker's own files kept from its agents' commands. Claude Code, Codex and exec run their
// commands as the worker's user; the worker starts the agent inside bubblewrap, which shows it
// and everything it runs the whole file system as it is, except that each unreadable file (the
// worker's credential) is covered by a node nobody can open: a `cat`, a copy or an overwrite of
// it is refused, by any path or link; and the hidden directory (the worker's runs: the other
// attempts' checkouts and artifacts, and the checkouts kept for retries) is an empty one in which
// only the attempt's own directory is there. Codex runs its own sandbox (a bubblewrap) inside it
// (codex.ts). Where bubblewrap is missing or cannot run (no user namespaces, say), agents run as
// before and the worker says so once at its start.
import { existsSync } from "node:fs";
import { realPath } from "./policy";

/** A command and its arguments, as they are to be started. */
export type Command = { command: string; args: string[] };

/** Turns a command into one that runs confined (or returns it as it is, unconfined). */
export type Confine = (c: Command) => Command;

export interface Confinement {
  /** Confines one attempt's commands: of the hidden directory they see `own`, the attempt's directory, alone. */
  confineIn(own: string): Confine;
  /** Whether commands run confined, and if not, why: for the worker's first lines. */
  status: string;
  /** Whether commands run in bubblewrap. */
  confined: boolean;
  /**
   * Why a bubblewrap cannot run inside this confinement (as Codex's sandbox does), or null when it
   * can or nothing is confined. Tried once, when first asked.
   */
  nestingRefused(): string | null;
}

/** Commands as they are: what tests and machines without bubblewrap get. */
export const unconfined: Confine = (c) => c;

/** The confinement that confines nothing, with the reason the worker says at its start. */
export const unconfinedBecause = (status: string): Confinement => ({ confineIn: () => unconfined, status, confined: false, nestingRefused: () => null });

/** Runs `command` to its end; null when it succeeds, else the first line it said (or its exit code). */
function refusal(command: string[]): string | null {
  const r = Bun.spawnSync(command, { stdout: "ignore", stderr: "pipe" });
  return r.exitCode === 0 ? null : r.stderr.toString().trim().split("\n")[0] || `exit ${r.exitCode}`;
}

export interface ConfineOptions {
  /** The directory whose entries other than an attempt's own its commands do not see (the worker's runs). */
  hidden?: string;
  /** The bubblewrap program to use (null: none installed). */
  bwrap?: string | null;
}

/**
 * The confinement for this machine, tried once: a trial run of bubblewrap with the same covers
 * must succeed, or every command runs unconfined (`status` says why).
 */
export function confinementFor(unreadable: readonly string[], { hidden, bwrap = Bun.which("bwrap") }: ConfineOptions = {}): Confinement {
  if (!bwrap) {
    const why = process.platform === "linux" ? "bubblewrap (bwrap) is not installed" : "bubblewrap runs on Linux only";
    return unconfinedBecause(`agent commands can read the worker's credential and other tasks' checkouts: ${why}`);
  }
  // By real path: bubblewrap cannot mount over a path that goes through a link. An empty file
  // system over the hidden directory first, then the attempt's own directory back in it (bubblewrap
  // makes the mount point), then the covers.
  const covers = unreadable.filter((p) => existsSync(p)).flatMap((p) => ["--ro-bind", "/dev/null", realPath(p)]);
  const hiding = hidden && existsSync(hidden) ? realPath(hidden) : null;
  const prefixFor = (own: string | null) => [
    bwrap,
    "--dev-bind",
    "/",
    "/",
    ...(hiding ? ["--tmpfs", hiding] : []),
    ...(hiding && own ? ["--bind", realPath(own), realPath(own)] : []),
    ...covers,
    "--",
  ];
  const why = refusal([...prefixFor(null), "/bin/sh", "-c", ":"]);
  if (why) return unconfinedBecause(`agent commands can read the worker's credential and other tasks' checkouts: bubblewrap cannot run here (${why})`);
  let nested: { why: string | null } | null = null;
  // A program that is not there is left to fail as it is, with the system's reason (ENOENT),
  // rather than as bubblewrap's exit code 1.
  const confining =
    (prefix: string[]): Confine =>
    (c) =>
      Bun.which(c.command) ? { command: prefix[0], args: [...prefix.slice(1), c.command, ...c.args] } : c;
  return {
    confineIn: (own) => confining(prefixFor(own)),
    status: hiding
      ? "agent commands run in bubblewrap, without the worker's credential or other tasks' checkouts"
      : "agent commands run in bubblewrap, without the worker's credential",
    confined: true,
    // Inside: the namespaces Codex's sandbox makes (processes, network) and a /proc of its own.
    nestingRefused: () =>
      (nested ??= { why: refusal([...prefixFor(null), bwrap, "--unshare-pid", "--unshare-net", "--dev-bind", "/", "/", "--proc", "/proc", "--", "/bin/sh", "-c", ":"]) }).why,
  };
}
