// Where an artifact's bytes are kept. On SQLite (one server, one disk): a file under
// <dataDir>/artifacts/<taskId>/<name>. On PostgreSQL, where every server must serve what any of
// them stored: chunks in the database (artifact_bodies, artifact_chunks). Both read the upload as
// a stream, hash and count it, and refuse it past the limit while reading, holding no more than a
// chunk of it in memory.
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import type { Core } from "../../server/core";
import { ApiError, insufficientStorage, isStorageFull, payloadTooLarge } from "../../server/errors";
import { randomSecret } from "../../lib/tokens";
import { get, run, type Q } from "../../db/query";

export type ArtifactBody = ReadableStream<Uint8Array> | ArrayBuffer | Uint8Array | Blob;

/** A body received and set aside: it becomes the artifact's in the write that records the artifact. */
export interface PendingBody {
  size: number;
  sha256: string;
  /** Inside that write: puts the body in place of the artifact's current one; the row's body_id. */
  place(): Q<string | null>;
  /** After that write failed: drops the body (and puts back the one place() replaced). */
  undo(): Promise<void>;
  /** After the write, whatever came of it: removes what is left aside. */
  done(): void;
}

const artifactDir = (core: Core, taskId: string) => join(core.config.dataDir, "artifacts", taskId);
const artifactPath = (core: Core, taskId: string, name: string) => join(artifactDir(core, taskId), name);

/** Receives the body of taskId/name where this server keeps artifacts; 413 past `limit`, and nothing stays. */
export function receiveBody(core: Core, taskId: string, name: string, body: ArtifactBody, limit: number): Promise<PendingBody> {
  return core.store.dialect === "postgres" ? receiveChunks(core, taskId, name, body, limit) : receiveFile(core, taskId, name, body, limit);
}

/** The bytes of a body, as a file or as a stream of its chunks; null when they are gone. */
export async function openBody(core: Core, taskId: string, name: string, bodyId: string | null, size: number): Promise<Blob | ReadableStream<Uint8Array> | null> {
  if (bodyId !== null) return chunkStream(core, bodyId, size);
  const file = Bun.file(artifactPath(core, taskId, name));
  return (await file.exists()) ? file : null;
}

/** The body's bytes in pieces as they come; 413 before the piece that passes the limit, 400 when it cannot be read. */
async function* piecesOf(body: ArtifactBody, limit: number): AsyncGenerator<Uint8Array> {
  if (!(body instanceof ReadableStream)) {
    const declared = body instanceof Blob ? body.size : body.byteLength;
    if (declared > limit) throw payloadTooLarge(limit);
    yield body instanceof Blob ? new Uint8Array(await body.arrayBuffer()) : body instanceof Uint8Array ? body : new Uint8Array(body);
    return;
  }
  let size = 0;
  try {
    for await (const piece of body) {
      size += piece.byteLength;
      if (size > limit) throw payloadTooLarge(limit);
      yield piece;
    }
  } catch (err) {
    // Only the stream's own failures land here (a consumer's error ends this generator by return).
    if (err instanceof ApiError) throw err;
    throw new ApiError(400, "validation_failed", "the artifact body could not be read");
  }
}

// ---- Files (SQLite) ----

/**
 * Streams the body to a temporary file beside the artifact, to be renamed into place by the write
 * that records it, so the row, the file and the ETag always agree, even when the same name is
 * uploaded twice at once. Every write is awaited through a file handle (a FileSink buffers and
 * reports a full disk later, as an unhandled rejection that ended the process), then the file is
 * fsynced and its size on disk checked against the bytes received before anyone may record it.
 */
async function receiveFile(core: Core, taskId: string, name: string, body: ArtifactBody, limit: number): Promise<PendingBody> {
  const dir = artifactDir(core, taskId);
  const tmp = join(dir, `.upload-${randomSecret(16)}`);
  const hasher = new Bun.CryptoHasher("sha256");
  let size = 0;
  try {
    mkdirSync(dir, { recursive: true });
    const file = await open(tmp, "wx", 0o644);
    try {
      for await (const bytes of piecesOf(body, limit)) {
        size += bytes.byteLength;
        hasher.update(bytes);
        for (let done = 0; done < bytes.byteLength; ) done += (await file.write(bytes, done)).bytesWritten;
      }
      await file.sync();
      if ((await file.stat()).size !== size) throw insufficientStorage("the artifact could not be stored whole");
    } finally {
      await file.close();
    }
  } catch (err) {
    rmSync(tmp, { force: true });
    if (isStorageFull(err) || (err instanceof ApiError && err.status === 507)) {
      core.log.error("a write failed: the disk is full", { cause: String((err as { code?: string }).code ?? "ENOSPC"), path: "artifact upload" });
      throw err instanceof ApiError ? err : insufficientStorage();
    }
    if (err instanceof ApiError) throw err;
    throw new ApiError(400, "validation_failed", "the artifact body could not be read");
  }
  const final = join(dir, name);
  // The file of the same name that this upload replaces, kept until the row commits: when the
  // commit fails (a full disk again), it goes back, so the row and the file still agree.
  const previous = join(dir, `.previous-${randomSecret(16)}`);
  let replaced = false;
  return {
    size,
    sha256: hasher.digest("hex"),
    // eslint-disable-next-line require-yield
    *place() {
      if (existsSync(final)) {
        renameSync(final, previous);
        replaced = true;
      }
      renameSync(tmp, final);
      return null;
    },
    async undo() {
      if (existsSync(final) && !existsSync(tmp)) rmSync(final, { force: true });
      if (replaced) renameSync(previous, final);
    },
    done() {
      rmSync(tmp, { force: true });
      rmSync(previous, { force: true });
    },
  };
}

