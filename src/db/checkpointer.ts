// WAL checkpoints on a thread of their own. By default SQLite checkpoints inside the commit that
// crosses 1000 WAL pages, i.e. inside some request, which then pays for copying the pages and an
// fsync of the database file (milliseconds: the p99 of every write route). The server turns that
// off on its connection and this worker, with its own connection, runs PASSIVE checkpoints
// (they never block writers) every `intervalMs`, and a RESTART one (a pause of a few ms for
// writers) when the WAL has grown past RESTART_FRAMES. If the worker fails, the main connection goes
// back to checkpointing itself, so the WAL can never grow without bound, until the worker's
// checkpoints succeed again (a full disk was freed).
import type { Database } from "bun:sqlite";

/**
 * One round of the checkpointer. Under steady writes a PASSIVE checkpoint never catches up with
 * the end of the WAL, so the log would never start over; past `restartFrames`, RESTART waits for
 * a gap between transactions, copies the few frames PASSIVE left and makes the next writer start
 * the log from the beginning.
 */
export function checkpointOnce(db: Database, restartFrames: number): "passive" | "restart" | "busy" {
  const passive = db.query<{ log: number }, []>("PRAGMA wal_checkpoint(PASSIVE)").get()!;
  if (passive.log <= restartFrames) return "passive";
  return db.query<{ busy: number }, []>("PRAGMA wal_checkpoint(RESTART)").get()!.busy ? "busy" : "restart";
}

// Inline so the compiled executable needs no extra entry point.
const CODE = `
import { Database } from "bun:sqlite";
${checkpointOnce.toString()}
let db = null;
let timer = null;
self.onmessage = (e) => {
  const m = e.data;
  if (m.type === "start") {
    try {
      db = new Database(m.path);
      db.exec("PRAGMA busy_timeout = 5000");
      let failing = false;
      timer = setInterval(() => {
        try {
          checkpointOnce(db, m.restartFrames);
          if (failing) postMessage({ type: "recovered" });
          failing = false;
        } catch (err) {
          failing = true;
          postMessage({ type: "error", message: String(err) });
        }
      }, m.intervalMs);
      postMessage({ type: "started" });
    } catch (err) {
      postMessage({ type: "error", message: String(err) });
    }
  } else if (m.type === "stop") {
    if (timer) clearInterval(timer);
    try { db?.close(); } catch {}
    postMessage({ type: "stopped" });
  }
};
`;

/** WAL frames (4 KiB pages) after which the log is started over: about 32 MiB. */
const RESTART_FRAMES = 8192;

export interface Checkpointer {
  stop(): Promise<void>;
}

/** Starts background checkpoints of the database at `path`, whose main connection is `main`. */
export function startCheckpointer(
  main: Database,
  path: string,
  intervalMs = 200,
  onError: (message: string) => void = () => {},
  restartFrames = RESTART_FRAMES,
  onRecovered: () => void = () => {},
): Checkpointer & { ready: Promise<void> } {
  const worker = new Worker(URL.createObjectURL(new Blob([CODE], { type: "application/javascript" })));
  // Until the worker runs, and again if it fails, the main connection checkpoints as usual.
  let delegated = false;
  const takeBack = (message: string) => {
    if (delegated) main.exec("PRAGMA wal_autocheckpoint = 1000");
    delegated = false;
    onError(message);
  };
  let stopped: (() => void) | null = null;
  let started: () => void = () => {};
  const ready = new Promise<void>((resolve) => (started = resolve));
  worker.onmessage = (e: MessageEvent<{ type: string; message?: string }>) => {
    if (e.data.type === "started") {
      main.exec("PRAGMA wal_autocheckpoint = 0");
      // The WAL file shrinks back after a burst instead of keeping its largest size.
      main.exec("PRAGMA journal_size_limit = 67108864");
      delegated = true;
      started();
    } else if (e.data.type === "error") takeBack(e.data.message ?? "checkpointer failed");
    else if (e.data.type === "recovered" && !delegated) {
      // The failure passed (a full disk was freed): the thread takes the checkpoints back.
      main.exec("PRAGMA wal_autocheckpoint = 0");
      delegated = true;
      onRecovered();
    }
    else if (e.data.type === "stopped") stopped?.();
  };
  worker.onerror = (e) => takeBack(String(e.message));
  worker.postMessage({ type: "start", path, intervalMs, restartFrames });
  return {
    ready,
    async stop() {
      await new Promise<void>((resolve) => {
        stopped = resolve;
        worker.postMessage({ type: "stop" });
        setTimeout(resolve, 2000);
      });
      worker.terminate();
      if (delegated) main.exec("PRAGMA wal_autocheckpoint = 1000");
      delegated = false;
    },
  };
}
