// `ao doctor`: checks a data directory and a running server, and says what to fix. Each check is
// ok, warn or fail with a hint; any fail makes the exit status 1. It only reads: safe to run
// while the server runs.
import { Database } from "bun:sqlite";
import { existsSync, readFileSync, statfsSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { migrationState } from "../db";
import { postgresMigrationState, postgresWhere } from "../db/postgres";
import { VERSION } from "../version";
import { AFTER_UNFINISHED_RESTORE, unfinishedRestore } from "../modules/backup/unfinished";

type Status = "ok" | "warn" | "fail";
export interface Finding {
  check: string;
  status: Status;
  detail: string;
  fix?: string;
}

const MiB = 1024 * 1024;
/** Free space below which writes are about to fail (fail), or worth a look (warn). */
const DISK = { failBytes: 64 * MiB, warnBytes: 1024 * MiB, warnShare: 0.05 };
/** Clock difference with the server that breaks sign-in tokens and one-time codes (fail), or drifts (warn). */
const SKEW = { warnSec: 30, failSec: 120 };

const USAGE = `usage: ao doctor [--data-dir DIR] [--database-url URL] [--server URL | --offline] [--public-url URL]

Checks the data directory (database integrity, pending migrations, disk space, key file) and
the running server (health, version, clock skew, the public URL's reachability). Prints each
check as ok, warn or fail with what to do; exits 1 when any check fails.
  --data-dir      default AO_DATA_DIR or ./ao-data
  --database-url  default AO_DATABASE_URL: check that PostgreSQL database instead of ao.db
  --key-file      default AO_MASTER_KEY_FILE or master.key in the data directory
  --server      the server to ask; default http://127.0.0.1:AO_PORT (7070)
  --offline     check the data directory only
  --public-url  the address people and workers use; default AO_PUBLIC_URL (skipped when unset)`;

export async function doctor(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { "data-dir": { type: "string" }, "database-url": { type: "string" }, "key-file": { type: "string" }, server: { type: "string" }, offline: { type: "boolean" }, "public-url": { type: "string" }, help: { type: "boolean" } },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const dataDir = resolve(values["data-dir"] ?? process.env.AO_DATA_DIR ?? "./ao-data");
  const databaseUrl = values["database-url"] ?? (process.env.AO_DATABASE_URL || null);
  const keyFile = resolve(values["key-file"] ?? (process.env.AO_MASTER_KEY_FILE || join(dataDir, "master.key")));
  const findings = await checkDataDir(dataDir, { keyFile, databaseUrl });
  if (!values.offline) {
    const server = (values.server ?? `http://127.0.0.1:${process.env.AO_PORT || "7070"}`).replace(/\/+$/, "");
    findings.push(...(await checkServer(server, (values["public-url"] ?? process.env.AO_PUBLIC_URL ?? "").replace(/\/+$/, ""))));
  }
  for (const f of findings) {
    console.log(`${f.status.padEnd(4)}  ${f.check}: ${f.detail}`);
    if (f.fix && f.status !== "ok") console.log(`      fix: ${f.fix}`);
  }
  const failed = findings.filter((f) => f.status === "fail").length;
  const warned = findings.filter((f) => f.status === "warn").length;
  console.log(failed ? `${failed} check(s) failed, ${warned} warning(s)` : warned ? `no failures, ${warned} warning(s)` : "all checks passed");
  return failed ? 1 : 0;
}

/** The data directory, the key file and the database: ao.db there, or PostgreSQL at databaseUrl. */
export async function checkDataDir(dataDir: string, options: { keyFile?: string; databaseUrl?: string | null } = {}): Promise<Finding[]> {
  const keyFile = options.keyFile ?? join(dataDir, "master.key");
  if (!existsSync(dataDir) || !statSync(dataDir).isDirectory()) {
    return [{ check: "data directory", status: "fail", detail: `${dataDir} does not exist`, fix: "give the server's directory with --data-dir (or AO_DATA_DIR)" }];
  }
  const unfinished = unfinishedRestore(dataDir);
  if (unfinished) return [{ check: "data directory", status: "fail", detail: unfinished, fix: AFTER_UNFINISHED_RESTORE }];
  const out: Finding[] = [];
  const dirMode = statSync(dataDir).mode & 0o777;
  out.push(
    dirMode & 0o077
      ? { check: "data directory", status: "warn", detail: `${dataDir} is mode ${octal(dirMode)}: other users can list it`, fix: `chmod 700 ${dataDir}` }
      : { check: "data directory", status: "ok", detail: dataDir },
  );
  out.push(checkKey(keyFile));
  out.push(...(options.databaseUrl ? await checkPostgres(options.databaseUrl) : checkDatabase(join(dataDir, "ao.db"))));
  out.push(checkDisk(dataDir));
  return out;
}

function checkKey(path: string): Finding {
  const check = "key file";
  if (!existsSync(path)) return { check, status: "fail", detail: `${path} is missing`, fix: "restore it from a backup: without it the stored secrets cannot be read (a new server start creates a new, different key)" };
  const mode = statSync(path).mode & 0o777;
  if (mode & 0o077) return { check, status: "fail", detail: `${path} is mode ${octal(mode)}: other users can read the key`, fix: `chmod 600 ${path}` };
  const key = Buffer.from(readFileSync(path, "utf8").trim(), "base64");
  if (key.length !== 32) return { check, status: "fail", detail: `${path} does not hold a 32-byte base64 key`, fix: "restore master.key from a backup" };
  return { check, status: "ok", detail: `${path} (mode 600)` };
}

function checkDatabase(path: string): Finding[] {
  if (!existsSync(path)) return [{ check: "database", status: "fail", detail: `${path} is missing`, fix: "point --data-dir at the server's data directory, or restore a backup (ao restore)" }];
  let db: Database | null = null;
  try {
    db = new Database(path, { readonly: true });
    db.exec("PRAGMA busy_timeout = 5000");
    const rows = db.query<{ integrity_check: string }, []>("PRAGMA integrity_check").all();
    const integrity: Finding =
      rows.length === 1 && rows[0].integrity_check === "ok"
        ? { check: "database integrity", status: "ok", detail: "integrity_check: ok" }
        : {
            check: "database integrity",
            status: "fail",
            detail: rows.slice(0, 3).map((r) => r.integrity_check).join("; "),
            fix: "stop the server and restore the latest backup (ao restore), or recover with sqlite3 .recover",
          };
    const mode = statSync(path).mode & 0o777;
    const open: Finding[] = mode & 0o077
      ? [{ check: "database file", status: "warn", detail: `${path} is mode ${octal(mode)}: other users who can enter ${dirname(path)} can read it (password hashes, sessions)`, fix: `chmod 600 ${path}*` }]
      : [];
    return [integrity, ...open, migrationFinding(migrationState(db), "back up (ao backup), then start this version: ao serve applies them on start")];
  } catch (err) {
    return [{ check: "database", status: "fail", detail: `${path} cannot be read: ${(err as Error).message}`, fix: "check the file's owner and mode, or restore a backup (ao restore)" }];
  } finally {
    db?.close();
  }
}

function migrationFinding({ newer, pending }: { newer: boolean; pending: unknown[] }, backUp: string): Finding {
  return newer
    ? { check: "migrations", status: "fail", detail: "the database was written by a newer version of ao", fix: "run that version, or restore a backup made before the upgrade" }
    : pending.length
      ? { check: "migrations", status: "warn", detail: `${pending.length} pending for ao ${VERSION}`, fix: backUp }
      : { check: "migrations", status: "ok", detail: `up to date for ao ${VERSION}` };
}

/** The PostgreSQL database: reachable with these credentials, and where its migrations stand. */
async function checkPostgres(url: string): Promise<Finding[]> {
  const where = postgresWhere(url);
  const sql = new Bun.SQL(url, { max: 1, connectionTimeout: 5 });
  try {
    const [{ server }] = await sql.unsafe("SELECT current_setting('server_version') AS server");
    return [
      { check: "database", status: "ok", detail: `PostgreSQL ${server} at ${where}` },
      migrationFinding(await postgresMigrationState(sql), "back up (pg_dump), then start this version: ao serve applies them on start"),
    ];
  } catch (err) {
    return [{ check: "database", status: "fail", detail: `PostgreSQL at ${where} cannot be reached: ${(err as Error).message}`, fix: "check AO_DATABASE_URL (user, password, host, database), that PostgreSQL runs and that it accepts this machine (pg_hba.conf)" }];
  } finally {
    await sql.close();
  }
}

function checkDisk(dataDir: string): Finding {
  const s = statfsSync(dataDir);
  const free = s.bavail * s.bsize;
  const share = s.blocks > 0 ? s.bavail / s.blocks : 1;
  const detail = `${formatBytes(free)} free (${Math.round(share * 100)}%)`;
  const fix = `free space on the file system of ${dataDir} or move the data directory to a larger one; a full disk makes writes answer 507`;
  if (free < DISK.failBytes) return { check: "disk space", status: "fail", detail, fix };
  if (free < DISK.warnBytes || share < DISK.warnShare) return { check: "disk space", status: "warn", detail, fix };
  return { check: "disk space", status: "ok", detail };
}

export async function checkServer(server: string, publicUrl: string): Promise<Finding[]> {
  const out: Finding[] = [];
  const sentAt = Date.now();
  let res: Response;
  try {
    res = await fetch(`${server}/api/v1/health`, { signal: AbortSignal.timeout(3000) });
  } catch (err) {
    return [{ check: "server", status: "fail", detail: `${server} does not answer (${(err as Error).message})`, fix: "start ao serve, or give the server's address with --server (--offline checks the data directory only)" }];
  }
  const receivedAt = Date.now();
  const body = (await res.json().catch(() => null)) as { status?: string; version?: string } | null;
  if (!res.ok || body?.status !== "ok") {
    return [{ check: "server", status: "fail", detail: `${server}/api/v1/health answered ${res.status}`, fix: "read the server's log; is this address an ao server?" }];
  }
  out.push(
    body.version === VERSION
      ? { check: "server", status: "ok", detail: `${server} answers (ao ${body.version})` }
      : { check: "server", status: "warn", detail: `${server} runs ao ${body.version}, this is ao ${VERSION}`, fix: "run the same version for server, workers and command line" },
  );
  const date = Date.parse(res.headers.get("date") ?? "");
  if (Number.isNaN(date)) out.push({ check: "clock", status: "warn", detail: "the server sent no Date header; skew unknown" });
  else {
    // The header has whole seconds: the skew is how far it falls outside the request's round trip.
    const skewMs = date + 1000 < sentAt ? date + 1000 - sentAt : date > receivedAt ? date - receivedAt : 0;
    const sec = Math.round(skewMs / 1000);
    const detail = sec === 0 ? "in step with this machine (within a second)" : `${Math.abs(sec)} s ${sec < 0 ? "behind" : "ahead of"} this machine`;
    const fix = "synchronise both clocks (NTP: timedatectl set-ntp true); sign-in tokens and one-time codes depend on them";
    out.push(
      Math.abs(sec) > SKEW.failSec
        ? { check: "clock", status: "fail", detail, fix }
        : Math.abs(sec) > SKEW.warnSec
          ? { check: "clock", status: "warn", detail, fix }
          : { check: "clock", status: "ok", detail },
    );
  }
  if (!publicUrl) out.push({ check: "public URL", status: "warn", detail: "not given (--public-url or AO_PUBLIC_URL): links and workers use the default address", fix: "set AO_PUBLIC_URL on the server and here to the address people use" });
  else {
    try {
      const pub = await fetch(`${publicUrl}/api/v1/health`, { signal: AbortSignal.timeout(5000) });
      const ok = pub.ok && ((await pub.json().catch(() => null)) as { status?: string } | null)?.status === "ok";
      out.push(
        ok
          ? { check: "public URL", status: "ok", detail: `${publicUrl} reaches the server` }
          : { check: "public URL", status: "fail", detail: `${publicUrl}/api/v1/health answered ${pub.status}`, fix: "check the reverse proxy routes /api/v1 to ao" },
      );
    } catch (err) {
      out.push({ check: "public URL", status: "fail", detail: `${publicUrl} is not reachable from here (${(err as Error).message})`, fix: "check DNS, the reverse proxy and the firewall; workers and links use this address" });
    }
  }
  return out;
}

const octal = (mode: number) => mode.toString(8).padStart(3, "0");
function formatBytes(n: number): string {
  return n >= 1024 * MiB ? `${(n / 1024 / MiB).toFixed(1)} GiB` : `${(n / MiB).toFixed(1)} MiB`;
}
