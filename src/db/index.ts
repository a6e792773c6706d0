import { Database } from "bun:sqlite";
import { closeSync, existsSync, openSync } from "node:fs";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import * as schema from "./schema";
import { embeddedMigrations } from "./migrations.macro" with { type: "macro" };

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };

const MIGRATIONS = embeddedMigrations("sqlite");

export class NewerDatabaseError extends Error {}
export const NEWER_DATABASE = "this database was written by a newer version of ao; run that version, or restore a backup made before the upgrade";

/** Opens (creating if needed) the SQLite file, sets the pragmas and applies pending migrations. */
export function openDatabase(path: string): Db {
  // Made 0600 before SQLite opens it: it holds password hashes and sessions, and SQLite gives the
  // -wal and -shm files the database's mode (umask 022 would leave all three readable by anyone
  // who can enter the data directory).
  if (path !== ":memory:" && !existsSync(path)) closeSync(openSync(path, "a", 0o600));
  const sqlite = new Database(path, { create: true, strict: true });
  sqlite.exec("PRAGMA journal_mode = WAL");
  sqlite.exec("PRAGMA busy_timeout = 5000");
  sqlite.exec("PRAGMA synchronous = NORMAL");
  sqlite.exec("PRAGMA foreign_keys = ON");
  sqlite.exec("PRAGMA temp_store = MEMORY");
  sqlite.exec("PRAGMA cache_size = -32000");
  migrate(sqlite);
  return drizzle({ client: sqlite, schema }) as Db;
}

/** Applies pending migrations in one transaction; refuses a database written by a newer ao. */
function migrate(sqlite: Database) {
  sqlite.exec(`CREATE TABLE IF NOT EXISTS __drizzle_migrations (
    id INTEGER PRIMARY KEY AUTOINCREMENT, hash text NOT NULL, created_at numeric)`);
  const { newer, pending } = migrationState(sqlite);
  if (newer) {
    throw new NewerDatabaseError(NEWER_DATABASE);
  }
  if (pending.length === 0) return;
  sqlite.transaction(() => {
    for (const m of pending) {
      for (const statement of m.sql) if (statement.trim()) sqlite.exec(statement);
      sqlite.query("INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)").run(m.hash, m.folderMillis);
    }
  }).immediate();
}

/** Where a database stands against this build's migrations (read only; `ao doctor` reports it too). */
export function migrationState(sqlite: Database): { newer: boolean; pending: typeof MIGRATIONS } {
  const table = sqlite.query<{ n: number }, []>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = '__drizzle_migrations'").get()!;
  const applied = table.n
    ? sqlite.query<{ created_at: number }, []>("SELECT created_at FROM __drizzle_migrations ORDER BY created_at DESC LIMIT 1").get()
    : null;
  const lastApplied = applied ? Number(applied.created_at) : 0;
  const newestKnown = MIGRATIONS.at(-1)?.folderMillis ?? 0;
  return { newer: lastApplied > newestKnown, pending: MIGRATIONS.filter((m) => m.folderMillis > lastApplied) };
}

export { schema };
