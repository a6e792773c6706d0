// Where the database and the master key are: AO_DATABASE_URL / --database-url (PostgreSQL) and
// AO_MASTER_KEY_FILE, which servers sharing one PostgreSQL database must share.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { defaultConfig } from "../../src/server/config";
import { startTestServer } from "../helpers/server";
import { createAdmin } from "../helpers/identity";
import { freshDatabase } from "../helpers/postgres";

const ENV = ["AO_DATABASE_URL", "AO_MASTER_KEY_FILE", "AO_DATA_DIR"] as const;
const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));
const dirs: string[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "ao-settings-"));
  dirs.push(dir);
  return dir;
}

afterEach(() => {
  for (const k of ENV) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("AO_DATABASE_URL", () => {
  test("unset: no database URL, ao.db in the data directory as before", () => {
    delete process.env.AO_DATABASE_URL;
    expect(defaultConfig({ dataDir: "/srv/ao" }).databaseUrl).toBeNull();
  });

  test("a postgres:// or postgresql:// URL is taken; the flag wins over the variable", () => {
    process.env.AO_DATABASE_URL = "postgres://ao@db.internal:5432/ao";
    expect(defaultConfig().databaseUrl).toBe("postgres://ao@db.internal:5432/ao");
    expect(defaultConfig({ databaseUrl: "postgresql://other@db/ao" }).databaseUrl).toBe("postgresql://other@db/ao");
  });

  test("any other URL is refused, without echoing its password", () => {
    process.env.AO_DATABASE_URL = "mysql://ao:s3cret@db/ao";
    expect(() => defaultConfig()).toThrow("AO_DATABASE_URL (--database-url) must be a postgres:// or postgresql:// URL, got mysql://***@db/ao");
  });

  test("ao serve keeps its data in PostgreSQL: nothing in ao.db, and a restart finds what was written", async () => {
    const dataDir = tempDir();
    const databaseUrl = await freshDatabase();
    const s = await startTestServer({ dataDir, databaseUrl });
    let admin;
    try {
      admin = await createAdmin(s);
      expect(s.core.store.dialect).toBe("postgres");
    } finally {
      await s.stop();
    }
    expect(existsSync(join(dataDir, "ao.db"))).toBe(false);
    const again = await startTestServer({ dataDir, databaseUrl });
    try {
      const me = await again.api("GET", "/me", { token: admin.accessToken });
      expect(me.status).toBe(200);
      expect(me.body.email).toBe(admin.email);
    } finally {
      await again.stop();
    }
  });

  test("an unreachable PostgreSQL stops the start with the driver's error, and writes no ao.db", async () => {
    const dataDir = tempDir();
    await expect(startTestServer({ dataDir, databaseUrl: "postgres://ao@127.0.0.1:1/ao" })).rejects.toThrow();
    expect(existsSync(join(dataDir, "ao.db"))).toBe(false);
  });
});

describe("AO_MASTER_KEY_FILE", () => {
  test("default: master.key in the data directory", () => {
    delete process.env.AO_MASTER_KEY_FILE;
    expect(defaultConfig({ dataDir: "/srv/ao" }).masterKeyFile).toBe("/srv/ao/master.key");
  });

  test("the first start writes the key there (0600); a restart reads it: a session made before still works", async () => {
    const keyFile = join(tempDir(), "shared", "ao.key");
    process.env.AO_MASTER_KEY_FILE = keyFile;
    const dataDir = tempDir();
    const first = await startTestServer({ dataDir });
    let admin;
    try {
      expect(statSync(keyFile).mode & 0o777).toBe(0o600);
      expect(Buffer.from(readFileSync(keyFile, "utf8").trim(), "base64").length).toBe(32);
      expect(existsSync(join(dataDir, "master.key"))).toBe(false);
      admin = await createAdmin(first);
    } finally {
      await first.stop();
    }
    const key = readFileSync(keyFile, "utf8");
    const second = await startTestServer({ dataDir });
    try {
      expect(readFileSync(keyFile, "utf8")).toBe(key);
      const me = await second.api("GET", "/me", { token: admin.accessToken });
      expect([me.status, me.body.email]).toEqual([200, admin.email]);
      const refreshed = await second.api("POST", "/auth/refresh", { body: { refreshToken: admin.refreshToken } });
      expect(refreshed.status).toBe(200);
    } finally {
      await second.stop();
    }
  });
});
