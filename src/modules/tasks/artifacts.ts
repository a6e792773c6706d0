// Artifacts (screenshots, reports): files under <dataDir>/artifacts/<taskId>/<name>, a row in the
// artifacts table and an `artifact` timeline event. The file is written first (async, to a temp
// file), then renamed and recorded in one synchronous transaction, so the row, the file and the
// ETag always agree, even when the same name is uploaded twice at once.
import { existsSync, mkdirSync, renameSync, rmSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import type { Core } from "../../server/core";
import { ApiError, insufficientStorage, invalid, isStorageFull, notFound, payloadTooLarge } from "../../server/errors";
import { iso } from "../../lib/time";
import { randomSecret } from "../../lib/tokens";
import type { ArtifactInfo } from "./record";
import { commitChange, findTask, taskById, txChangeTask, type EventActor } from "./store";
import { get, run } from "../../db/query";

export const MAX_ARTIFACT_NAME = 128;
// Letters, digits and . _ + - only, not starting with a dot or dash: no traversal, no dotfiles,
// nothing that needs quoting in a header or a URL.
const SAFE_NAME = /^[A-Za-z0-9_][A-Za-z0-9._+-]*$/;

export function isSafeArtifactName(name: string): boolean {
  return name.length > 0 && name.length <= MAX_ARTIFACT_NAME && SAFE_NAME.test(name);
}

/** Turns any file name into a safe one (for the worker's uploads of files it found). */
export function safeArtifactName(name: string): string {
  const base = name.split(/[\\/]/).pop() ?? "";
  let safe = base.replace(/[^A-Za-z0-9._+-]/g, "_").replace(/^[.-]+/, "");
  if (safe.length > MAX_ARTIFACT_NAME) {
    const dot = safe.lastIndexOf(".");
    const ext = dot > 0 && safe.length - dot <= 16 ? safe.slice(dot) : "";
    safe = safe.slice(0, MAX_ARTIFACT_NAME - ext.length) + ext;
  }
  return safe || "artifact";
}

function assertSafeName(name: string) {
  if (!isSafeArtifactName(name)) {
    throw invalid("the artifact name is not allowed", [
      { field: "name", message: `1..${MAX_ARTIFACT_NAME} of letters, digits and . _ + -, not starting with . or -` },
    ]);
  }
}

const TYPES: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  svg: "image/svg+xml",
  txt: "text/plain; charset=utf-8",
  log: "text/plain; charset=utf-8",
  md: "text/markdown; charset=utf-8",
  json: "application/json",
  html: "text/html; charset=utf-8",
  htm: "text/html; charset=utf-8",
  pdf: "application/pdf",
  diff: "text/x-diff; charset=utf-8",
  patch: "text/x-diff; charset=utf-8",
  zip: "application/zip",
};

export function contentTypeOf(name: string): string {
  const dot = name.lastIndexOf(".");
  return (dot > 0 && TYPES[name.slice(dot + 1).toLowerCase()]) || "application/octet-stream";
}

// Shown inline only where a browser cannot run script from it; HTML and SVG are downloaded.
const INLINE = /^(image\/(png|jpeg|gif|webp)|text\/plain|text\/markdown|application\/json|application\/pdf|text\/x-diff)/;

export function dispositionOf(name: string, contentType: string): string {
  return `${INLINE.test(contentType) ? "inline" : "attachment"}; filename="${name}"`;
}

export const artifactDir = (core: Core, taskId: string) => join(core.config.dataDir, "artifacts", taskId);
export const artifactPath = (core: Core, taskId: string, name: string) => join(artifactDir(core, taskId), name);

export type ArtifactBody = ReadableStream<Uint8Array> | ArrayBuffer | Uint8Array | Blob;

/**
 * Streams the body to `path`, hashing and counting; throws 413 (and leaves nothing) past `limit`.
 * Every write is awaited through a file handle (a FileSink buffers and reports a full disk later,
 * as an unhandled rejection that ended the process), then the file is fsynced and its size on disk
 * checked against the bytes received before anyone may record it.
 */
