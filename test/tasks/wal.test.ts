// The background checkpointer (src/db/checkpointer.ts): past the limit a checkpoint starts the
// WAL over even while writes keep coming; the server's connection stops checkpointing inside
// commits while the thread runs, and gets it back when it stops or fails (a full disk), until the
// thread's checkpoints succeed again. The thread runs while the connection writes: it starts at a
// write and stops after a quiet spell.
import { afterAll, afterEach, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { checkpointOnce, startCheckpointer } from "../../src/db/checkpointer";
import { mountSmallDisk } from "../helpers/disk";
import { onPostgres, startTestServer } from "../helpers/server";
import { createAdmin } from "../helpers/identity";
import { until } from "../workers/helpers";

// The checkpointer runs only beside SQLite's file (its WAL); a PostgreSQL run has nothing of it to test.
const sqliteOnly = test.skipIf(onPostgres);

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

/** The connection's wal_autocheckpoint: 0 while the thread checkpoints, 1000 while the connection does. */
const autocheckpointOf = (db: Database) => db.query<{ wal_autocheckpoint: number }, []>("PRAGMA wal_autocheckpoint").get()!.wal_autocheckpoint;

function database() {
  const dir = mkdtempSync(join(tmpdir(), "ao-wal-"));
  dirs.push(dir);
  const path = join(dir, "t.db");
  const db = new Database(path, { create: true });
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA busy_timeout = 5000");
  db.exec("PRAGMA wal_autocheckpoint = 0");
  db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)");
  const insert = db.query("INSERT INTO t (body) VALUES (?)");
  const write = (n: number) => {
    for (let i = 0; i < n; i++) insert.run("x".repeat(3000));
  };
  // The WAL header's salts change each time the log starts over.
  const salt = () => readFileSync(`${path}-wal`).subarray(16, 24).toString("hex");
  return { path, db, write, salt };
}

sqliteOnly("past the limit one round starts the log over; below it, it only copies", () => {
  const { path, db, write, salt } = database();
  const other = new Database(path);
  other.exec("PRAGMA busy_timeout = 5000");
  write(200);
  expect(checkpointOnce(other, 100_000)).toBe("passive");
  write(1);
  const before = salt();
  write(200);
  expect(checkpointOnce(other, 100)).toBe("restart");
  write(1);
  expect(salt()).not.toBe(before);
  const frames = other.query<{ log: number }, []>("PRAGMA wal_checkpoint(PASSIVE)").get()!.log;
  expect(frames).toBeLessThan(10); // the new log holds only the last write
  other.close();
  db.close();
});

sqliteOnly("the thread takes checkpoints over and gives them back; the log starts over under writes", async () => {
  const { path, db, write, salt } = database();
  db.exec("PRAGMA wal_autocheckpoint = 1000");
  const cp = startCheckpointer(db, path, {
    now: true,
    intervalMs: 10,
    restartFrames: 50,
    onError: (m) => {
      throw new Error(m);
    },
  });
  await cp.ready;
  expect(autocheckpointOf(db)).toBe(0);
  write(100);
  const first = salt();
  let restarted = false;
  for (let i = 0; i < 200 && !restarted; i++) {
    write(20);
    await Bun.sleep(5);
    restarted = salt() !== first;
  }
  expect(restarted).toBe(true);
  await cp.stop();
  expect(autocheckpointOf(db)).toBe(1000);
  db.close();
});

sqliteOnly("the thread starts at the connection's first write, stops after a quiet spell, and starts again at the next write", async () => {
  const { path, db, write } = database();
  db.exec("PRAGMA wal_autocheckpoint = 1000");
  const threads = () => Number(/^Threads:\s+(\d+)$/m.exec(readFileSync("/proc/self/status", "utf8"))![1]);
  const before = threads();
  const cp = startCheckpointer(db, path, { intervalMs: 10, watchMs: 10, idleMs: 500 });
  try {
    // Reads are not writes: no thread, and the connection checkpoints as SQLite does by default.
    for (let i = 0; i < 5; i++) {
      db.query("SELECT count(*) FROM t").get();
      await Bun.sleep(20);
    }
    expect({ autocheckpoint: autocheckpointOf(db), threads: threads() }).toEqual({ autocheckpoint: 1000, threads: before });
    write(1);
    await cp.ready;
    expect(autocheckpointOf(db)).toBe(0);
    expect(threads()).toBeGreaterThan(before);
    // Writes keep it running past the quiet spell's length.
    for (let i = 0; i < 12; i++) {
      write(1);
      await Bun.sleep(50);
    }
    expect(autocheckpointOf(db)).toBe(0);
    // Quiet: the connection takes the checkpoints back and the thread goes.
    await until(() => autocheckpointOf(db) === 1000, 10_000, 10);
    await until(() => threads() === before, 10_000, 10);
    // The next write starts a thread again.
    write(1);
    await until(() => autocheckpointOf(db) === 0, 10_000, 10);
  } finally {
    await cp.stop();
  }
  expect(autocheckpointOf(db)).toBe(1000);
  db.close();
});