// ---- Chunks in the database (PostgreSQL) ----

/** Large enough that a 50 MiB artifact is 200 rows, small enough to hold one in memory per upload. */
export const CHUNK_BYTES = 256 * 1024;
/**
 * A body never stored after this long belongs to an upload that died with its server (a request
 * lasts at most connections.requestSec): the next upload's write removes it.
 */
const ABANDONED_MS = 24 * 60 * 60 * 1000;

const INSERT_BODY = "INSERT INTO artifact_bodies (id, task_id, stored, created_at) VALUES (?, ?, ?, ?)";
const MARK_STORED = "UPDATE artifact_bodies SET stored = 1 WHERE id = ? AND stored = 0";
const INSERT_CHUNK = "INSERT INTO artifact_chunks (body_id, n, data) VALUES (?, ?, ?)";
const CURRENT_BODY = "SELECT body_id FROM artifacts WHERE task_id = ? AND name = ?";
// The chunks go with their body (ON DELETE CASCADE), as bodies go with their task.
const DELETE_BODY = "DELETE FROM artifact_bodies WHERE id = ?";
const DELETE_ABANDONED = "DELETE FROM artifact_bodies WHERE stored = 0 AND created_at < ?";
const SELECT_CHUNK = "SELECT data FROM artifact_chunks WHERE body_id = ? AND n = ?";

/**
 * Writes every full chunk as it fills, each in a short write of its own (writers queue for one
 * lock across the servers: one write for the whole upload would hold it while the body trickles
 * in). The last chunk goes with the artifact's row, so an artifact of one chunk is one write.
 */
async function receiveChunks(core: Core, taskId: string, name: string, body: ArtifactBody, limit: number): Promise<PendingBody> {
  const id = randomSecret(24);
  const hasher = new Bun.CryptoHasher("sha256");
  let size = 0;
  let written = 0;
  let chunk = new Uint8Array(CHUNK_BYTES);
  let filled = 0;
  const drop = () =>
    core.store.write(run(DELETE_BODY, id)).catch((error) => {
      // It stays unstored, and the next upload's write removes it in a day.
      core.log.warn("an artifact upload's chunks could not be removed", { error: String(error) });
    });
  try {
    for await (const piece of piecesOf(body, limit)) {
      size += piece.byteLength;
      hasher.update(piece);
      for (let at = 0; at < piece.byteLength; ) {
        // A full chunk is written only once more bytes come: the last one waits for the row.
        if (filled === CHUNK_BYTES) {
          const n = written;
          const full = chunk;
          await core.store.write(
            (function* () {
              if (n === 0) yield* run(INSERT_BODY, id, taskId, 0, Date.now());
              yield* run(INSERT_CHUNK, id, n, full);
            })(),
          );
          written++;
          chunk = new Uint8Array(CHUNK_BYTES);
          filled = 0;
        }
        const take = Math.min(CHUNK_BYTES - filled, piece.byteLength - at);
        chunk.set(piece.subarray(at, at + take), filled);
        filled += take;
        at += take;
      }
    }
  } catch (err) {
    if (written > 0) await drop();
    throw err;
  }
  const last = chunk.subarray(0, filled);
  return {
    size,
    sha256: hasher.digest("hex"),
    *place() {
      if (written === 0) yield* run(INSERT_BODY, id, taskId, 1, Date.now());
      else if ((yield* run(MARK_STORED, id)).changes !== 1) throw new Error(`the chunks of artifact body ${id} are gone`);
      if (filled > 0) yield* run(INSERT_CHUNK, id, written, last);
      const current = yield* get<{ body_id: string | null }>(CURRENT_BODY, taskId, name);
      if (current?.body_id) yield* run(DELETE_BODY, current.body_id);
      yield* run(DELETE_ABANDONED, Date.now() - ABANDONED_MS);
      return id;
    },
    async undo() {
      if (written > 0) await drop();
    },
    done() {},
  };
}

/**
 * The body's chunks in order, read one at a time as the client takes them. A body replaced or
 * removed while it is read ends the stream with an error (the client sees the response cut short,
 * never a mix of two bodies).
 */
function chunkStream(core: Core, bodyId: string, size: number): ReadableStream<Uint8Array> {
  let n = 0;
  let sent = 0;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        const row = await core.store.read(get<{ data: Uint8Array }>(SELECT_CHUNK, bodyId, n));
        if (!row) {
          if (sent === size) controller.close();
          else controller.error(new Error(`artifact body ${bodyId} ended at ${sent} of ${size} bytes`));
          return;
        }
        n++;
        sent += row.data.byteLength;
        controller.enqueue(row.data);
        if (sent === size) controller.close();
      },
    },
    // Nothing is read ahead of the client.
    { highWaterMark: 0 },
  );
}