async function writeLimited(path: string, body: ArtifactBody, limit: number): Promise<{ size: number; sha256: string }> {
  const hasher = new Bun.CryptoHasher("sha256");
  const file = await open(path, "wx", 0o644);
  let size = 0;
  try {
    const put = async (bytes: Uint8Array) => {
      size += bytes.byteLength;
      if (size > limit) throw payloadTooLarge(limit);
      hasher.update(bytes);
      for (let done = 0; done < bytes.byteLength; ) done += (await file.write(bytes, done)).bytesWritten;
    };
    if (body instanceof ReadableStream) {
      for await (const chunk of body) await put(chunk);
    } else {
      const declared = body instanceof Blob ? body.size : body.byteLength;
      if (declared > limit) throw payloadTooLarge(limit);
      await put(body instanceof Blob ? new Uint8Array(await body.arrayBuffer()) : body instanceof Uint8Array ? body : new Uint8Array(body));
    }
    await file.sync();
    if ((await file.stat()).size !== size) throw insufficientStorage("the artifact could not be stored whole");
  } finally {
    await file.close();
  }
  return { size, sha256: hasher.digest("hex") };
}

export interface StoredArtifact extends ArtifactInfo {
  etag: string;
}

const UPSERT = `INSERT INTO artifacts (task_id, name, content_type, size, etag, attempt, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (task_id, name) DO UPDATE SET content_type = excluded.content_type, size = excluded.size,
    etag = excluded.etag, attempt = excluded.attempt, created_at = excluded.created_at`;
const SELECT_ONE = "SELECT content_type, size, etag, created_at FROM artifacts WHERE task_id = ? AND name = ?";

/**
 * Stores an artifact of a task (orgId null: the caller already checked access, e.g. by lease).
 * Replaces an artifact of the same name. 400 for a bad name, 404 for an unknown task, 413 past
 * core.config.artifactLimitBytes.
 */
export async function storeArtifact(
  core: Core,
  orgId: string | null,
  taskId: string,
  name: string,
  body: ArtifactBody,
  attempt: number,
  actor: EventActor | null = null,
): Promise<StoredArtifact> {
  assertSafeName(name);
  const task = await core.store.read(taskById(core, taskId));
  if (!task || (orgId !== null && task.org_id !== orgId)) throw notFound("task");
  const dir = artifactDir(core, taskId);
  const tmp = join(dir, `.upload-${randomSecret(16)}`);
  let written: { size: number; sha256: string };
  try {
    mkdirSync(dir, { recursive: true });
    written = await writeLimited(tmp, body, core.config.artifactLimitBytes);
  } catch (err) {
    rmSync(tmp, { force: true });
    if (isStorageFull(err) || (err instanceof ApiError && err.status === 507)) {
      core.log.error("a write failed: the disk is full", { cause: String((err as { code?: string }).code ?? "ENOSPC"), path: "artifact upload" });
      throw err instanceof ApiError ? err : insufficientStorage();
    }
    if (err instanceof ApiError) throw err;
    throw new ApiError(400, "validation_failed", "the artifact body could not be read");
  }
  const contentType = contentTypeOf(name);
  const createdAt = iso();
  const final = join(dir, name);
  // The file of the same name that this upload replaces, kept until the row commits: when the
  // commit fails (a full disk again), it goes back, so the row and the file still agree.
  const previous = join(dir, `.previous-${randomSecret(16)}`);
  let replaced = false;
  try {
    await commitChange(
      core,
      txChangeTask(core, orgId, taskId, function* () {
        yield* run(UPSERT, taskId, name, contentType, written.size, written.sha256, attempt, createdAt);
        if (existsSync(final)) {
          renameSync(final, previous);
          replaced = true;
        }
        renameSync(tmp, final);
        return { events: [{ type: "artifact", actor, data: { name, contentType, size: written.size }, attempt }], touch: true };
      }),
    );
  } catch (err) {
    if (existsSync(final) && !existsSync(tmp)) rmSync(final, { force: true });
    if (replaced) renameSync(previous, final);
    throw err;
  } finally {
    rmSync(tmp, { force: true });
    rmSync(previous, { force: true });
  }
  return { name, contentType, size: written.size, createdAt, etag: written.sha256 };
}

/** What a download needs: the row and the file (null when there is no such artifact). */
export function* findArtifact(core: Core, orgId: string, taskId: string, name: string) {
  assertSafeName(name);
  if (!(yield* findTask(core, orgId, taskId))) throw notFound("task");
  const row = yield* get<{ content_type: string; size: number; etag: string; created_at: string }>(SELECT_ONE, taskId, name);
  if (!row) throw notFound("artifact");
  return { name, contentType: row.content_type, size: row.size, etag: row.etag, createdAt: row.created_at, path: artifactPath(core, taskId, name) };
}
