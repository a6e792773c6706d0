// A consistent copy of a live database: `VACUUM INTO` reads one snapshot (a read transaction in
// WAL mode, so writers go on) and writes a compact new file. It runs on a thread of its own: a
// large database takes seconds, which the server's event loop must not wait for.
const CODE = `
import { Database } from "bun:sqlite";
self.onmessage = (e) => {
  const { source, target } = e.data;
  let db = null;
  try {
    db = new Database(source, { readonly: true });
    db.exec("PRAGMA busy_timeout = 5000");
    db.query("VACUUM INTO ?").run(target);
    postMessage({ ok: true });
  } catch (err) {
    postMessage({ ok: false, message: String(err && err.message || err), code: err && err.code });
  } finally {
    try { db && db.close(); } catch {}
  }
};
`;

export class SnapshotError extends Error {
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** Copies the database at `source` as it is at one moment into the new file `target`. */
export function snapshotDatabase(source: string, target: string): Promise<void> {
  const worker = new Worker(URL.createObjectURL(new Blob([CODE], { type: "application/javascript" })));
  return new Promise<void>((resolve, reject) => {
    worker.onmessage = (e: MessageEvent<{ ok: boolean; message?: string; code?: string }>) => {
      worker.terminate();
      if (e.data.ok) resolve();
      else reject(new SnapshotError(e.data.message ?? "the database snapshot failed", e.data.code));
    };
    worker.onerror = (e) => {
      worker.terminate();
      reject(new SnapshotError(String(e.message)));
    };
    worker.postMessage({ source, target });
  });
}
