// A full disk, for real: the data directory on a small tmpfs. An upload that does not fit is
// refused (507) and leaves nothing; once the disk is full, writes answer 507, reads go on, the
// dispatcher pauses offers instead of spinning, the log says it once, and all comes back when
// space is freed.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { mountSmallDisk, type SmallDisk } from "../helpers/disk";
import { FAST, ProtocolClient, createTaskApi, makeWorker, orgWithProject, until, workerApi } from "../workers/helpers";
import { LEASE_HEADER } from "../../src/protocol/requests";
import { all, get } from "../../src/db/query";

const disk = mountSmallDisk(8 * 1024 * 1024);
if (typeof disk === "string") console.warn(`skipping full-disk tests: ${disk}`);
const MiB = 1024 * 1024;
// Also when every test here is filtered out (the describe's own afterAll then does not run).
afterAll(() => void (typeof disk !== "string" && disk.unmount()));

describe.skipIf(typeof disk === "string")("on a full disk", () => {
  const d = disk as SmallDisk;
  let s: TestServer;
  let admin: Session;
  let p: Awaited<ReturnType<typeof orgWithProject>>;
  const logged: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const log = (level: string) => (message: string, fields?: Record<string, unknown>) => void logged.push({ level, message, fields });
  let fillers: string[] = [];
  // ao.db and the artifacts live on the small disk; on PostgreSQL both are in the database.
  const sqliteOnly = test.skipIf(onPostgres);

  beforeAll(async () => {
    s = await startTestServer({
      dataDir: join(d.dir, "data"),
      workerTimeouts: FAST,
      artifactLimitBytes: 50 * MiB,
      logger: { info: log("info"), warn: log("warn"), error: log("error") },
    });
    admin = await createAdmin(s);
    p = await orgWithProject(s, admin);
  });
  afterAll(async () => {
    for (const f of fillers) rmSync(f, { force: true });
    await s?.stop();
    d.unmount();
  });

  /** Fills the disk to the last block, with the WAL folded back first so no write finds room in it. */
  function fillDisk() {
    s.core.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    fillers.push(d.fill());
    expect(d.free()).toBe(0);
  }
  function freeDisk() {
    for (const f of fillers) rmSync(f, { force: true });
    fillers = [];
  }

  async function claimed() {
    const { workerId, credential } = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, credential);
    const task = await createTaskApi(s, p);
    const offer = await c.next("offer", (m) => m.taskId === task.id);
    const r = await workerApi(s, credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
    expect(r.status).toBe(200);
    c.running = [{ taskId: task.id, attempt: r.body.attempt }]; // its heartbeats keep the attempt
    return { c, workerId, credential, taskId: task.id, lease: r.body.leaseToken as string };
  }

  sqliteOnly("an upload larger than the free space: 507, no file, no row, the server goes on", async () => {
    const { c, credential, taskId, lease } = await claimed();
    const body = new Uint8Array(12 * MiB).fill(7);
    const put = (name: string, bytes: Uint8Array) =>
      fetch(`${s.url}/api/v1/worker/tasks/${taskId}/artifacts/${name}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${credential}`, [LEASE_HEADER]: lease },
        body: bytes,
      });
    const r = await put("big.bin", body);
    expect(r.status).toBe(507);
    expect(await r.json()).toEqual({ error: { code: "insufficient_storage", message: expect.stringContaining("disk is full") } });
    expect(readdirSync(join(s.dataDir, "artifacts", taskId))).toEqual([]);
    expect(await s.core.store.read(all("SELECT name FROM artifacts WHERE task_id = ?", taskId))).toEqual([]);
    const events = (await s.api("GET", `/orgs/${p.orgId}/tasks/${taskId}/events`, { token: admin.accessToken })).body.items;
    expect(events.some((e: { type: string }) => e.type === "artifact")).toBe(false);

    // Still running, and the space the partial file took is back: a file that fits is stored whole.
    expect((await s.api("GET", "/health")).status).toBe(200);
    const small = new Uint8Array(MiB).fill(3);
    const ok = await put("small.bin", small);
    expect(ok.status).toBe(201);
    const dl = await fetch(`${s.url}/api/v1/orgs/${p.orgId}/tasks/${taskId}/artifacts/small.bin`, { headers: { authorization: `Bearer ${admin.accessToken}` } });
    expect(new Uint8Array(await dl.arrayBuffer())).toEqual(small);
    c.close();
  });

  sqliteOnly("writes answer 507 (never 500) while reads go on, and sign-in works again once space is freed", async () => {
    fillDisk();
    try {
      const r = await s.api("POST", "/auth/login", { body: { email: admin.email, password: admin.password } });
      expect(r.status).toBe(507);
      expect(r.body.error.code).toBe("insufficient_storage");
      const created = await s.api("POST", `/orgs/${p.orgId}/tasks`, { token: admin.accessToken, body: { projectId: p.projectId, title: "t", prompt: "p" } });
      expect(created.status).toBe(507);
      const list = await s.api("GET", `/orgs/${p.orgId}/tasks`, { token: admin.accessToken });
      expect(list.status).toBe(200);
      expect(list.body.items.length).toBeGreaterThan(0);
    } finally {
      freeDisk();
    }
    const again = await s.api("POST", "/auth/login", { body: { email: admin.email, password: admin.password } });
    expect(again.status).toBe(200);
    expect(logged.filter((l) => l.level === "error" && l.message === "unhandled error")).toEqual([]);
  });

  sqliteOnly("a worker's claims on a full disk: offers pause and back off (no spin), one log line per cause, then resume", async () => {
    const { workerId, credential } = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, credential);
    const task = await createTaskApi(s, p);
    const claims: { at: number; status: number }[] = [];
    // Claims every offer at once, the way `ao worker` does.
    const claimAll = async () => {
      for (;;) {
        const offer = await c.next("offer", (m) => m.taskId === task.id, 10_000).catch(() => null);
        if (!offer) return;
        const r = await workerApi(s, credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
        claims.push({ at: Date.now(), status: r.status });
        if (r.status === 200) return;
      }
    };
    fillDisk();
    const claiming = claimAll();
    try {
      await until(() => claims.length >= 3, 10_000);
      const failed = claims.slice(0, 3);
      expect(failed.map((x) => x.status)).toEqual([507, 507, 507]);
      // Paused 1 s after the first failure and 2 s after the second (not re-offered at once).
      expect(failed[1].at - failed[0].at).toBeGreaterThanOrEqual(900);
      expect(failed[2].at - failed[1].at).toBeGreaterThanOrEqual(1900);
      const lines = logged.filter((l) => l.level !== "info");
      // Every failed write of this file (the upload, the sign-in, the task and these claims) makes
      // one line per cause in all: ENOSPC from the upload, SQLITE_FULL from the database.
      const causes = lines.filter((l) => l.message === "a write failed: the disk is full").map((l) => l.fields?.cause);
      expect(causes.sort()).toEqual(["ENOSPC", "SQLITE_FULL"]);
      expect(lines.filter((l) => l.message === "offers paused: the disk is full").length).toBe(1);
      expect(lines.filter((l) => l.message === "unhandled error")).toEqual([]);
    } finally {
      freeDisk();
    }
    await claiming;
    expect(claims.at(-1)!.status).toBe(200);
    expect(logged.some((l) => l.message === "offers resumed: the disk takes writes again")).toBe(true);
    const row = await s.core.store.read(get<{ status: string; worker_id: string }>("SELECT status, worker_id FROM tasks WHERE id = ?", task.id));
    expect(row).toEqual({ status: "running", worker_id: workerId });
    expect(existsSync(s.dataDir)).toBe(true);
    c.close();
  }, 30_000);
});
