// Online backup and restore: `ao backup` (a real process) and POST /admin/backup while tasks are
// being created, restored with `ao restore` into an empty directory, and a server started on it
// that has every task acknowledged before the backup began and the artifacts byte for byte.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, login, makeToken, type Session } from "../helpers/identity";
import { spawnCli } from "../cli/helpers";
import { inheritedEnv } from "../helpers/processes";
import { orgWithProject } from "../workers/helpers";
import { storeArtifact } from "../../src/modules/tasks/artifacts";
import { prepareBackup, restoreBackup } from "../../src/modules/backup/service";

let s: TestServer;
let admin: Session;
let p: Awaited<ReturnType<typeof orgWithProject>>;
const scratch = mkdtempSync(join(tmpdir(), "ao-backup-test-"));
/** Artifacts stored before any backup: taskId/name -> bytes. */
const artifacts = new Map<string, Uint8Array<ArrayBuffer>>();

beforeAll(async () => {
  s = await startTestServer();
  admin = await createAdmin(s);
  p = await orgWithProject(s, admin);
  for (let i = 0; i < 3; i++) {
    const task = await create(`with artifact ${i}`);
    const bytes = crypto.getRandomValues(new Uint8Array(150_000 + i));
    const name = i === 2 ? `${"long-name-".repeat(11)}report.bin` : `shot-${i}.png`;
    await storeArtifact(s.core, p.orgId, task, name, bytes, 1);
    artifacts.set(`${task}/${name}`, bytes);
  }
});
afterAll(async () => {
  await s.stop();
  rmSync(scratch, { recursive: true, force: true });
});

