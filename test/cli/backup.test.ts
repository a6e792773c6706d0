// `ao backup` beside the settings of several servers: on PostgreSQL it explains which tools back
// the instance up and writes nothing; with AO_MASTER_KEY_FILE it archives the key from that file.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin } from "../helpers/identity";
import { spawnCli } from "./helpers";

let s: TestServer;
const scratch = mkdtempSync(join(tmpdir(), "ao-backup-cli-"));
const keyFile = join(scratch, "keys", "ao.key");
// `ao backup` archives ao.db, so this server runs on SQLite in either test mode; the PostgreSQL
// answers are asked for with AO_DATABASE_URL (and config.databaseUrl) below.
beforeAll(async () => {
  s = await startTestServer({ masterKeyFile: keyFile, databaseUrl: null });
});
afterAll(async () => {
  await s.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe("ao backup", () => {
  test("with AO_DATABASE_URL: points to pg_dump and the master key file, exit 1, writes nothing", async () => {
    const dir = mkdtempSync(join(scratch, "out-"));
    const output = join(dir, "backup.tar");
    const r = await spawnCli(["backup", "--data-dir", s.dataDir, "--output", output], { AO_DATABASE_URL: "postgres://ao@127.0.0.1:5432/ao" }).done;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("ao backup: ao runs on PostgreSQL (AO_DATABASE_URL): back up the database with PostgreSQL's tools (pg_dump");
    expect(r.stderr).toContain("master key file (AO_MASTER_KEY_FILE)");
    expect(r.stdout).toBe("");
    expect(readdirSync(dir)).toEqual([]);
  });

  test("with AO_MASTER_KEY_FILE: the key comes from that file, and the restored directory starts with it", async () => {
    const output = join(scratch, "with-key-file.tar");
    const r = await spawnCli(["backup", "--data-dir", s.dataDir, "--output", output], { AO_MASTER_KEY_FILE: keyFile }).done;
    expect([r.code, r.stderr]).toEqual([0, ""]);
    const restored = join(scratch, "restored");
    expect((await spawnCli(["restore", output, "--data-dir", restored]).done).code).toBe(0);
    expect(readFileSync(join(restored, "master.key"), "utf8")).toBe(readFileSync(keyFile, "utf8"));
    expect(existsSync(join(s.dataDir, "master.key"))).toBe(false);
  });

  test("POST /admin/backup on a PostgreSQL instance: 501 backup_unavailable with the same advice", async () => {
    const admin = await createAdmin(s);
    s.core.config.databaseUrl = "postgres://ao@127.0.0.1:5432/ao";
    try {
      const r = await s.api("POST", "/admin/backup", { token: admin.accessToken });
      expect(r.status).toBe(501);
      expect(r.body.error.code).toBe("backup_unavailable");
      expect(r.body.error.message).toContain("pg_dump");
    } finally {
      s.core.config.databaseUrl = null;
    }
  });
});
