// Artifacts: stored through storeArtifact (the worker upload route calls it), downloaded through
// GET /orgs/:orgId/tasks/:taskId/artifacts/:name. Their bodies are files on SQLite and chunks in
// the database on PostgreSQL (multi-chunk bodies and several servers: test/cluster/artifacts.test.ts).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { makeTask, makeWorld, type World } from "./fixtures";
import { contentTypeOf, safeArtifactName, storeArtifact } from "../../src/modules/tasks/artifacts";
import { ApiError } from "../../src/server/errors";
import { all, get } from "../../src/db/query";

const LIMIT = 64 * 1024;
let s: TestServer;
let w: World;
let taskId: string;
beforeAll(async () => {
  s = await startTestServer({ artifactLimitBytes: LIMIT });
  w = await makeWorld(s);
  taskId = (await makeTask(s, w.owner, w.project.id)).id;
});
afterAll(() => s.stop());

const sha256 = (b: Uint8Array | string) => new Bun.CryptoHasher("sha256").update(b).digest("hex");
const download = (name: string, opts: { token?: string; headers?: Record<string, string>; task?: string; org?: string } = {}) =>
  fetch(`${s.url}/api/v1/orgs/${opts.org ?? w.owner.orgId}/tasks/${opts.task ?? taskId}/artifacts/${name}`, {
    headers: { authorization: `Bearer ${opts.token ?? w.viewer.accessToken}`, ...opts.headers },
  });

/** The bytes kept for an artifact, wherever this server keeps them; null when there are none. */
async function storedBytes(name: string): Promise<Buffer | null> {
  if (!onPostgres) {
    const path = join(s.dataDir, "artifacts", taskId, name);
    return existsSync(path) ? readFileSync(path) : null;
  }
  const row = await s.core.store.read(get<{ body_id: string }>("SELECT body_id FROM artifacts WHERE task_id = ? AND name = ?", taskId, name));
  if (!row) return null;
  const chunks = await s.core.store.read(all<{ data: Uint8Array }>("SELECT data FROM artifact_chunks WHERE body_id = ? ORDER BY n", row.body_id));
  return Buffer.concat(chunks.map((c) => c.data));
}

/** What uploads left aside: temporary files, or bodies in the database that no artifact has. */
async function leftovers(): Promise<string[]> {
  if (!onPostgres) return readdirSync(join(s.dataDir, "artifacts", taskId)).filter((f) => f.startsWith("."));
  const orphans = "SELECT id FROM artifact_bodies b WHERE task_id = ? AND NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.body_id = b.id)";
  return (await s.core.store.read(all<{ id: string }>(orphans, taskId))).map((r) => r.id);
}

async function errorOf(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error("expected an ApiError");
}

function streamOf(chunks: Uint8Array[]): ReadableStream<Uint8Array> {
  return new ReadableStream({
    pull(controller) {
      const next = chunks.shift();
      if (next) controller.enqueue(next);
      else controller.close();
    },
  });
}

