// Rows read on every request (credentials, API tokens, project policies), kept in memory. A cache
// is only as good as its invalidation, so two rules make it safe:
// - the code that writes those rows in this process calls clear() after its write;
// - any commit by another connection (the admin CLI on the same file, a restore) is seen through
//   SQLite's PRAGMA data_version, which changes when another connection has committed, and empties
//   every cache of that database before the next read.
// Misses are not cached: an unknown credential is read from the database every time, as before.
import type { Database, Statement } from "bun:sqlite";
import type { Bus } from "../server/bus";
import type { Q } from "./query";

interface Watch {
  version: Statement<{ data_version: number }, []>;
  seen: number;
  /** Looked in this event-loop turn already: the requests of one turn share one look. */
  looked: boolean;
  caches: Set<RowCache<unknown>>;
}

const watches = new WeakMap<Database, Watch>();

function watchOf(sqlite: Database): Watch {
  let w = watches.get(sqlite);
  if (!w) {
    const version = sqlite.query<{ data_version: number }, []>("PRAGMA data_version");
    watches.set(sqlite, (w = { version, seen: version.get()!.data_version, looked: false, caches: new Set() }));
  }
  return w;
}

/**
 * Empties every cache of this database when another connection has committed since the last look.
 * Once per event-loop turn: a request arriving after another process's commit is in a later turn.
 */
function checkOtherWriters(w: Watch) {
  if (w.looked) return;
  w.looked = true;
  setImmediate(() => (w.looked = false));
  const now = w.version.get()!.data_version;
  if (now === w.seen) return;
  w.seen = now;
  for (const c of w.caches) c.clear();
}

/** What a cache watches: SQLite's file (other connections' commits), and the servers' bus. */
export interface CacheSource {
  sqlite: Database | null;
  bus: Bus;
}

const FORGET = "caches.forget";
const onBus = new WeakMap<Bus, Set<RowCache<unknown>>>();

/** The caches that forget when another server says it wrote (PostgreSQL: every server on the database). */
function cachesOnBus(bus: Bus): Set<RowCache<unknown>> {
  let set = onBus.get(bus);
  if (!set) {
    const caches = (set = new Set());
    onBus.set(bus, caches);
    bus.on(FORGET, () => {
      for (const c of caches) c.clear();
    });
  }
  return set;
}

/**
 * After a write that changes cached rows (a revoked credential, a project's policy): this server's
 * caches have forgotten them already; the other servers on the database forget on the message.
 */
export function forgetEverywhere(source: CacheSource) {
  if (!source.sqlite) source.bus.publish(FORGET, {});
}

export class RowCache<V> {
  private readonly rows = new Map<string, V>();
  private readonly watch: Watch | null;
  /**
   * Counts the clears. A row read from the database while a clear happened (a revocation
   * committed meanwhile) may be the one the clear was for: `keepIfCurrent` does not keep it.
   */
  generation = 0;

  /** `max`: past this many rows the cache starts over (bounded memory whatever the callers do). */
  constructor(source: CacheSource, private readonly max = 10_000) {
    this.watch = source.sqlite ? watchOf(source.sqlite) : null;
    this.watch?.caches.add(this as RowCache<unknown>);
    if (!source.sqlite) cachesOnBus(source.bus).add(this as RowCache<unknown>);
  }

  /** The cached row, or what `load` reads (cached when not null). */
  get(key: string, load: () => V | null): V | null {
    if (this.watch) checkOtherWriters(this.watch);
    const hit = this.rows.get(key);
    if (hit !== undefined) return hit;
    const row = load();
    if (row !== null && row !== undefined) {
      if (this.rows.size >= this.max) this.rows.clear();
      this.rows.set(key, row);
    }
    return row ?? null;
  }

  /**
   * A program: the cached row, or the one `read` reads (not cached when missing). A row read while
   * a clear happened (a revocation committed while a PostgreSQL read was on its way) is used for
   * this one answer but not kept: it may be the row the clear was for.
   */
  *readThrough(key: string, read: () => Q<V | null | undefined>): Q<V | null> {
    const hit = this.get(key, () => null);
    if (hit !== null) return hit;
    const generation = this.generation;
    const row = yield* read();
    if (row === null || row === undefined) return null;
    if (generation === this.generation) this.get(key, () => row);
    return row;
  }

  clear() {
    this.rows.clear();
    this.generation++;
  }
}
