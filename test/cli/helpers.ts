// Runs the real command line (`bun src/main.ts ...`) as a child process, with its own config
// directory and only the AO_* variables a test gives it.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Session } from "../../src/cli/client/config";
import { inheritedEnv } from "../helpers/processes";

const root = join(import.meta.dir, "..", "..");
const bun = join(root, "node_modules", ".bin", "bun");
const baseEnv = inheritedEnv("XDG_CONFIG_HOME");

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliProcess {
  /** Resolves with the first match of `re` on stdout (rejects on timeout or exit). */
  waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** Everything printed so far. */
  output(): { stdout: string; stderr: string };
  done: Promise<CliResult>;
  kill(): void;
}

export const newConfigDir = () => mkdtempSync(join(tmpdir(), "ao-cli-"));

export function spawnCli(args: string[], env: Record<string, string> = {}, stdin?: string): CliProcess {
  const proc = Bun.spawn([bun, "src/main.ts", ...args], {
    cwd: root,
    env: { ...baseEnv, ...env },
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  let stdout = "";
  let stderr = "";
  const listeners = new Set<() => void>();
  const pump = async (stream: ReadableStream<Uint8Array>, add: (s: string) => void) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream) {
      add(decoder.decode(chunk, { stream: true }));
      for (const l of listeners) l();
    }
  };
  const reading = Promise.all([pump(proc.stdout, (s) => (stdout += s)), pump(proc.stderr, (s) => (stderr += s))]);
  const done = (async () => {
    const code = await proc.exited;
    await reading;
    for (const l of listeners) l();
    return { code, stdout, stderr };
  })();
  let exited = false;
  void done.then(() => (exited = true));
  return {
    done,
    output: () => ({ stdout, stderr }),
    kill: () => proc.kill(),
    waitFor(re, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = stdout.match(re);
          if (m) {
            listeners.delete(check);
            clearTimeout(timer);
            resolve(m);
          } else if (exited) {
            listeners.delete(check);
            clearTimeout(timer);
            reject(new Error(`exited before printing ${re}:\n${stdout}\n${stderr}`));
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`timed out waiting for ${re}:\n${stdout}\n${stderr}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
  };
}

export function runCli(args: string[], env: Record<string, string> = {}, stdin?: string): Promise<CliResult> {
  return spawnCli(args, env, stdin).done;
}

export const sessionFile = (dir: string) => join(dir, "session.json");
export const readSessionFile = (dir: string): Session => JSON.parse(readFileSync(sessionFile(dir), "utf8"));
export const writeSessionFile = (dir: string, s: Session) => writeFileSync(sessionFile(dir), JSON.stringify(s), { mode: 0o600 });

/** A session file as `ao login` writes it, from a session made by the identity helpers. */
export function seedSession(dir: string, server: string, s: { userId: string; email?: string; accessToken: string; refreshToken: string; orgId: string }) {
  writeSessionFile(dir, {
    server,
    accessToken: s.accessToken,
    accessTokenExpiresAt: new Date(Date.now() + 14 * 60_000).toISOString(),
    refreshToken: s.refreshToken,
    user: { id: s.userId, email: s.email },
    orgId: s.orgId,
  });
}
