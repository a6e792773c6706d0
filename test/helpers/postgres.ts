// A real PostgreSQL for the tests: Debian's postgresql package, one cluster per test process on a
// free loopback port (initdb + pg_ctl, trust auth, fsync off), a fresh database per caller.
// Set AO_TEST_POSTGRES_URL to use a server of your own instead (a superuser URL).
// Root cannot run initdb, so as root the cluster runs as the `postgres` user the package creates.
import { existsSync, mkdtempSync, readdirSync, chmodSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { spawn } from "node:child_process";
import { basename, dirname, join } from "node:path";
import { SQL } from "bun";
import { alive } from "./processes";

let cluster: Promise<string> | null = null;
let counter = 0;
/** Stops and removes the cluster this process started (none yet: nothing to do). */
let stop = () => {};

/**
 * Called once every test file has run (test/setup.ts, preloaded by bunfig.toml), since `bun test`
 * fires no process "exit" event; other processes (children the tests spawn) call it on "exit".
 */
export function stopPostgresServer() {
  stop();
  stop = () => {};
}

function binDir(): string {
  const base = "/usr/lib/postgresql";
  const versions = existsSync(base) ? readdirSync(base).sort((a, b) => Number(b) - Number(a)) : [];
  for (const v of versions) if (existsSync(join(base, v, "bin", "initdb"))) return join(base, v, "bin");
  throw new Error("PostgreSQL is not installed (apt-get install postgresql); .ci/run installs it");
}

function asPostgres(args: string[]): string[] {
  return process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...args] : args;
}

async function exec(args: string[]) {
  const p = Bun.spawn(asPostgres(args), { stdout: "pipe", stderr: "pipe" });
  const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  if (code !== 0) throw new Error(`${args.join(" ")} failed (${code}): ${out}${err}`);
}

async function freePort(): Promise<number> {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = s.port;
  s.stop(true);
  return port;
}

/**
 * Stops a cluster (if its postmaster runs) and removes its directory. The removal runs in a process
 * of its own that outlives this one: a whole run's cluster holds a database per test server, some
 * gigabytes of small files, and removing them here took 30-47 s under load, past the hook timeout of
 * the run's last file (which then failed; test/setup.ts runs this in that file's afterAll).
 */
function removeCluster(bin: string, dir: string) {
  const data = join(dir, "data");
  if (existsSync(join(data, "postmaster.pid"))) Bun.spawnSync(asPostgres([join(bin, "pg_ctl"), "-D", data, "-m", "immediate", "stop"]));
  const tail = join(dirname(dir), `${basename(dir)}-removed`);
  try {
    renameSync(dir, tail); // gone from its name at once, so no later run takes it for a live cluster
  } catch {
    return;
  }
  spawn("rm", ["-rf", tail], { detached: true, stdio: "ignore" }).unref();
}

/**
 * Stops and removes the clusters of test processes that died before their run's end (killed by a
 * signal, a timeout), which test/setup.ts never saw: each would otherwise keep its postmaster and
 * its gigabyte of files.
 */
function reapOrphans(bin: string) {
  for (const name of readdirSync(tmpdir())) {
    if (!name.startsWith("ao-pg-")) continue;
    const dir = join(tmpdir(), name);
    let owner: number;
    try {
      owner = Number(readFileSync(join(dir, "owner"), "utf8"));
    } catch {
      continue; // being made, or not ours
    }
    if (!owner || alive(owner)) continue;
    removeCluster(bin, dir);
  }
}

async function startCluster(): Promise<string> {
  const given = process.env.AO_TEST_POSTGRES_URL;
  if (given) return given;
  const bin = binDir();
  reapOrphans(bin);
  const dir = mkdtempSync(join(tmpdir(), "ao-pg-"));
  writeFileSync(join(dir, "owner"), String(process.pid));
  chmodSync(dir, 0o777);
  const data = join(dir, "data");
  await exec([join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--locale=C.UTF-8", "-E", "UTF8"]);
  const port = await freePort();
  await exec([
    join(bin, "pg_ctl"), "-D", data, "-l", join(dir, "log"), "-w", "-o",
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300`,
    "start",
  ]);
  stop = () => removeCluster(bin, dir);
  // A process that is not `bun test` (a child a test spawns, such as integrations/tls-child.ts)
  // does fire "exit": its cluster goes with it (it was left behind before).
  process.on("exit", () => stopPostgresServer());
  return `postgres://postgres@127.0.0.1:${port}/postgres`;
}

/** The cluster's superuser URL (started on first use). */
export function postgresServer(): Promise<string> {
  return (cluster ??= startCluster());
}

/** A new empty database on the test cluster; returns its URL. */
export async function freshDatabase(name = "ao_test"): Promise<string> {
  const admin = new URL(await postgresServer());
  const db = `${name}_${process.pid}_${++counter}_${Date.now().toString(36)}`.toLowerCase().replace(/[^a-z0-9_]/g, "_");
  const sql = new SQL(admin.toString());
  try {
    await sql.unsafe(`CREATE DATABASE ${db}`);
  } finally {
    await sql.close();
  }
  admin.pathname = `/${db}`;
  return admin.toString();
}
