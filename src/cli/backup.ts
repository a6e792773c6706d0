// `ao backup` and `ao restore`: the online backup of a data directory as one tar archive, and its
// restore into a new directory (modules/backup/service.ts has the layout).
import { closeSync, fsyncSync, openSync, renameSync, rmSync, writeSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { BackupError, POSTGRES_BACKUP, prepareBackup, restoreBackup } from "../modules/backup/service";

const BACKUP_USAGE = `usage: ao backup --output FILE [--data-dir DIR]

Writes a consistent copy of the data directory (database, artifacts, master.key) to FILE, a tar
archive, while the server runs. --output - writes the archive to standard output.
--data-dir defaults to AO_DATA_DIR or ./ao-data; the key is read from AO_MASTER_KEY_FILE when set.
With AO_DATABASE_URL (PostgreSQL) it writes nothing: use PostgreSQL's tools (pg_dump).`;

const RESTORE_USAGE = `usage: ao restore FILE --data-dir NEWDIR

Restores a backup made by ao backup (or the admin API) into NEWDIR, which must be empty or not
exist yet; then start ao serve --data-dir NEWDIR. FILE - reads the archive from standard input.`;

export async function backup(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { output: { type: "string", short: "o" }, "data-dir": { type: "string" }, help: { type: "boolean" } }, strict: true });
  if (values.help) return usage(BACKUP_USAGE);
  if (process.env.AO_DATABASE_URL) return fail("backup", POSTGRES_BACKUP);
  if (!values.output) return fail("backup", `--output is required\n${BACKUP_USAGE}`, 2);
  const dataDir = resolve(values["data-dir"] ?? process.env.AO_DATA_DIR ?? "./ao-data");
  const toStdout = values.output === "-";
  const output = toStdout ? "" : resolve(values.output);
  // Written under a temporary name and renamed when whole: a file named FILE is always a full backup.
  const partial = `${output}.partial`;
  let fd = -1;
  try {
    const prepared = await prepareBackup(dataDir, resolve(process.env.AO_MASTER_KEY_FILE || join(dataDir, "master.key")));
    // Stopped by a signal (Ctrl-C, timeout, systemd), the process would exit without its finally
    // blocks: the copy of the database would stay in the temporary directory, and FILE.partial.
    for (const [signal, status] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
      process.once(signal, () => {
        prepared.discard();
        if (!toStdout) rmSync(partial, { force: true });
        process.exit(status);
      });
    }
    fd = toStdout ? 1 : openSync(partial, "w", 0o600);
    let bytes = 0;
    for await (const chunk of prepared.chunks) {
      for (let done = 0; done < chunk.length; ) done += writeSync(fd, chunk, done);
      bytes += chunk.length;
    }
    if (!toStdout) {
      fsyncSync(fd);
      closeSync(fd);
      fd = -1;
      renameSync(partial, output);
      console.log(JSON.stringify({ output, bytes, artifacts: prepared.artifacts }));
    }
    return 0;
  } catch (err) {
    if (fd > 1) closeSync(fd);
    if (!toStdout) rmSync(partial, { force: true });
    return fail("backup", message(err));
  }
}

export async function restore(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { "data-dir": { type: "string" }, help: { type: "boolean" } }, allowPositionals: true, strict: true });
  if (values.help) return usage(RESTORE_USAGE);
  if (positionals.length !== 1 || !values["data-dir"]) return fail("restore", `give the archive and --data-dir\n${RESTORE_USAGE}`, 2);
  const file = positionals[0];
  let fd = -1;
  try {
    fd = file === "-" ? 0 : openSync(file, "r");
    const result = restoreBackup(fd, resolve(values["data-dir"]));
    console.log(JSON.stringify(result));
    return 0;
  } catch (err) {
    return fail("restore", message(err));
  } finally {
    if (fd > 0) closeSync(fd);
  }
}

function message(err: unknown): string {
  if (err instanceof BackupError) return err.message;
  const e = err as { code?: string; message?: string };
  if (e?.code === "ENOENT") return `${e.message}`;
  return String(e?.message ?? err);
}

function usage(text: string): number {
  console.log(text);
  return 0;
}

/** Exit status 2 for a usage error, 1 when the backup or restore itself failed. */
function fail(command: string, text: string, status = 1): number {
  console.error(`ao ${command}: ${text}`);
  return status;
}
