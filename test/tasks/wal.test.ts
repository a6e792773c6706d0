// The background checkpointer (src/db/checkpointer.ts): the server's connection stops
// checkpointing inside commits, the WAL still starts over under steady writes, and stopping
// hands checkpoints back.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { startCheckpointer } from "../../src/db/checkpointer";

test("under steady writes the WAL stays bounded; stop gives checkpoints back to the connection", async () => {
  const dir = mkdtempSync(join(tmpdir(), "ao-wal-"));
  const path = join(dir, "t.db");
  const db = new Database(path, { create: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)");
  const cp = startCheckpointer(db, path, 10, (m) => {
    throw new Error(m);
  }, 50);
  await cp.ready;
  expect(db.query<{ wal_autocheckpoint: number }, []>("PRAGMA wal_autocheckpoint").get()!.wal_autocheckpoint).toBe(0);
  const insert = db.query("INSERT INTO t (body) VALUES (?)");
  const body = "x".repeat(3000); // about one page per row
  let maxWal = 0;
  const end = Date.now() + 800;
  while (Date.now() < end) {
    for (let i = 0; i < 20; i++) insert.run(body);
    maxWal = Math.max(maxWal, statSync(`${path}-wal`).size);
    await Bun.sleep(1);
  }
  const rows = db.query<{ n: number }, []>("SELECT count(*) AS n FROM t").get()!.n;
  // Thousands of pages were written; without restarts the WAL would hold them all.
  expect(rows).toBeGreaterThan(2000);
  expect(maxWal).toBeLessThan(rows * 4096 * 0.5);
  await cp.stop();
  expect(db.query<{ wal_autocheckpoint: number }, []>("PRAGMA wal_autocheckpoint").get()!.wal_autocheckpoint).toBe(1000);
  db.close();
  rmSync(dir, { recursive: true, force: true });
});