describe("store and download", () => {
  test("a PNG from an ArrayBuffer: body, row, event, record, download with headers", async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]);
    const before = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${taskId}`, { token: w.owner.accessToken })).body;
    await Bun.sleep(2);
    const info = await storeArtifact(s.core, w.owner.orgId, taskId, "screenshot.png", png.buffer, 1);
    expect(info).toMatchObject({ name: "screenshot.png", contentType: "image/png", size: 12, etag: sha256(png) });
    expect(await storedBytes("screenshot.png")).toEqual(Buffer.from(png));

    const task = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${taskId}`, { token: w.owner.accessToken })).body;
    expect(task.artifacts).toEqual([{ name: "screenshot.png", contentType: "image/png", size: 12, createdAt: info.createdAt, attempt: 1 }]);
    expect(task.updatedAt > before.updatedAt).toBe(true);
    const events = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${taskId}/events`, { token: w.owner.accessToken })).body.items;
    expect(events.at(-1)).toMatchObject({ type: "artifact", data: { name: "screenshot.png", contentType: "image/png", size: 12 } });

    const r = await download("screenshot.png");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("image/png");
    expect(r.headers.get("content-length")).toBe("12");
    expect(r.headers.get("etag")).toBe(`"${sha256(png)}"`);
    expect(r.headers.get("content-disposition")).toBe('inline; filename="screenshot.png"');
    expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    expect(new Uint8Array(await r.arrayBuffer())).toEqual(png);
  });

  test("If-None-Match with the ETag -> 304 without a body; another tag -> 200", async () => {
    const etag = (await download("screenshot.png")).headers.get("etag")!;
    for (const inm of [etag, `W/${etag}`, `"nope", ${etag}`, "*"]) {
      const r = await download("screenshot.png", { headers: { "if-none-match": inm } });
      expect(r.status).toBe(304);
      expect(r.headers.get("etag")).toBe(etag);
      expect(await r.text()).toBe("");
    }
    expect((await download("screenshot.png", { headers: { "if-none-match": '"other"' } })).status).toBe(200);
  });

  test("a stream in chunks, a Blob, a Uint8Array", async () => {
    const text = "line one\nline two\n".repeat(100);
    const chunks = [new TextEncoder().encode(text.slice(0, 500)), new TextEncoder().encode(text.slice(500))];
    const a = await storeArtifact(s.core, w.owner.orgId, taskId, "run.log", streamOf(chunks), 1);
    expect(a).toMatchObject({ size: text.length, etag: sha256(text), contentType: "text/plain; charset=utf-8" });
    expect(await (await download("run.log")).text()).toBe(text);

    await storeArtifact(s.core, null, taskId, "report.md", new Blob(["# Report"]), 1);
    expect(await (await download("report.md")).text()).toBe("# Report");
    await storeArtifact(s.core, null, taskId, "data.json", new TextEncoder().encode('{"a":1}'), 1);
    const json = await download("data.json");
    expect(json.headers.get("content-type")).toBe("application/json");
    expect(await json.json()).toEqual({ a: 1 });
  });

  test("uploading the same name replaces it: new ETag, one row, one more event", async () => {
    const first = await storeArtifact(s.core, w.owner.orgId, taskId, "notes.txt", new Blob(["v1"]), 1);
    const second = await storeArtifact(s.core, w.owner.orgId, taskId, "notes.txt", new Blob(["version 2"]), 2);
    expect(second.etag).not.toBe(first.etag);
    const rows = await s.core.store.read(all<{ etag: string; attempt: number }>("SELECT etag, attempt FROM artifacts WHERE task_id = ? AND name = 'notes.txt'", taskId));
    expect(rows).toEqual([{ etag: second.etag, attempt: 2 }]);
    // The record says which attempt uploaded it, in the task and in the list (the task page shows a diff of the current attempt only).
    const notesOf = (t: { artifacts: { name: string }[] }) => t.artifacts.find((a) => a.name === "notes.txt");
    expect(notesOf((await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${taskId}`, { token: w.owner.accessToken })).body)).toMatchObject({ attempt: 2 });
    const listed = (await s.api("GET", `/orgs/${w.owner.orgId}/tasks?limit=200`, { token: w.owner.accessToken })).body.items.find((t: { id: string }) => t.id === taskId);
    expect(notesOf(listed)).toMatchObject({ attempt: 2 });
    const r = await download("notes.txt", { headers: { "if-none-match": `"${first.etag}"` } });
    expect(r.status).toBe(200);
    expect(await r.text()).toBe("version 2");
  });

  test("parallel uploads of one name: the row's ETag matches the body that stays", async () => {
    await Promise.all(
      Array.from({ length: 8 }, (_, i) => storeArtifact(s.core, w.owner.orgId, taskId, "race.txt", new Blob([`content ${i}`.repeat(i + 1)]), 1)),
    );
    const row = (await s.core.store.read(get<{ etag: string; size: number }>("SELECT etag, size FROM artifacts WHERE task_id = ? AND name = 'race.txt'", taskId)))!;
    const body = (await storedBytes("race.txt"))!;
    expect(sha256(body)).toBe(row.etag);
    expect(body.length).toBe(row.size);
    // Nothing is left behind: no temporary file, no replaced body.
    expect(await leftovers()).toEqual([]);
  });
});

describe("content types and disposition", () => {
  const table: [string, string, "inline" | "attachment"][] = [
    ["a.png", "image/png", "inline"],
    ["a.jpg", "image/jpeg", "inline"],
    ["a.JPEG", "image/jpeg", "inline"],
    ["a.gif", "image/gif", "inline"],
    ["a.webp", "image/webp", "inline"],
    ["a.svg", "image/svg+xml", "attachment"],
    ["a.txt", "text/plain; charset=utf-8", "inline"],
    ["a.md", "text/markdown; charset=utf-8", "inline"],
    ["a.json", "application/json", "inline"],
    ["a.html", "text/html; charset=utf-8", "attachment"],
    ["a.pdf", "application/pdf", "inline"],
    ["a.log", "text/plain; charset=utf-8", "inline"],
    ["a.diff", "text/x-diff; charset=utf-8", "inline"],
    ["a.patch", "text/x-diff; charset=utf-8", "inline"],
    ["a.zip", "application/zip", "attachment"],
    ["a.exe", "application/octet-stream", "attachment"],
    ["noextension", "application/octet-stream", "attachment"],
  ];
  test("by extension", () => {
    for (const [name, type] of table) expect([name, contentTypeOf(name)]).toEqual([name, type]);
  });
  test("served with them; HTML and SVG only as downloads, sandboxed", async () => {
    for (const [name, type, disposition] of table) {
      await storeArtifact(s.core, w.owner.orgId, taskId, name, new Blob(["x"]), 1);
      const r = await download(name);
      expect([name, r.headers.get("content-type"), r.headers.get("content-disposition")]).toEqual([name, type, `${disposition}; filename="${name}"`]);
      expect(r.headers.get("content-security-policy")).toBe("sandbox");
    }
  });
});

