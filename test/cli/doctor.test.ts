// `ao doctor` as a real process against a real data directory and server: all ok on a healthy
// instance; a failing check (key file readable by others, a server or public URL that does not
// answer, a skewed clock, a full disk, a database from a newer ao) prints fail with a fix and
// exits 1; pending migrations only warn.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { startTestServer, type TestServer } from "../helpers/server";
import { mountSmallDisk } from "../helpers/disk";
import { spawnCli } from "./helpers";
import { VERSION } from "../../src/version";
import { openPostgres } from "../../src/db/postgres";
import { embeddedMigrations } from "../../src/db/migrations.macro";
import { freshDatabase } from "../helpers/postgres";

let s: TestServer;
const scratch = mkdtempSync(join(tmpdir(), "ao-doctor-"));
// The checks of a SQLite data directory copy its ao.db, so this server runs on SQLite in either
// test mode; the PostgreSQL checks below make databases of their own.
beforeAll(async () => {
  s = await startTestServer({ databaseUrl: null });
});
afterAll(async () => {
  await s.stop();
  rmSync(scratch, { recursive: true, force: true });
});

const doctor = (...args: string[]) => spawnCli(["doctor", ...args]).done;
const lineOf = (stdout: string, check: string) => stdout.split("\n").find((l) => l.includes(`  ${check}: `)) ?? "";

/** A copy of the server's data directory (database and key) to break in one way. */
function copyOfData(name: string) {
  const dir = join(scratch, name);
  mkdirSync(dir, { mode: 0o700 });
  s.core.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  copyFileSync(join(s.dataDir, "ao.db"), join(dir, "ao.db"));
  copyFileSync(join(s.dataDir, "master.key"), join(dir, "master.key"));
  chmodSync(join(dir, "master.key"), 0o600);
  return dir;
}

describe("ao doctor", () => {
  test("a healthy data directory and server: every check ok, exit 0", async () => {
    const r = await doctor("--data-dir", s.dataDir, "--server", s.url, "--public-url", s.url);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    for (const check of ["data directory", "key file", "database integrity", "migrations", "server", "clock", "public URL"]) {
      expect(lineOf(r.stdout, check)).toStartWith("ok  ");
    }
    // The machine's own disk may be fuller than a server's should be: that only warns.
    expect(lineOf(r.stdout, "disk space")).toMatch(/^(ok  |warn)  disk space: [\d.]+ [GM]iB free/);
    expect(lineOf(r.stdout, "server")).toContain(`ao ${VERSION}`);
  });

  test("a key file other users can read: fail with the chmod to run, exit 1", async () => {
    const dir = copyOfData("open-key");
    chmodSync(join(dir, "master.key"), 0o644);
    const r = await doctor("--data-dir", dir, "--offline");
    expect(r.code).toBe(1);
    expect(lineOf(r.stdout, "key file")).toStartWith("fail");
    expect(lineOf(r.stdout, "key file")).toContain("mode 644");
    expect(r.stdout).toContain(`fix: chmod 600 ${join(dir, "master.key")}`);
    expect(lineOf(r.stdout, "database integrity")).toStartWith("ok");
  });

  test("a database other users can read (made by an older ao under umask 022): warn with the chmod to run", async () => {
    const dir = copyOfData("open-db");
    chmodSync(join(dir, "ao.db"), 0o644);
    const r = await doctor("--data-dir", dir, "--offline");
    expect(r.code).toBe(0);
    expect(lineOf(r.stdout, "database file")).toBe(`warn  database file: ${join(dir, "ao.db")} is mode 644: other users who can enter ${dir} can read it (password hashes, sessions)`);
    expect(r.stdout).toContain(`fix: chmod 600 ${join(dir, "ao.db")}*`);
  });

  test("a server that does not answer, and a public URL that does not: fail, exit 1", async () => {
    const gone = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("") });
    const deadUrl = `http://127.0.0.1:${gone.port}`;
    await gone.stop(true);
    let r = await doctor("--data-dir", s.dataDir, "--server", deadUrl);
    expect(r.code).toBe(1);
    expect(lineOf(r.stdout, "server")).toStartWith("fail");
    expect(r.stdout).toContain("fix: start ao serve");

    r = await doctor("--data-dir", s.dataDir, "--server", s.url, "--public-url", deadUrl);
    expect(r.code).toBe(1);
    expect(lineOf(r.stdout, "server")).toStartWith("ok");
    expect(lineOf(r.stdout, "public URL")).toStartWith("fail");
    expect(lineOf(r.stdout, "public URL")).toContain("not reachable");
  });

  test("a server whose clock is 10 minutes ahead: clock fails", async () => {
    // A stand-in for a server on a host with a wrong clock: the real health answer, a shifted Date.
    const skewed = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      fetch: () => Response.json({ status: "ok", version: VERSION }, { headers: { date: new Date(Date.now() + 600_000).toUTCString() } }),
    });
    try {
      const r = await doctor("--data-dir", s.dataDir, "--server", `http://127.0.0.1:${skewed.port}`);
      expect(r.code).toBe(1);
      expect(lineOf(r.stdout, "clock")).toMatch(/^fail  clock: (59\d|60\d) s ahead of this machine/);
      expect(r.stdout).toContain("fix: synchronise both clocks");
    } finally {
      await skewed.stop(true);
    }
  });

  test("pending migrations warn (exit 0); a database from a newer ao fails", async () => {
    const pending = copyOfData("pending");
    let db = new Database(join(pending, "ao.db"));
    db.exec("DELETE FROM __drizzle_migrations WHERE id = (SELECT max(id) FROM __drizzle_migrations)");
    db.close();
    let r = await doctor("--data-dir", pending, "--offline");
    expect(r.code).toBe(0);
    expect(lineOf(r.stdout, "migrations")).toStartWith("warn  migrations: 1 pending");

    const newer = copyOfData("newer");
    db = new Database(join(newer, "ao.db"));
    db.exec(`INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('future', ${Date.now() + 10 ** 12})`);
    db.close();
    r = await doctor("--data-dir", newer, "--offline");
    expect(r.code).toBe(1);
    expect(lineOf(r.stdout, "migrations")).toStartWith("fail  migrations: the database was written by a newer version of ao");
  });

  const disk = mountSmallDisk(8 * 1024 * 1024);
  afterAll(() => void (typeof disk !== "string" && disk.unmount()));
  test.skipIf(typeof disk === "string")("a data directory on a nearly full disk: disk space fails", async () => {
    const d = disk as Exclude<typeof disk, string>;
    try {
      const dir = join(d.dir, "data");
      mkdirSync(dir, { mode: 0o700 });
      copyFileSync(join(s.dataDir, "master.key"), join(dir, "master.key"));
      copyFileSync(join(copyOfData("for-disk"), "ao.db"), join(dir, "ao.db"));
      const r = await doctor("--data-dir", dir, "--offline");
      expect(r.code).toBe(1);
      expect(lineOf(r.stdout, "disk space")).toStartWith("fail");
      expect(r.stdout).toContain("a full disk makes writes answer 507");
    } finally {
      d.unmount();
    }
  });
});

