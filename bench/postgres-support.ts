// A PostgreSQL cluster of the benchmarks' own: Debian's postgresql package, initdb + pg_ctl on a
// free loopback port, data on disk under /var/tmp/bench-pg/ (not /tmp, which may be memory), trust
// auth. Stock durability, unlike the tests' cluster (test/helpers/postgres.ts): fsync,
// synchronous_commit and full_page_writes stay on; only max_connections is raised (every ao server
// holds up to 22 connections, graphile-worker 52). Stopped (fast) at exit, its directory removed.
import { chmodSync, closeSync, existsSync, fdatasyncSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { SQL } from "bun";
import { freePort } from "./tasks-support";
import { processIds, statFields } from "../src/worker/orphans";

function binDir(): string {
  const base = "/usr/lib/postgresql";
  const versions = existsSync(base) ? readdirSync(base).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (existsSync(join(base, v, "bin", "initdb"))) return join(base, v, "bin");
  throw new Error("PostgreSQL is not installed: apt-get install -y postgresql");
}

// Root cannot run initdb: as root the cluster runs as the `postgres` user the package creates.
const asPostgres = (args: string[]) => (process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...args] : args);

function exec(args: string[]) {
  const p = Bun.spawnSync(asPostgres(args), { stdout: "pipe", stderr: "pipe" });
  if (p.exitCode !== 0) throw new Error(`${args.join(" ")} failed (${p.exitCode}): ${p.stdout}${p.stderr}`);
  return String(p.stdout);
}

/**
 * What a commit's flush costs on this disk now: 8 kB writes each followed by fdatasync (PostgreSQL's
 * wal_sync_method here) for `ms`, in a file under `dir`; flushes per second.
 */
export function fdatasyncPerSec(dir: string, ms = 1000): number {
  const file = join(dir, `fsync-probe-${process.pid}`);
  const fd = openSync(file, "w");
  const block = Buffer.alloc(8192, 1);
  let n = 0;
  const start = performance.now();
  try {
    while (performance.now() - start < ms) {
      writeSync(fd, block, 0, block.length, 0);
      fdatasyncSync(fd);
      n++;
    }
  } finally {
    closeSync(fd);
    rmSync(file, { force: true });
  }
  return (n * 1000) / (performance.now() - start);
}

export interface BenchPostgres {
  /** The superuser URL of database `name` (default postgres). */
  url(name?: string): string;
  version: string;
  /** The settings that matter for the figures, as the server reports them. */
  settings: string;
  /** CPU time (user + system, ms) of the postmaster and all its children, from /proc. */
  cpuMs(): number;
  /** The directory of the cluster (on the disk its WAL is flushed to). */
  dir: string;
  /**
   * Cluster-wide counters, exact at once (unlike pg_stat_*, flushed late): the next transaction id
   * (so a difference counts the transactions that wrote) and the WAL position in bytes.
   */
  counters(): Promise<{ xids: number; walBytes: number }>;
  /** The file whose first line is the postmaster's pid (the peers harness reads it as PG_PIDFILE). */
  pidfile: string;
  createDatabase(name: string): Promise<string>;
  stop(): void;
}

export async function startPostgres(): Promise<BenchPostgres> {
  const bin = binDir();
  const dir = `/var/tmp/bench-pg/pg-${process.pid}`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  chmodSync(dir, 0o777);
  const data = join(dir, "data");
  exec([join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--locale=C.UTF-8", "-E", "UTF8"]);
  const port = freePort();
  exec([join(bin, "pg_ctl"), "-D", data, "-l", join(dir, "log"), "-w", "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=300`, "start"]);
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    Bun.spawnSync(asPostgres([join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"]));
    rmSync(dir, { recursive: true, force: true });
  };
  process.on("exit", stop);
  const url = (name = "postgres") => `postgres://postgres@127.0.0.1:${port}/${name}`;
  const pidfile = join(data, "postmaster.pid");
  const postmaster = Number(readFileSync(pidfile, "utf8").split("\n")[0]);
  const sql = new SQL(url());
  const show = async (name: string) => ((await sql.unsafe(`show ${name}`)) as Record<string, string>[])[0][name];
  const shown: string[] = [];
  for (const name of ["fsync", "synchronous_commit", "full_page_writes", "wal_sync_method", "shared_buffers", "max_connections"]) shown.push(`${name}=${await show(name)}`);
  const version = await show("server_version");
  await sql.close();
  return {
    url,
    version,
    settings: shown.join(" "),
    pidfile,
    dir,
    async counters() {
      const sql = new SQL(url());
      try {
        const [row] = (await sql.unsafe(
          "select pg_snapshot_xmax(pg_current_snapshot())::text as xids, (pg_current_wal_lsn() - '0/0'::pg_lsn)::text as wal",
        )) as { xids: string; wal: string }[];
        return { xids: Number(row.xids), walBytes: Number(row.wal) };
      } finally {
        await sql.close();
      }
    },
    cpuMs() {
      let ticks = 0;
      for (const pid of processIds()) {
        try {
          const f = statFields(pid);
          if (pid === postmaster || Number(f[1]) === postmaster) ticks += Number(f[11]) + Number(f[12]);
        } catch {} // a backend that ended between the listing and the read
      }
      return ticks * 10; // USER_HZ is 100 on Linux
    },
    async createDatabase(name: string) {
      const admin = new SQL(url());
      try {
        await admin.unsafe(`CREATE DATABASE ${name}`);
      } finally {
        await admin.close();
      }
      return url(name);
    },
    stop,
  };
}
