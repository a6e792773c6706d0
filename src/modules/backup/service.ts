// Online backup and restore of a data directory, as one tar archive a person can inspect:
//
//   ao-backup.json              format, version of ao, time, counts (always the first entry)
//   artifacts/<taskId>/<name>   the artifact files the database records
//   master.key                  the key (mode 0600)
//   ao.db                       a consistent copy of the database (always the last entry)
//
// Extracted with tar, it is a data directory. The database is copied first (VACUUM INTO, while
// the server runs), so the archive holds every write acknowledged before the backup began; the
// artifacts listed in that copy follow. An artifact replaced after the copy was taken is archived
// as found, and the copy's row is corrected to it before the database goes in last.
import { Database } from "bun:sqlite";
import { closeSync, existsSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { snapshotDatabase } from "../../db/snapshot";
import { readTar, tarStream, type TarEntry } from "../../lib/tar";
import { VERSION } from "../../version";
import { isSafeArtifactName } from "../tasks/artifacts";
import { AFTER_UNFINISHED_RESTORE, UNFINISHED_RESTORE, unfinishedRestore } from "./unfinished";

export const MANIFEST = "ao-backup.json";
export const FORMAT = "ao-backup";
export const FORMAT_VERSION = 1;

/** A data directory or archive that cannot be backed up or restored, in words for the operator. */
export class BackupError extends Error {}

interface ArtifactRow {
  task_id: string;
  name: string;
  size: number;
  etag: string;
}

export interface PreparedBackup {
  /** The archive; the temporary copy is removed when it ends or is abandoned (return()). */
  chunks: AsyncGenerator<Uint8Array>;
  artifacts: number;
  /** Removes the temporary copy now, synchronously: for a process about to exit on a signal. */
  discard(): void;
}

const TMP_PREFIX = "ao-backup-";
/** The file in a temporary copy's directory naming the process that made it. */
const OWNER = "owner.pid";

/**
 * Removes the temporary copies of backups whose process is gone: one killed with kill -9 (or a
 * server killed while it streamed a backup) cannot remove its own, a copy of the whole database.
 */
function removeAbandonedCopies() {
  let names: string[];
  try {
    names = readdirSync(tmpdir()).filter((n) => n.startsWith(TMP_PREFIX));
  } catch {
    return;
  }
  for (const name of names) {
    const dir = join(tmpdir(), name);
    let owner: number;
    try {
      owner = Number(readFileSync(join(dir, OWNER), "utf8"));
    } catch {
      continue; // not one of ours, or being made
    }
    if (!Number.isInteger(owner) || owner <= 0 || isRunning(owner)) continue;
    rmSync(dir, { recursive: true, force: true });
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as { code?: string }).code === "EPERM"; // alive, another user's
  }
}

/** Why a PostgreSQL instance is not backed up here: its database is not a file this process can copy. */
export const POSTGRES_BACKUP =
  "ao runs on PostgreSQL (AO_DATABASE_URL): back up the database with PostgreSQL's tools (pg_dump, or base backups with WAL archiving), and keep a copy of the master key file (AO_MASTER_KEY_FILE) with it (the artifacts are in the database); nothing was written";

/**
 * Takes the database copy now and returns the archive to stream. The key is read from keyPath
 * (AO_MASTER_KEY_FILE) and archived as master.key, so the extracted archive is a data directory.
 */
