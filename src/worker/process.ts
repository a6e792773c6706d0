// Agent processes run in a process group of their own, so a cancel reaches every process the
// agent started (shells, test runners, language servers): SIGTERM to the group, then SIGKILL.
import { spawn, type ChildProcess } from "node:child_process";

export interface GroupProcess {
  pid: number;
  /** Resolves with the exit code (null when killed by a signal) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  write(line: string): void;
  /** Closes the process's stdin (an app-server ends its session at end of input). */
  end(): void;
  signal(sig: NodeJS.Signals): void;
  /** SIGTERM to the whole group, SIGKILL after `graceMs` if anything is still alive. */
  terminate(graceMs: number): Promise<void>;
}

export interface SpawnOptions {
  cwd: string;
  env: Record<string, string>;
  onStdout(line: string): void;
  onStderr(line: string): void;
}

/** Calls `onLine` for each complete line of a stream (and the unterminated tail at the end). */
export function readLines(stream: NodeJS.ReadableStream, onLine: (line: string) => void): Promise<void> {
  let buffer = "";
  stream.setEncoding?.("utf8");
  return new Promise((resolve) => {
    stream.on("data", (chunk: string) => {
      buffer += chunk;
      let nl: number;
      while ((nl = buffer.indexOf("\n")) !== -1) {
        onLine(buffer.slice(0, nl).replace(/\r$/, ""));
        buffer = buffer.slice(nl + 1);
      }
    });
    stream.on("end", () => {
      if (buffer) onLine(buffer);
      buffer = "";
      resolve();
    });
    stream.on("error", () => resolve());
  });
}

export function spawnGroup(command: string, args: string[], options: SpawnOptions): GroupProcess {
  const child: ChildProcess = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    // detached: the child leads a new process group (setsid), which is what we signal.
    detached: true,
    stdio: ["pipe", "pipe", "pipe"],
  });
  const pid = child.pid ?? -1;
  child.stdin?.on("error", () => {});
  const out = child.stdout ? readLines(child.stdout, options.onStdout) : Promise.resolve();
  const err = child.stderr ? readLines(child.stderr, options.onStderr) : Promise.resolve();
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.on("error", (e) => {
      options.onStderr(`failed to start ${command}: ${e.message}`);
      resolve({ code: 127, signal: null });
    });
    child.on("exit", (code, signal) => resolve({ code, signal }));
  });
  // The output is complete only when both pipes are drained, not merely when the process exits.
  const exited = exit.then(async (r) => {
    await Promise.race([Promise.all([out, err]), Bun.sleep(2000)]);
    return r;
  });
  let done = false;
  void exit.then(() => (done = true));

  const signalGroup = (sig: NodeJS.Signals) => {
    if (pid <= 0) return;
    try {
      process.kill(-pid, sig);
    } catch {
      // The group is gone already.
    }
  };

  return {
    pid,
    exited,
    write(line: string) {
      if (!done) child.stdin?.write(line.endsWith("\n") ? line : line + "\n");
    },
    end() {
      child.stdin?.end();
    },
    signal: signalGroup,
    async terminate(graceMs: number) {
      // SIGTERM first, then SIGCONT for a stopped (paused) group, which acts on SIGTERM only once
      // woken: the signal is pending when it wakes, so it never runs a moment without it (woken
      // first, a paused agent could send one more request to its model).
      signalGroup("SIGTERM");
      signalGroup("SIGCONT");
      await Promise.race([exit, Bun.sleep(graceMs)]);
      // Whatever is left of the group (children that ignored SIGTERM or outlived the leader) goes now.
      signalGroup("SIGKILL");
    },
  };
}
