// The signed-in session on disk: $AO_CONFIG_DIR, else $XDG_CONFIG_HOME/ao, else ~/.config/ao.
// The file holds a refresh token, so it is written 0600 in a 0700 directory, always by
// temp file + rename so a reader never sees half a file.
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { CliError } from "./errors";

export interface Session {
  server: string;
  accessToken: string;
  /** ISO time the access token stops working; refreshed a little before. */
  accessTokenExpiresAt?: string;
  refreshToken: string;
  user: { id: string; email?: string; name?: string | null };
  orgId: string;
  orgName?: string;
}

export function configDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.AO_CONFIG_DIR) return env.AO_CONFIG_DIR;
  const base = env.XDG_CONFIG_HOME || join(homedir(), ".config");
  return join(base, "ao");
}

export const sessionPath = (dir = configDir()) => join(dir, "session.json");

export function readSession(dir = configDir()): Session | null {
  const path = sessionPath(dir);
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new CliError(`cannot read ${path}: ${(err as Error).message}`);
  }
  try {
    const s = JSON.parse(text) as Session;
    if (typeof s.server === "string" && typeof s.accessToken === "string" && typeof s.refreshToken === "string") return s;
  } catch {}
  throw new CliError(`${path} is not a valid session file; run \`ao login\` again`);
}

export function writeSession(session: Session, dir = configDir()) {
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = sessionPath(dir);
  const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
  // Created 0600 from the start: the refresh token is never readable by others, not even briefly.
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeSync(fd, JSON.stringify(session, null, 2) + "\n");
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
}

export function deleteSession(dir = configDir()): boolean {
  try {
    unlinkSync(sessionPath(dir));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
}

const LOCK_STALE_MS = 30_000;

/**
 * Runs fn while holding the session lock, so two `ao` processes never rotate the same refresh
 * token (the second use would revoke the whole sign-in). A lock left by a crashed process is
 * taken over after 30 s.
 */
export async function withSessionLock<T>(fn: () => Promise<T>, dir = configDir()): Promise<T> {
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
  const lock = join(dir, "session.lock");
  const deadline = Date.now() + LOCK_STALE_MS + 5_000;
  for (;;) {
    try {
      closeSync(openSync(lock, "wx", 0o600));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      try {
        if (Date.now() - statSync(lock).mtimeMs > LOCK_STALE_MS) rmSync(lock, { force: true });
      } catch {}
      if (Date.now() > deadline) throw new CliError(`${lock} is held by another ao process; remove it if none is running`);
      await Bun.sleep(50);
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(lock, { force: true });
  }
}