describe("refusals", () => {
  const badNames = ["../escape.txt", "a/b.txt", "a\\b.txt", ".env", ".", "..", "-rf", "", "x".repeat(129), "sp ace.txt", "naïve.txt", "a\0b"];
  for (const name of badNames) {
    test(`store: name ${JSON.stringify(name.slice(0, 20))} -> 400`, async () => {
      const err = await errorOf(storeArtifact(s.core, w.owner.orgId, taskId, name, new Blob(["x"]), 1));
      expect(err.status).toBe(400);
      expect(err.code).toBe("validation_failed");
    });
  }

  test("download: traversal and dotfile names -> 400 or 404, never a file outside", async () => {
    for (const path of ["..%2F..%2Fao.db", "..%2Fscreenshot.png", ".env", "a%2Fb", "%2Fetc%2Fpasswd"]) {
      const r = await download(path);
      expect([path, [400, 404].includes(r.status)]).toEqual([path, true]);
      expect(r.headers.get("content-type")).toContain("application/json");
    }
  });

  test("over the size limit -> 413; nothing stored, nothing left aside", async () => {
    const big = new Uint8Array(LIMIT + 1);
    for (const body of [big, new Blob([big]), streamOf([big.slice(0, LIMIT / 2), big.slice(LIMIT / 2)])]) {
      const err = await errorOf(storeArtifact(s.core, w.owner.orgId, taskId, "big.bin", body, 1));
      expect(err.status).toBe(413);
      expect(err.code).toBe("payload_too_large");
    }
    expect(await storedBytes("big.bin")).toBeNull();
    expect(await leftovers()).toEqual([]);
    expect(await s.core.store.read(get("SELECT 1 FROM artifacts WHERE name = 'big.bin'"))).toBeUndefined();
    // Exactly the limit is fine.
    expect((await storeArtifact(s.core, w.owner.orgId, taskId, "exact.bin", new Uint8Array(LIMIT), 1)).size).toBe(LIMIT);
  });

  test("unknown task, another org's task -> 404 (store and download)", async () => {
    const theirs = (await makeTask(s, w.other, w.otherProject.id)).id;
    expect((await errorOf(storeArtifact(s.core, w.owner.orgId, "tsk_01m819v1yqhsryfjy69tbbabjs", "a.txt", new Blob(["x"]), 1))).status).toBe(404);
    expect((await errorOf(storeArtifact(s.core, w.owner.orgId, theirs, "a.txt", new Blob(["x"]), 1))).status).toBe(404);
    await storeArtifact(s.core, w.other.orgId, theirs, "secret.txt", new Blob(["theirs"]), 1);
    expect((await download("secret.txt", { task: theirs })).status).toBe(404);
    expect((await download("secret.txt", { task: theirs, token: w.ownerToken })).status).toBe(404);
    expect((await download("secret.txt", { task: theirs, org: w.other.orgId, token: w.owner.accessToken })).status).toBe(404);
    expect((await download("secret.txt", { task: theirs, org: w.other.orgId, token: w.ownerToken })).status).toBe(403);
    expect((await download("secret.txt", { task: theirs, org: w.other.orgId, token: w.other.accessToken })).status).toBe(200);
  });

  test("unknown artifact -> 404; no credential -> 401", async () => {
    expect((await download("missing.png")).status).toBe(404);
    const r = await fetch(`${s.url}/api/v1/orgs/${w.owner.orgId}/tasks/${taskId}/artifacts/screenshot.png`);
    expect(r.status).toBe(401);
  });
});

test("safeArtifactName makes any file name acceptable", () => {
  expect(safeArtifactName("dir/sub/Screen Shot 1.png")).toBe("Screen_Shot_1.png");
  expect(safeArtifactName(".env")).toBe("env");
  expect(safeArtifactName("..")).toBe("artifact");
  expect(safeArtifactName("x".repeat(300) + ".png")).toHaveLength(128);
  expect(safeArtifactName("x".repeat(300) + ".png")).toEndWith(".png");
});