describe("ao doctor with AO_DATABASE_URL", () => {
  /** A data directory for the artifacts and the key, beside the PostgreSQL database. */
  function dataDir(name: string) {
    const dir = join(scratch, name);
    mkdirSync(dir, { mode: 0o700 });
    copyFileSync(join(s.dataDir, "master.key"), join(dir, "master.key"));
    chmodSync(join(dir, "master.key"), 0o600);
    return dir;
  }

  test("a migrated database: connection and migrations ok, no ao.db needed", async () => {
    const url = await freshDatabase("ao_doctor");
    await (await openPostgres(url)).close();
    const r = await spawnCli(["doctor", "--data-dir", dataDir("pg-ok"), "--offline"], { AO_DATABASE_URL: url }).done;
    expect(r.code).toBe(0);
    expect(lineOf(r.stdout, "database")).toMatch(/^ok    database: PostgreSQL \d+\.\d+.* at 127\.0\.0\.1:\d+\/ao_doctor_/);
    expect(lineOf(r.stdout, "migrations")).toBe(`ok    migrations: up to date for ao ${VERSION}`);
    expect(r.stdout).not.toContain("ao.db");
  });

  test("an empty database warns of pending migrations; one from a newer ao fails", async () => {
    const empty = await freshDatabase("ao_doctor_empty");
    let r = await spawnCli(["doctor", "--data-dir", dataDir("pg-empty"), "--offline"], { AO_DATABASE_URL: empty }).done;
    expect(r.code).toBe(0);
    expect(lineOf(r.stdout, "migrations")).toStartWith(`warn  migrations: ${embeddedMigrations("postgres").length} pending`);
    expect(r.stdout).toContain("back up (pg_dump)");

    const newer = await freshDatabase("ao_doctor_newer");
    const sql = await openPostgres(newer);
    await sql`INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('future', ${Date.now() + 10 ** 12})`;
    await sql.close();
    r = await spawnCli(["doctor", "--data-dir", dataDir("pg-newer"), "--offline"], { AO_DATABASE_URL: newer }).done;
    expect(r.code).toBe(1);
    expect(lineOf(r.stdout, "migrations")).toStartWith("fail  migrations: the database was written by a newer version of ao");
  });

  test("a server that does not answer: the database check fails with what to look at, exit 1", async () => {
    const r = await spawnCli(["doctor", "--data-dir", dataDir("pg-down"), "--offline", "--database-url", "postgres://ao:secret@127.0.0.1:1/ao"]).done;
    expect(r.code).toBe(1);
    expect(lineOf(r.stdout, "database")).toStartWith("fail  database: PostgreSQL at 127.0.0.1:1/ao cannot be reached");
    expect(r.stdout).toContain("fix: check AO_DATABASE_URL");
    expect(r.stdout).not.toContain("secret");
  });

  test("AO_MASTER_KEY_FILE: the key is checked where the servers read it", async () => {
    const url = await freshDatabase("ao_doctor_key");
    await (await openPostgres(url)).close();
    const dir = join(scratch, "pg-key");
    mkdirSync(dir, { mode: 0o700 });
    const keyFile = join(scratch, "shared.key");
    copyFileSync(join(s.dataDir, "master.key"), keyFile);
    chmodSync(keyFile, 0o644);
    const r = await spawnCli(["doctor", "--data-dir", dir, "--offline"], { AO_DATABASE_URL: url, AO_MASTER_KEY_FILE: keyFile }).done;
    expect(r.code).toBe(1);
    expect(lineOf(r.stdout, "key file")).toBe(`fail  key file: ${keyFile} is mode 644: other users can read the key`);
  });
});
