// Artifacts on several servers: on PostgreSQL their bodies are chunks in the database, so what a
// worker uploads through one server downloads through another byte for byte; the size limit holds
// while the body streams in and leaves nothing behind; a task's bodies go with the task.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { startCluster, type Cluster } from "../helpers/cluster";
import type { TestServer } from "../helpers/server";
import { createAdmin, newOrg } from "../helpers/identity";
import { ProtocolClient, createTaskApi, makeWorker, orgWithProject, workerApi } from "../workers/helpers";
import { LEASE_HEADER } from "../../src/protocol/requests";
import { CHUNK_BYTES } from "../../src/modules/tasks/artifact-bodies";
import { all, get, run, type Q } from "../../src/db/query";
import { storeArtifact } from "../../src/modules/tasks/artifacts";

const LIMIT = 8 * CHUNK_BYTES;
let cluster: Cluster;
let a: TestServer;
let b: TestServer;
const clients: ProtocolClient[] = [];

beforeAll(async () => {
  cluster = await startCluster(2, { artifactLimitBytes: LIMIT });
  [a, b] = cluster.servers;
  await createAdmin(a);
}, 60_000);
afterAll(async () => {
  for (const c of clients) c.close();
  await cluster?.stop();
});

const sha256 = (bytes: Uint8Array) => new Bun.CryptoHasher("sha256").update(bytes).digest("hex");

/**
 * A task claimed by a worker connected to server A (its lease lets the worker upload through any
 * server), in an organization of its own: no other test's task is offered to its worker.
 */
async function claimedTask() {
  const p = await orgWithProject(a, await newOrg(a));
  const { credential } = await makeWorker(a, p.orgId);
  const c = await ProtocolClient.connect(a, credential);
  clients.push(c);
  const task = await createTaskApi(a, p);
  const offer = await c.next("offer", (m) => m.taskId === task.id);
  const r = await workerApi(a, credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
  expect(r.status).toBe(200);
  c.running = [{ taskId: task.id, attempt: r.body.attempt }];
  const upload = (through: TestServer, name: string, body: Uint8Array | ReadableStream<Uint8Array>) =>
    fetch(`${through.url}/api/v1/worker/tasks/${task.id}/artifacts/${name}`, {
      method: "PUT",
      headers: { authorization: `Bearer ${credential}`, [LEASE_HEADER]: r.body.leaseToken, "content-type": "application/octet-stream" },
      body,
    });
  const download = (through: TestServer, name: string, headers: Record<string, string> = {}) =>
    fetch(`${through.url}/api/v1/orgs/${p.orgId}/tasks/${task.id}/artifacts/${name}`, { headers: { authorization: `Bearer ${p.token}`, ...headers } });
  return { orgId: p.orgId, taskId: task.id, upload, download };
}

/** Every byte value, in an order that differs from chunk to chunk. */
function binary(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 7 + (i >>> 12)) & 255;
  return bytes;
}

/** The bytes as a request body in pieces of `piece` bytes, with no Content-Length (chunked). */
function streamOf(bytes: Uint8Array, piece = 64 * 1024): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) return controller.close();
      controller.enqueue(bytes.slice(at, (at += piece)));
    },
  });
}

const bodiesOf = (taskId: string) => a.core.store.read(all<{ id: string; stored: number }>("SELECT id, stored FROM artifact_bodies WHERE task_id = ?", taskId));
const chunkCount = async (bodyIds: string[]) =>
  (await a.core.store.read(get<{ n: number }>("SELECT CAST(count(*) AS INTEGER) AS n FROM artifact_chunks WHERE body_id IN (SELECT value FROM json_each(?))", JSON.stringify(bodyIds))))!.n;

test("uploaded through A, downloaded through B byte for byte: several chunks, every byte value", async () => {
  const { taskId, upload, download } = await claimedTask();
  const bytes = binary(3 * CHUNK_BYTES + 1234);
  const r = await upload(a, "screen.bin", bytes);
  expect(r.status).toBe(201);
  expect(await r.json()).toMatchObject({ name: "screen.bin", size: bytes.length });

  const bodies = await bodiesOf(taskId);
  expect(bodies).toEqual([{ id: expect.any(String), stored: 1 }]);
  expect(await chunkCount([bodies[0]!.id])).toBe(4);
  // Nothing of it is on A's disk: B could not have read it there.
  expect(existsSync(join(a.dataDir, "artifacts", taskId, "screen.bin"))).toBe(false);

  const got = await download(b, "screen.bin");
  expect(got.status).toBe(200);
  expect(got.headers.get("content-type")).toBe("application/octet-stream");
  // Bun 1.4.5 drops the Content-Length of a streamed response and sends it chunked
  // (oven-sh/bun#10507); a one-chunk body goes out whole, with it (test/tasks/artifacts.test.ts).
  expect([String(bytes.length), null]).toContain(got.headers.get("content-length"));
  expect(got.headers.get("content-disposition")).toBe('attachment; filename="screen.bin"');
  expect(got.headers.get("etag")).toBe(`"${sha256(bytes)}"`);
  const received = new Uint8Array(await got.arrayBuffer());
  expect(received.length).toBe(bytes.length);
  expect(Buffer.compare(received, bytes)).toBe(0);
  expect(new Set(received).size).toBe(256);

  const cached = await download(b, "screen.bin", { "if-none-match": `"${sha256(bytes)}"` });
  expect(cached.status).toBe(304);
});

