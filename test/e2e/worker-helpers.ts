// Real `ao worker` processes for end-to-end tests: started from source with bun, their output
// captured and searchable, and git repositories made on disk for them to work on.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { TestServer } from "../helpers/server";
import { saveCredential } from "../../src/worker/credential";
import { makeWorker } from "../workers/helpers";
import { OutputProcess } from "./process-helpers";
export { alive } from "../helpers/processes";

const root = join(import.meta.dir, "..", "..");
const bun = join(root, "node_modules", ".bin", "bun");

/** `ao worker` run from source with bun, with the test's environment and `env` on top. */
export class WorkerProcess extends OutputProcess {
  constructor(args: string[], env: Record<string, string> = {}) {
    super([bun, join(root, "src", "main.ts"), "worker", ...args], { cwd: root, env: { ...process.env, ...env } });
  }
}

export function startWorker(s: TestServer, dataDir: string, extra: string[] = [], env: Record<string, string> = {}) {
  return new WorkerProcess(["--server", s.url, "--data-dir", dataDir, "--kill-grace-ms", "500", ...extra], env);
}

/** A worker made on the server and its credential file written, as if it had paired before. */
export async function preparedWorker(s: TestServer, orgId: string, dataDir: string, opts: { approved?: boolean; labels?: string[] } = {}) {
  const w = await makeWorker(s, orgId, opts);
  saveCredential(dataDir, { server: s.url, workerId: w.workerId, orgId, credential: w.credential });
  return w;
}

const GIT_ENV = { GIT_AUTHOR_NAME: "Test", GIT_AUTHOR_EMAIL: "t@example.test", GIT_COMMITTER_NAME: "Test", GIT_COMMITTER_EMAIL: "t@example.test" };

export function sh(cwd: string, ...cmd: string[]): string {
  const r = Bun.spawnSync(cmd, { cwd, env: { ...process.env, ...GIT_ENV }, stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`${cmd.join(" ")} failed: ${r.stderr.toString()}`);
  return r.stdout.toString().trim();
}

/** A git repository with the given files committed on main; returns its path. */
export function gitRepo(dir: string, files: Record<string, string>, opts: { remote?: string; message?: string } = {}): string {
  mkdirSync(dir, { recursive: true });
  sh(dir, "git", "init", "-q", "-b", "main");
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), text);
  }
  sh(dir, "git", "add", "-A");
  sh(dir, "git", "commit", "-q", "-m", opts.message ?? "initial commit");
  if (opts.remote) sh(dir, "git", "remote", "add", "origin", opts.remote);
  return dir;
}

/** A bare repository (a local "remote") made from a working repository. */
export function bareFrom(source: string, bare: string): string {
  sh(join(bare, ".."), "git", "clone", "-q", "--bare", source, bare);
  return bare;
}