sqliteOnly("a thread the system refuses is reported, not thrown from the timer; the connection keeps checkpointing inline; a later one that starts is reported too", async () => {
  const { path, db, write } = database();
  db.exec("PRAGMA wal_autocheckpoint = 1000");
  const real = globalThis.Worker;
  const failures: string[] = [];
  // The one way to make the runtime refuse a thread here: its constructor throws, as at a process's thread limit.
  globalThis.Worker = class {
    constructor() {
      throw new Error("EAGAIN: no more threads");
    }
  } as unknown as typeof Worker;
  let recovered = 0;
  const cp = startCheckpointer(db, path, { watchMs: 10, idleMs: 500, onError: (m) => failures.push(m), onRecovered: () => recovered++ });
  try {
    write(1);
    await until(() => failures.length > 0, 10_000, 10);
    // Not tried again at every look while the quiet spell's length has not passed.
    write(1);
    await Bun.sleep(100);
    expect(failures).toEqual(["the checkpoint thread could not start: Error: EAGAIN: no more threads"]);
    expect(autocheckpointOf(db)).toBe(1000);
    // Threads are allowed again: the next try, at a write, starts one and says so.
    globalThis.Worker = real;
    for (let i = 0; i < 500 && recovered === 0; i++) {
      write(1);
      await Bun.sleep(20);
    }
    expect(recovered).toBe(1);
    expect(autocheckpointOf(db)).toBe(0);
  } finally {
    globalThis.Worker = real;
    await cp.stop();
    db.close();
  }
});

sqliteOnly("the server's writes start its thread: the server's connection stops checkpointing inside commits", async () => {
  const s = await startTestServer();
  try {
    await createAdmin(s);
    await until(() => autocheckpointOf(s.core.sqlite!) === 0, 10_000, 10);
  } finally {
    await s.stop();
  }
});

const disk = onPostgres ? "the checkpointer is SQLite's" : mountSmallDisk(8 * 1024 * 1024);
afterAll(() => void (typeof disk !== "string" && disk.unmount()));
test.skipIf(typeof disk === "string")("on a full disk the server checkpoints inline, and the thread takes over again once space is freed", async () => {
  const d = disk as Exclude<typeof disk, string>;
  try {
    const path = join(d.dir, "t.db");
    const db = new Database(path, { create: true });
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA wal_autocheckpoint = 0");
    db.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)");
    const insert = db.query("INSERT INTO t (body) VALUES (?)");
    db.transaction(() => {
      for (let i = 0; i < 600; i++) insert.run("x".repeat(3000));
    })();
    // The log holds ~2 MB the database file has not got yet: copying it needs space there is not.
    const filler = d.fill();
    const failed: string[] = [];
    let recovered = () => {};
    const back = new Promise<void>((resolve) => (recovered = resolve));
    let firstFailure = () => {};
    const failure = new Promise<void>((resolve) => (firstFailure = resolve));
    const cp = startCheckpointer(db, path, {
      now: true,
      intervalMs: 10,
      restartFrames: 50,
      onError: (m) => {
        failed.push(m);
        firstFailure();
      },
      onRecovered: () => recovered(),
    });
    await failure;
    expect(failed[0]).toMatch(/full/);
    expect(autocheckpointOf(db)).toBe(1000);
    rmSync(filler);
    await back;
    expect(autocheckpointOf(db)).toBe(0);
    await cp.stop();
    db.close();
  } finally {
    d.unmount();
  }
});