async function create(title: string): Promise<string> {
  const r = await s.api("POST", `/orgs/${p.orgId}/tasks`, { token: admin.accessToken, body: { projectId: p.projectId, title, prompt: "p" } });
  if (r.status !== 201) throw new Error(`create -> ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.id;
}

/** Creates tasks on 4 connections until stopped; `acked` holds each id once its 201 has arrived. */
function load() {
  const acked: string[] = [];
  let stop = false;
  const loops = Array.from({ length: 4 }, async (_, k) => {
    for (let i = 0; !stop; i++) acked.push(await create(`load ${k}.${i}`));
  });
  return {
    acked,
    async stop() {
      stop = true;
      await Promise.all(loops);
    },
  };
}

/** Starts a server on a restored directory and checks it holds `expected` tasks and every artifact. */
async function checkRestored(dataDir: string, expected: string[]) {
  const r = await startTestServer({ dataDir });
  try {
    const session = await login(r, admin.email, admin.password);
    const ids = new Set<string>();
    let cursor: string | null = null;
    do {
      const page = await r.api("GET", `/orgs/${p.orgId}/tasks?limit=200${cursor ? `&cursor=${cursor}` : ""}`, { token: session.accessToken });
      expect(page.status).toBe(200);
      for (const t of page.body.items) ids.add(t.id);
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(expected.filter((id) => !ids.has(id))).toEqual([]);
    for (const [key, bytes] of artifacts) {
      const res = await fetch(`${r.url}/api/v1/orgs/${p.orgId}/tasks/${key.split("/")[0]}/artifacts/${key.split("/")[1]}`, {
        headers: { authorization: `Bearer ${session.accessToken}` },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("etag")).toBe(`"${new Bun.CryptoHasher("sha256").update(bytes).digest("hex")}"`);
      expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes);
    }
    expect(statSync(join(dataDir, "master.key")).mode & 0o777).toBe(0o600);
    return ids;
  } finally {
    await r.stop();
  }
}

// The backup is of the SQLite file; on PostgreSQL its own tools back ao up (the route answers 501).
describe.skipIf(onPostgres)("ao backup and ao restore", () => {
  test("a backup taken under load restores to a server with every acknowledged task and the artifacts", async () => {
    const running = load();
    while (running.acked.length < 20) await Bun.sleep(5);
    const ackedBefore = [...running.acked];
    const archive = join(scratch, "cli.tar");
    const result = await spawnCli(["backup", "--data-dir", s.dataDir, "--output", archive]).done.finally(() => running.stop());
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ output: archive, artifacts: 3 });
    expect(running.acked.length).toBeGreaterThan(ackedBefore.length); // writes went on during the backup
    expect(existsSync(`${archive}.partial`)).toBe(false);

    // A person can read it with tar: the documented layout, manifest first and database last.
    const listing = Bun.spawnSync(["tar", "-tf", archive]).stdout.toString().trim().split("\n");
    expect(listing[0]).toBe("ao-backup.json");
    expect(listing.at(-1)).toBe("ao.db");
    expect(listing).toContain("master.key");
    expect(listing.filter((l) => l.startsWith("artifacts/")).sort()).toEqual([...artifacts.keys()].map((k) => `artifacts/${k}`).sort());

    const target = join(scratch, "restored-cli");
    const restored = await spawnCli(["restore", archive, "--data-dir", target]).done;
    expect(restored.stderr).toBe("");
    expect(restored.code).toBe(0);
    expect(JSON.parse(restored.stdout)).toMatchObject({ dataDir: target, artifacts: 3 });
    await checkRestored(target, ackedBefore);
  }, 60_000);

  test("ao restore refuses a directory that is not empty, and changes nothing there", async () => {
    const archive = join(scratch, "cli.tar");
    const target = join(scratch, "occupied");
    mkdirSync(target);
    writeFileSync(join(target, "notes.txt"), "mine");
    const r = await spawnCli(["restore", archive, "--data-dir", target]).done;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("is not empty");
    expect(readdirSync(target)).toEqual(["notes.txt"]);
  });

  test("a truncated or foreign archive is refused and the directory is left empty", () => {
    const whole = readFileSync(join(scratch, "cli.tar"));
    const cut = join(scratch, "cut.tar");
    writeFileSync(cut, whole.subarray(0, whole.length - 4096));
    const foreign = join(scratch, "foreign.tar");
    Bun.spawnSync(["tar", "-C", scratch, "-cf", foreign, "cut.tar"]);
    for (const [file, message] of [
      [cut, /ends early|damaged/],
      [foreign, /not an ao backup/],
    ] as const) {
      const target = join(scratch, `empty-${file.length}-${Math.random()}`);
      mkdirSync(target);
      const fd = openSync(file, "r");
      try {
        expect(() => restoreBackup(fd, target)).toThrow(message);
      } finally {
        closeSync(fd);
      }
      expect(readdirSync(target)).toEqual([]);
    }
  });
});

describe.skipIf(onPostgres)("an artifact replaced after the database copy was taken", () => {
  test("is archived as found, with its row corrected to it, so the restore checks out", async () => {
    const [key] = [...artifacts.keys()];
    const [taskId, name] = key.split("/");
    const prepared = await prepareBackup(s.dataDir);
    const newer = crypto.getRandomValues(new Uint8Array(4096));
    await storeArtifact(s.core, p.orgId, taskId, name, newer, 1);
    const archive = join(scratch, "replaced.tar");
    const chunks: Uint8Array[] = [];
    for await (const chunk of prepared.chunks) chunks.push(chunk);
    writeFileSync(archive, Buffer.concat(chunks));
    const target = join(scratch, "restored-replaced");
    const fd = openSync(archive, "r");
    try {
      restoreBackup(fd, target);
    } finally {
      closeSync(fd);
    }
    expect(new Uint8Array(readFileSync(join(target, "artifacts", taskId, name)))).toEqual(newer);
    artifacts.set(key, newer);
    await checkRestored(target, []);
  });
});

describe("POST /api/v1/admin/backup", () => {
  test.skipIf(onPostgres)("streams the archive to an instance administrator under load; it restores", async () => {
    const running = load();
    while (running.acked.length < 20) await Bun.sleep(5);
    const ackedBefore = [...running.acked];
    const archive = join(scratch, "api.tar");
    try {
      const res = await fetch(`${s.url}/api/v1/admin/backup`, { method: "POST", headers: { authorization: `Bearer ${admin.accessToken}` } });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("application/x-tar");
      expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="ao-backup-.*\.tar"$/);
      writeFileSync(archive, new Uint8Array(await res.arrayBuffer()));
    } finally {
      await running.stop();
    }
    expect(running.acked.length).toBeGreaterThan(ackedBefore.length);

    const target = join(scratch, "restored-api");
    const fd = openSync(archive, "r");
    try {
      expect(restoreBackup(fd, target)).toMatchObject({ artifacts: 3 });
    } finally {
      closeSync(fd);
    }
    const ids = await checkRestored(target, ackedBefore);
    expect(ids.size).toBeGreaterThanOrEqual(ackedBefore.length + 3);
  }, 60_000);

  test.skipIf(!onPostgres)("on PostgreSQL: 501, back it up with PostgreSQL's tools", async () => {
    const res = await fetch(`${s.url}/api/v1/admin/backup`, { method: "POST", headers: { authorization: `Bearer ${admin.accessToken}` } });
    expect(res.status).toBe(501);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("backup_unavailable");
  });

  test("refused without credentials, to a member, and to an API token of the administrator", async () => {
    const token = await makeToken(s, admin);
    const { addMember } = await import("../helpers/identity");
    const member = await addMember(s, admin, "admin");
    for (const [auth, status] of [
      [undefined, 401],
      [`Bearer ${member.accessToken}`, 403],
      [`Bearer ${token}`, 403],
    ] as const) {
      const res = await fetch(`${s.url}/api/v1/admin/backup`, { method: "POST", headers: auth ? { authorization: auth } : {} });
      expect(res.status).toBe(status);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe(status === 401 ? "unauthorized" : "forbidden");
    }
  });

  test("listed in the OpenAPI document with its error answers", async () => {
    const doc = (await s.api("GET", "/openapi.json")).body;
    const op = doc.paths["/api/v1/admin/backup"].post;
    expect(Object.keys(op.responses).sort()).toEqual(["200", "400", "401", "403", "500", "501", "507"]);
    expect(op.responses["200"].content["application/x-tar"]).toBeDefined();
  });
});

/** Runs the command line to its end, or kills it after `ms` (a server that started when it should not have). */
async function runToExit(args: string[], ms = 20_000) {
  const proc = spawnCli(args);
  const timer = setTimeout(() => proc.kill(), ms);
  try {
    return await proc.done;
  } finally {
    clearTimeout(timer);
  }
}

describe.skipIf(onPostgres)("a restore killed with kill -9 before it ends", () => {
  test("leaves a directory ao serve refuses to start on, and ao restore and ao doctor name it", async () => {
    const archive = join(scratch, "for-kill.tar");
    const backedUp = await spawnCli(["backup", "--data-dir", s.dataDir, "--output", archive]).done;
    expect(backedUp.code).toBe(0);
    const bytes = readFileSync(archive);
    const target = join(scratch, "restore-killed");
    // The restore reads the archive up to the middle of ao.db (its last entry) and then waits for
    // more: killed there, it has written the key and the artifacts but not the database.
    const restoring = Bun.spawn([join(import.meta.dir, "..", "..", "node_modules", ".bin", "bun"), "src/main.ts", "restore", "-", "--data-dir", target], {
      cwd: join(import.meta.dir, "..", ".."),
      stdin: "pipe",
      stdout: "ignore",
      stderr: "ignore",
    });
    restoring.stdin.write(bytes.subarray(0, bytes.length - 64 * 1024));
    await restoring.stdin.flush();
    while (!existsSync(join(target, "ao.db"))) await Bun.sleep(5);
    restoring.kill("SIGKILL");
    await restoring.exited;
    const left = readdirSync(target).sort();

    const served = await runToExit(["serve", "--data-dir", target, "--port", "0", "--host", "127.0.0.1"]);
    expect(served.code).toBe(1);
    expect(served.stderr).toContain(`an ao restore into ${target} did not finish`);
    expect(readdirSync(target).sort()).toEqual(left); // no new database, nothing else written

    const again = await runToExit(["restore", archive, "--data-dir", target]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`an ao restore into ${target} did not finish`);

    const doctor = await runToExit(["doctor", "--offline", "--data-dir", target]);
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain(`fail  data directory: an ao restore into ${target} did not finish`);

    // Emptied as the messages say, the same archive restores and the server starts on it.
    rmSync(target, { recursive: true });
    const restored = await runToExit(["restore", archive, "--data-dir", target]);
    expect([restored.code, restored.stderr]).toEqual([0, ""]);
    expect(readdirSync(target).sort()).toEqual(["ao.db", "artifacts", "master.key"]);
    await checkRestored(target, []);
  }, 90_000);
});

/** `ao backup --output -` whose archive this test reads: it blocks on a full pipe until read on. */
async function backupToPipe(tmp: string) {
  const root = join(import.meta.dir, "..", "..");
  const proc = Bun.spawn([join(root, "node_modules", ".bin", "bun"), "src/main.ts", "backup", "--data-dir", s.dataDir, "--output", "-"], {
    cwd: root,
    env: { ...inheritedEnv(), TMPDIR: tmp },
    stdout: "pipe",
    stderr: "pipe",
  });
  const reader = proc.stdout.getReader();
  expect((await reader.read()).done).toBe(false); // the copy is taken and the archive streams
  return {
    proc,
    async drain() {
      while (!(await reader.read()).done);
      return proc.exited;
    },
  };
}

describe.skipIf(onPostgres)("an ao backup stopped before it ends", () => {
  test("by SIGTERM or SIGINT (timeout, systemd, Ctrl-C): it removes its copy of the database", async () => {
    for (const signal of ["SIGTERM", "SIGINT"] as const) {
      const tmp = mkdtempSync(join(scratch, "tmp-"));
      const running = await backupToPipe(tmp);
      expect(readdirSync(tmp)).toHaveLength(1);
      running.proc.kill(signal);
      expect(await running.drain()).not.toBe(0);
      expect(readdirSync(tmp)).toEqual([]);
    }
  });

  test("by kill -9: the next backup removes the copy it left", async () => {
    const tmp = mkdtempSync(join(scratch, "tmp-"));
    const killed = await backupToPipe(tmp);
    const [left] = readdirSync(tmp);
    expect(readdirSync(join(tmp, left))).toContain("ao.db");
    killed.proc.kill("SIGKILL");
    await killed.drain();
    expect(readdirSync(tmp)).toEqual([left]);

    const next = await backupToPipe(tmp);
    expect(readdirSync(tmp)).not.toContain(left);
    expect(await next.drain()).toBe(0);
    expect(readdirSync(tmp)).toEqual([]);
  });
});