test("replaced through B (a streamed upload), A serves the new body and the old one's chunks are gone", async () => {
  const { taskId, upload, download } = await claimedTask();
  expect((await upload(a, "report.bin", binary(2 * CHUNK_BYTES))).status).toBe(201);
  const [first] = await bodiesOf(taskId);

  const second = binary(CHUNK_BYTES * 2 + 17).reverse();
  expect((await upload(b, "report.bin", streamOf(second))).status).toBe(201);
  const got = await download(a, "report.bin");
  expect(Buffer.compare(new Uint8Array(await got.arrayBuffer()), second)).toBe(0);

  const bodies = await bodiesOf(taskId);
  expect(bodies.map((x) => x.id)).not.toContain(first!.id);
  expect(bodies).toEqual([{ id: expect.any(String), stored: 1 }]);
  expect(await chunkCount([first!.id])).toBe(0);
  expect(await chunkCount([bodies[0]!.id])).toBe(3);
});

test("an empty artifact and one of exactly the limit", async () => {
  const { upload, download } = await claimedTask();
  expect((await upload(a, "empty.txt", new Uint8Array(0))).status).toBe(201);
  const empty = await download(b, "empty.txt");
  expect(empty.status).toBe(200);
  expect(empty.headers.get("content-length")).toBe("0");
  expect(await empty.text()).toBe("");

  const full = binary(LIMIT);
  expect((await upload(a, "full.bin", full)).status).toBe(201);
  expect(Buffer.compare(new Uint8Array(await (await download(b, "full.bin")).arrayBuffer()), full)).toBe(0);
});

test("past the limit: 413, whether declared or found while streaming, and nothing is left in the database", async () => {
  const { taskId, upload, download } = await claimedTask();
  const tooBig = binary(LIMIT + 1);
  for (const body of [tooBig, streamOf(tooBig)]) {
    const r = await upload(a, "big.bin", body);
    expect(r.status).toBe(413);
    expect(((await r.json()) as { error: { code: string } }).error.code).toBe("payload_too_large");
  }
  // The streamed one wrote its first chunks before the limit was passed: they are gone.
  expect(await bodiesOf(taskId)).toEqual([]);
  expect(await a.core.store.read(all("SELECT name FROM artifacts WHERE task_id = ?", taskId))).toEqual([]);
  expect((await download(b, "big.bin")).status).toBe(404);
});

test("deleting a task removes its bodies and their chunks", async () => {
  const { taskId, upload } = await claimedTask();
  expect((await upload(a, "one.bin", binary(CHUNK_BYTES + 1))).status).toBe(201);
  expect((await upload(b, "two.bin", binary(10))).status).toBe(201);
  const ids = (await bodiesOf(taskId)).map((x) => x.id);
  expect(ids).toHaveLength(2);
  expect(await chunkCount(ids)).toBe(3);

  await a.core.store.write(run("DELETE FROM tasks WHERE id = ?", taskId));
  expect(await bodiesOf(taskId)).toEqual([]);
  expect(await chunkCount(ids)).toBe(0);
});

test("an upload that died with its server is removed by a later upload's write, a day on", async () => {
  const { taskId, upload } = await claimedTask();
  // What a server killed mid-upload leaves: a body never stored, with a chunk.
  const dayAndMinuteAgo = Date.now() - 24 * 60 * 60 * 1000 - 60_000;
  await a.core.store.write(run("INSERT INTO artifact_bodies (id, task_id, stored, created_at) VALUES ('abandoned', ?, 0, ?)", taskId, dayAndMinuteAgo));
  await a.core.store.write(run("INSERT INTO artifact_chunks (body_id, n, data) VALUES ('abandoned', 0, ?)", new Uint8Array(10)));
  // One still being uploaded somewhere is left alone.
  await a.core.store.write(run("INSERT INTO artifact_bodies (id, task_id, stored, created_at) VALUES ('in-progress', ?, 0, ?)", taskId, Date.now()));

  expect((await upload(b, "later.txt", new TextEncoder().encode("later"))).status).toBe(201);
  const ids = (await bodiesOf(taskId)).map((x) => x.id);
  expect(ids).not.toContain("abandoned");
  expect(ids).toContain("in-progress");
  expect(await chunkCount(["abandoned"])).toBe(0);
});

test("when the write that records the artifact fails, the chunks written before it are dropped", async () => {
  const { orgId, taskId } = await claimedTask();
  // The third write fails: two full chunks went before it, each in its own write.
  let writes = 0;
  const store = new Proxy(a.core.store, {
    get(target, key) {
      if (key === "write") return <T>(program: Q<T>) => (++writes === 3 ? Promise.reject(new Error("the database went away")) : target.write(program));
      const value = Reflect.get(target, key);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const failing = storeArtifact({ ...a.core, store }, orgId, taskId, "lost.bin", binary(2 * CHUNK_BYTES + 5), 1);
  await expect(failing).rejects.toThrow("the database went away");
  expect(writes).toBe(4);
  expect(await bodiesOf(taskId)).toEqual([]);
  expect(await a.core.store.read(all("SELECT name FROM artifacts WHERE task_id = ?", taskId))).toEqual([]);
});