export async function prepareBackup(dataDir: string, keyPath = join(dataDir, "master.key")): Promise<PreparedBackup> {
  const dbPath = join(dataDir, "ao.db");
  if (!existsSync(dbPath)) throw new BackupError(`${dataDir} has no ao.db: not an ao data directory`);
  if (!existsSync(keyPath)) throw new BackupError(`${keyPath} is missing: no master key to archive`);
  removeAbandonedCopies();
  const tmp = mkdtempSync(join(tmpdir(), TMP_PREFIX));
  writeFileSync(join(tmp, OWNER), String(process.pid));
  try {
    const copy = join(tmp, "ao.db");
    await snapshotDatabase(dbPath, copy);
    const key = readFileSync(keyPath);
    const snapshot = new Database(copy, { strict: true });
    const rows = snapshot.query<ArtifactRow, []>("SELECT task_id, name, size, etag FROM artifacts ORDER BY task_id, name").all();
    const createdAt = new Date();
    const manifest = JSON.stringify({ format: FORMAT, version: FORMAT_VERSION, aoVersion: VERSION, createdAt: createdAt.toISOString(), artifacts: rows.length }, null, 2) + "\n";
    async function* entries(): AsyncGenerator<TarEntry> {
      yield { path: MANIFEST, size: Buffer.byteLength(manifest), data: new TextEncoder().encode(manifest), mtime: createdAt };
      for (const row of rows) {
        const entry = await artifactEntry(dataDir, snapshot, row);
        if (entry) yield entry;
      }
      yield { path: "master.key", size: key.length, mode: 0o600, data: key, mtime: createdAt };
      snapshot.close();
      yield await fileEntry(copy, "ao.db", 0o600);
    }
    async function* chunks() {
      try {
        yield* tarStream(entries());
      } finally {
        snapshot.close();
        rmSync(tmp, { recursive: true, force: true });
      }
    }
    return { chunks: chunks(), artifacts: rows.length, discard: () => rmSync(tmp, { recursive: true, force: true }) };
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** The artifact file as it is now; the copy's row follows it (gone: row dropped; replaced: row updated). */
async function artifactEntry(dataDir: string, snapshot: Database, row: ArtifactRow): Promise<TarEntry | null> {
  if (!isSafeArtifactName(row.name) || !isSafeArtifactName(row.task_id)) return null;
  const path = join(dataDir, "artifacts", row.task_id, row.name);
  let file: Awaited<ReturnType<typeof open>>;
  try {
    file = await open(path, "r");
  } catch (err) {
    if ((err as { code?: string }).code !== "ENOENT") throw err;
    snapshot.query("DELETE FROM artifacts WHERE task_id = ? AND name = ?").run(row.task_id, row.name);
    return null;
  }
  // Files are replaced by rename, never rewritten: the open handle reads one version whole.
  const { size, mtime } = await file.stat();
  const hasher = new Bun.CryptoHasher("sha256");
  async function* data() {
    for await (const chunk of chunksOf(file, size)) {
      hasher.update(chunk);
      yield chunk;
    }
    const etag = hasher.digest("hex");
    if (etag !== row.etag || size !== row.size) {
      snapshot.query("UPDATE artifacts SET size = ?, etag = ? WHERE task_id = ? AND name = ?").run(size, etag, row.task_id, row.name);
    }
  }
  return { path: `artifacts/${row.task_id}/${row.name}`, size, mtime, data: data() };
}

async function fileEntry(path: string, name: string, mode: number): Promise<TarEntry> {
  const file = await open(path, "r");
  const { size, mtime } = await file.stat();
  return { path: name, size, mode, mtime, data: chunksOf(file, size) };
}

/** The first `size` bytes of an open file in chunks of up to 1 MiB; the file is closed at the end. */
async function* chunksOf(file: Awaited<ReturnType<typeof open>>, size: number) {
  try {
    const buf = new Uint8Array(1 << 20);
    for (let left = size; left > 0; ) {
      const { bytesRead } = await file.read(buf, 0, Math.min(buf.length, left));
      if (bytesRead === 0) break;
      left -= bytesRead;
      yield buf.slice(0, bytesRead);
    }
  } finally {
    await file.close();
  }
}

/** Where an archive path may go: the layout above and nothing else (no traversal, no extra files). */
function checkedPath(path: string): { kind: "manifest" | "db" | "key" } | { kind: "artifact"; taskId: string; name: string } {
  if (path === MANIFEST) return { kind: "manifest" };
  if (path === "ao.db") return { kind: "db" };
  if (path === "master.key") return { kind: "key" };
  const parts = path.split("/");
  if (parts.length === 3 && parts[0] === "artifacts" && isSafeArtifactName(parts[1]) && isSafeArtifactName(parts[2])) {
    return { kind: "artifact", taskId: parts[1], name: parts[2] };
  }
  throw new BackupError(`the archive holds ${JSON.stringify(path)}, which is not part of an ao backup`);
}

export interface RestoreResult {
  dataDir: string;
  tasks: number;
  artifacts: number;
  createdAt: string;
}

/**
 * Restores the archive read from `fd` into `dataDir`, which must be empty or absent. Checks the
 * format, the database's integrity and every artifact's hash; on any failure the directory is
 * left empty again.
 */
export function restoreBackup(fd: number, dataDir: string): RestoreResult {
  const existed = existsSync(dataDir);
  const unfinished = existed && statSync(dataDir).isDirectory() ? unfinishedRestore(dataDir) : null;
  if (unfinished) throw new BackupError(`${unfinished}: ${AFTER_UNFINISHED_RESTORE}`);
  if (existed && (!statSync(dataDir).isDirectory() || readdirSync(dataDir).length > 0)) {
    throw new BackupError(`${dataDir} is not empty: restore into a new or empty directory`);
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const marker = join(dataDir, UNFINISHED_RESTORE);
  writeDurably(marker, "ao restore is writing this directory; if no ao restore runs, it was interrupted: empty the directory and restore again\n");
  mkdirSync(join(dataDir, "artifacts"), { recursive: true, mode: 0o700 });
  try {
    let manifest: { format?: string; version?: number; createdAt?: string } | null = null;
    const hashes = new Map<string, string>();
    const seen = new Set<string>();
    readTar(fd, (header, read) => {
      if (!manifest && header.path !== MANIFEST) throw new BackupError(`this is not an ao backup (it starts with ${header.path}, not ${MANIFEST})`);
      const target = checkedPath(header.path);
      if (seen.has(header.path)) throw new BackupError(`the archive holds ${header.path} twice`);
      seen.add(header.path);
      if (target.kind === "manifest") {
        const text = Buffer.concat([...read()]).toString("utf8");
        try {
          manifest = JSON.parse(text);
        } catch {
          throw new BackupError(`${MANIFEST} is not valid JSON`);
        }
        if (manifest?.format !== FORMAT) throw new BackupError(`this is not an ao backup (format ${JSON.stringify(manifest?.format)})`);
        if (manifest.version !== FORMAT_VERSION) throw new BackupError(`backup format version ${manifest.version} is not supported by this ao (it reads ${FORMAT_VERSION})`);
        return;
      }
      const path = join(dataDir, header.path);
      mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
      const hasher = new Bun.CryptoHasher("sha256");
      const out = openSync(path, "wx", target.kind === "artifact" ? 0o644 : 0o600);
      try {
        for (const chunk of read()) {
          hasher.update(chunk);
          for (let done = 0; done < chunk.length; ) done += writeSync(out, chunk, done);
        }
        fsyncSync(out);
      } finally {
        closeSync(out);
      }
      if (target.kind === "artifact") hashes.set(`${target.taskId}/${target.name}`, hasher.digest("hex"));
    });
    if (!manifest) throw new BackupError("the archive is empty");
    if (!seen.has("ao.db") || !seen.has("master.key")) throw new BackupError("the archive is incomplete: ao.db or master.key is missing");
    const result = { dataDir, ...checkRestored(dataDir, hashes), createdAt: (manifest as { createdAt?: string }).createdAt ?? "" };
    rmSync(marker);
    return result;
  } catch (err) {
    if (existed) for (const name of readdirSync(dataDir)) rmSync(join(dataDir, name), { recursive: true, force: true });
    else rmSync(dataDir, { recursive: true, force: true });
    throw err;
  }
}

function writeDurably(path: string, text: string) {
  const fd = openSync(path, "wx", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The restored database is whole, and every artifact it records came with the same bytes. */
function checkRestored(dataDir: string, hashes: Map<string, string>) {
  const db = new Database(join(dataDir, "ao.db"), { readonly: true, strict: true });
  try {
    const integrity = db.query<{ integrity_check: string }, []>("PRAGMA integrity_check").all();
    if (integrity.length !== 1 || integrity[0].integrity_check !== "ok") throw new BackupError("the archived database is damaged (integrity_check failed)");
    const rows = db.query<ArtifactRow, []>("SELECT task_id, name, size, etag FROM artifacts").all();
    for (const row of rows) {
      if (hashes.get(`${row.task_id}/${row.name}`) !== row.etag) throw new BackupError(`the archive's artifact ${row.task_id}/${row.name} is missing or damaged`);
    }
    const tasks = db.query<{ n: number }, []>("SELECT count(*) AS n FROM tasks").get()!.n;
    return { tasks, artifacts: rows.length };
  } finally {
    db.close();
  }
}
