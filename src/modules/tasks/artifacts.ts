// Artifacts (screenshots, reports): a row in the artifacts table, an `artifact` timeline event and
// a body, kept where artifact-bodies.ts says (a file on SQLite, chunks in the database on
// PostgreSQL). The body is received first, then put in place and recorded in one write, so the
// row, the body and the ETag always agree, even when the same name is uploaded twice at once.
import type { Core } from "../../server/core";
import { invalid, notFound } from "../../server/errors";
import { iso } from "../../lib/time";
import type { ArtifactInfo } from "./record";
import { openBody, receiveBody, type ArtifactBody } from "./artifact-bodies";
import { commitChange, findTask, taskById, txChangeTask, type EventActor } from "./store";
import { get, run, type Q } from "../../db/query";

export type { ArtifactBody } from "./artifact-bodies";

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

export interface StoredArtifact extends ArtifactInfo {
  etag: string;
}

const UPSERT = `INSERT INTO artifacts (task_id, name, content_type, size, etag, attempt, created_at, body_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (task_id, name) DO UPDATE SET content_type = excluded.content_type, size = excluded.size,
    etag = excluded.etag, attempt = excluded.attempt, created_at = excluded.created_at, body_id = excluded.body_id`;
const SELECT_ONE = "SELECT content_type, size, etag, created_at, body_id FROM artifacts WHERE task_id = ? AND name = ?";

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
  content: ArtifactBody,
  attempt: number,
  actor: EventActor | null = null,
): Promise<StoredArtifact> {
  assertSafeName(name);
  const task = await core.store.read(taskById(core, taskId));
  if (!task || (orgId !== null && task.org_id !== orgId)) throw notFound("task");
  const body = await receiveBody(core, taskId, name, content, core.config.artifactLimitBytes);
  const contentType = contentTypeOf(name);
  const createdAt = iso();
  try {
    await commitChange(
      core,
      txChangeTask(core, orgId, taskId, function* () {
        const bodyId = yield* body.place();
        yield* run(UPSERT, taskId, name, contentType, body.size, body.sha256, attempt, createdAt, bodyId);
        return { events: [{ type: "artifact", actor, data: { name, contentType, size: body.size }, attempt }], touch: true };
      }),
    );
  } catch (err) {
    await body.undo();
    throw err;
  } finally {
    body.done();
  }
  return { name, contentType, size: body.size, createdAt, attempt, etag: body.sha256 };
}

export interface FoundArtifact {
  taskId: string;
  name: string;
  contentType: string;
  size: number;
  etag: string;
  createdAt: string;
  /** Its chunks in the database, or null for a file. */
  bodyId: string | null;
}

/** What a download needs: the row and where its body is (404 when there is no such artifact). */
export function* findArtifact(core: Core, orgId: string, taskId: string, name: string): Q<FoundArtifact> {
  assertSafeName(name);
  if (!(yield* findTask(core, orgId, taskId))) throw notFound("task");
  const row = yield* get<{ content_type: string; size: number; etag: string; created_at: string; body_id: string | null }>(SELECT_ONE, taskId, name);
  if (!row) throw notFound("artifact");
  return { taskId, name, contentType: row.content_type, size: row.size, etag: row.etag, createdAt: row.created_at, bodyId: row.body_id };
}

/** The artifact's bytes and their length; 404 when its body is gone. */
export async function openArtifact(core: Core, a: FoundArtifact): Promise<{ body: Blob | ReadableStream<Uint8Array>; size: number }> {
  const body = await openBody(core, a.taskId, a.name, a.bodyId, a.size);
  if (!body) throw notFound("artifact");
  return { body, size: body instanceof Blob ? body.size : a.size };
}
