// WAL checkpoints on a thread of their own. By default SQLite checkpoints inside the commit that
// crosses 1000 WAL pages, i.e. inside some request, which then pays for copying the pages and an
// fsync of the database file (milliseconds: the p99 of every write route). While the thread runs,
// the server turns that off on its connection and the thread, with its own connection, runs
// PASSIVE checkpoints (they never block writers) every `intervalMs`, and a RESTART one (a pause of
// a few ms for writers) when the WAL has grown past RESTART_FRAMES. If the thread fails, the main
// connection goes back to checkpointing itself, so the WAL can never grow without bound, until the
// thread's checkpoints succeed again (a full disk was freed).
//
// The thread runs while the server writes: it starts at the first write the server's connection
// makes (seen once a second through SQLite's total_changes()) and stops after IDLE_MS without one,
// when it has long caught up with the log. A thread is a JavaScript VM of its own, about 5 MiB,
// which an idle server does not need to hold; until it starts again, the server's connection
// checkpoints as SQLite does by default.
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
/** Without a write this long, the thread stops. */
const IDLE_MS = 60_000;

export interface CheckpointerOptions {
  /** Between two rounds of the thread. */
  intervalMs?: number;
  restartFrames?: number;
  /** Between two looks at whether the server's connection has written. */
  watchMs?: number;
  /** Without a write this long, the thread stops; the next write starts it again. */
  idleMs?: number;
  /** Start the thread at once instead of at the first write. */
  now?: boolean;
  /** The thread failed: the server's connection checkpoints inline again. */
  onError?: (message: string) => void;
  /** The failure passed: the thread checkpoints again. */
  onRecovered?: () => void;
}

export interface Checkpointer {
  /** Settles when a thread has first taken the checkpoints over. */
  ready: Promise<void>;
  stop(): Promise<void>;
}

/** Background checkpoints of the database at `path`, whose main connection is `main`, while it writes. */
export function startCheckpointer(main: Database, path: string, options: CheckpointerOptions = {}): Checkpointer {
  const { watchMs = 1000, idleMs = IDLE_MS } = options;
  let started: () => void = () => {};
  const ready = new Promise<void>((resolve) => (started = resolve));
  let refusedAt = -Infinity;
  const open = (): Thread | null => {
    // A thread the system refuses (its limits) is tried again after a quiet spell's length, not at
    // every look; meanwhile the connection checkpoints inline.
    if (performance.now() - refusedAt < idleMs) return null;
    try {
      return checkpointThread(main, path, options, () => {
        started();
        // The thread the system refused before runs now: said as a failure that passed is.
        if (refusedAt === -Infinity) return;
        refusedAt = -Infinity;
        options.onRecovered?.();
      });
    } catch (err) {
      refusedAt = performance.now();
      options.onError?.(`the checkpoint thread could not start: ${String(err)}`);
      return null;
    }
  };
  const changes = main.query<{ n: number }, []>("SELECT total_changes() AS n");
  let seen = changes.get()!.n;
  let lastWrite = performance.now();
  let thread: Thread | null = options.now ? open() : null;
  const watch = setInterval(() => {
    const now = changes.get()!.n;
    if (now !== seen) {
      seen = now;
      lastWrite = performance.now();
      thread ??= open();
    } else if (thread && performance.now() - lastWrite >= idleMs) {
      void thread.stop();
      thread = null;
    }
  }, watchMs);
  watch.unref();
  return {
    ready,
    async stop() {
      clearInterval(watch);
      await thread?.stop();
      thread = null;
    },
  };
}

interface Thread {
  stop(): Promise<void>;
}

function checkpointThread(main: Database, path: string, options: CheckpointerOptions, started: () => void): Thread {
  const { intervalMs = 200, restartFrames = RESTART_FRAMES, onError = () => {}, onRecovered = () => {} } = options;
  const worker = new Worker(URL.createObjectURL(new Blob([CODE], { type: "application/javascript" })));
  // Until the worker runs, and again if it fails, the main connection checkpoints as usual.
  let delegated = false;
  let stopping = false;
  const delegate = (yes: boolean) => {
    if (yes !== delegated) main.exec(`PRAGMA wal_autocheckpoint = ${yes ? 0 : 1000}`);
    delegated = yes;
  };
  let stopped: (() => void) | null = null;
  worker.onmessage = (e: MessageEvent<{ type: string; message?: string }>) => {
    if (e.data.type === "stopped") return stopped?.();
    if (stopping) return;
    if (e.data.type === "started") {
      delegate(true);
      // The WAL file shrinks back after a burst instead of keeping its largest size.
      main.exec("PRAGMA journal_size_limit = 67108864");
      started();
    } else if (e.data.type === "error") {
      delegate(false);
      onError(e.data.message ?? "checkpointer failed");
    } else if (e.data.type === "recovered" && !delegated) {
      delegate(true);
      onRecovered();
    }
  };
  worker.onerror = (e) => {
    if (stopping) return;
    delegate(false);
    onError(String(e.message));
  };
  worker.postMessage({ type: "start", path, intervalMs, restartFrames });
  return {
    async stop() {
      // The server's connection checkpoints again from now: a thread started meanwhile takes over anew.
      stopping = true;
      delegate(false);
      await new Promise<void>((resolve) => {
        stopped = resolve;
        worker.postMessage({ type: "stop" });
        setTimeout(resolve, 2000);
      });
      worker.terminate();
    },
  };
}
