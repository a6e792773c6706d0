// The PostgreSQL store: runs the same database programs (db/query.ts) as SQLite, on Bun's SQL
// client. The programs' SQL is SQLite's portable subset; this file makes it PostgreSQL's:
// `?` placeholders become `$1..$n`, `json_each(?)` becomes json_array_elements_text, booleans are
// bound as 1 and 0, and results come back as SQLite gives them (int8 and numeric as numbers,
// booleans as 1 and 0).
import { AsyncLocalStorage } from "node:async_hooks";
import type { SQL } from "bun";
import { drizzle, type SqliteRemoteDatabase } from "drizzle-orm/sqlite-proxy";
import { DrizzleQueryError } from "drizzle-orm/errors";
import { driveAsync, type Op, type Q } from "./query";
import * as schema from "./schema";
import { ormResult, type Store } from "./store";

// The statements that frame a transaction's work are tagged templates, not unsafe(): Bun sends a
// query given to unsafe() without parameters by the simple protocol, alone, once every earlier
// one has answered, while a tagged one goes by the extended protocol and is pipelined with its
// neighbours (a savepoint, a statement and its release: one round trip).
type Statement = (sql: SQL) => Promise<unknown>;

/**
 * Every write transaction takes this lock first (the first 8 bytes of sha256("ao writers")), so
 * writers run one at a time across every server on the database, as SQLite's IMMEDIATE
 * transactions do. The services read, decide and write (is the task still queued? is the name
 * free?) and rely on no other writer coming in between; finer locks can come later, service by
 * service.
 */
const LOCK_WRITERS: Statement = (sql) => sql`SELECT pg_advisory_xact_lock(7981027316222869001)`;

/**
 * A write that fails inside a write transaction is rolled back alone, as on SQLite, so a program
 * may catch its error (a unique violation it expected) and go on. PostgreSQL otherwise aborts the
 * whole transaction at the first error. Plain SELECTs go without (their failures are bugs, not
 * answers): after one, the transaction only rolls back.
 */
const SAVEPOINT: Statement = (sql) => sql`SAVEPOINT ao_statement`;
const RELEASE: Statement = (sql) => sql`RELEASE SAVEPOINT ao_statement`;
const ROLLBACK_TO: Statement = (sql) => sql`ROLLBACK TO SAVEPOINT ao_statement`;

/** Each program of a writeEach runs under this savepoint (the statements' own nest inside it). */
const SAVEPOINT_WRITE: Statement = (sql) => sql`SAVEPOINT ao_write`;
const RELEASE_WRITE: Statement = (sql) => sql`RELEASE SAVEPOINT ao_write`;
const ROLLBACK_TO_WRITE: Statement = (sql) => sql`ROLLBACK TO SAVEPOINT ao_write`;

/** How long a closing store (and the bus) waits for the queries under way, in seconds. */
export const CLOSE_WAIT_S = 5;

/** What one program of a writeEach came to: its value, or the error it threw (its writes undone). */
export type Outcome<T> = { value: T } | { error: unknown };

/** The result types that SQLite gives as numbers: int8 (count(*), sum), numeric (avg), bool. */
const INT8 = 20;
const NUMERIC = 1700;
const BOOL = 16;

interface Translated {
  text: string;
  /** Not a plain SELECT: inside a write transaction it runs under a savepoint. */
  writes: boolean;
}

/** Translations by SQL text; drizzle's `inArray` makes one text per list length, hence a bound. */
const translations = new Map<string, Translated>();
const MAX_TRANSLATIONS = 5000;
const JSON_EACH = /json_each\(\s*\?\s*\)/iy;
/** Drizzle's SQLite dialect names the conflict target's columns with their table, which PostgreSQL refuses. */
const CONFLICT_TARGET = /on conflict \(((?:\s*"(?:[^"]|"")*"\."(?:[^"]|"")*"\s*,?)+)\)/iy;
const TABLE_QUALIFIER = /"(?:[^"]|"")*"\./g;
const IDENTIFIER_CHAR = /[A-Za-z0-9_$]/;

/**
 * SQLite's SQL as PostgreSQL's: numbers the `?` placeholders, rewrites `json_each(?)` and drops the
 * table from drizzle's `on conflict ("table"."column")`, outside string literals, quoted
 * identifiers and comments.
 */
export function toPostgres(sql: string): string {
  let out = "";
  let n = 0;
  let i = 0;
  let m: RegExpExecArray | null;
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      const end = closingQuote(sql, i);
      out += sql.slice(i, end);
      i = end;
    } else if (c === "-" && sql[i + 1] === "-") {
      const end = sql.indexOf("\n", i);
      const stop = end < 0 ? sql.length : end;
      out += sql.slice(i, stop);
      i = stop;
    } else if (c === "/" && sql[i + 1] === "*") {
      const end = sql.indexOf("*/", i + 2);
      const stop = end < 0 ? sql.length : end + 2;
      out += sql.slice(i, stop);
      i = stop;
    } else if (c === "?") {
      out += `$${++n}`;
      i++;
    } else if ((c === "j" || c === "J") && (i === 0 || !IDENTIFIER_CHAR.test(sql[i - 1]!)) && (m = matchAt(JSON_EACH, sql, i))) {
      // A JSON array of values as rows with a `value` column, like SQLite's json_each.
      out += `json_array_elements_text(CAST($${++n} AS text)::json)`;
      i += m[0].length;
    } else if ((c === "o" || c === "O") && (i === 0 || !IDENTIFIER_CHAR.test(sql[i - 1]!)) && (m = matchAt(CONFLICT_TARGET, sql, i))) {
      out += `on conflict (${m[1]!.replace(TABLE_QUALIFIER, "")})`;
      i += m[0].length;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** The match of a sticky regular expression at `at`, or null. */
function matchAt(re: RegExp, s: string, at: number): RegExpExecArray | null {
  re.lastIndex = at;
  return re.exec(s);
}

/** The index after the quote that closes the one at `start` (a doubled quote is an escape). */
function closingQuote(sql: string, start: number): number {
  const q = sql[start]!;
  let from = start + 1;
  for (;;) {
    const k = sql.indexOf(q, from);
    if (k < 0) return sql.length;
    if (sql[k + 1] !== q) return k + 1;
    from = k + 2;
  }
}

function translate(sql: string): Translated {
  let t = translations.get(sql);
  if (!t) {
    if (translations.size >= MAX_TRANSLATIONS) translations.clear();
    t = { text: toPostgres(sql), writes: !/^[\s(]*select\b/i.test(sql) };
    translations.set(sql, t);
  }
  return t;
}

/** The connection a program runs on, for the drizzle queries it yields (see pgDrizzle). */
interface Connection {
  sql: SQL;
  /** Inside a write transaction: statements that write get a savepoint. */
  inWrite: boolean;
}

type Rows = Record<string, unknown>[] & SQL.ResultMetadata;
type Values = unknown[][] & SQL.ResultMetadata;

function number(value: bigint | string): number {
  const n = Number(value);
  if (Number.isInteger(n) && !Number.isSafeInteger(n)) throw new RangeError(`the database returned ${value}, beyond JavaScript's safe integers`);
  return n;
}

/** Makes a result what SQLite would have returned, in place. */
function portable<R extends Rows | Values>(result: R, asValues: boolean): R {
  const columns = result.columns;
  if (!columns) return result;
  let convert: number[] | undefined;
  for (let i = 0; i < columns.length; i++) {
    const type = columns[i]!.type;
    if (type === INT8 || type === NUMERIC || type === BOOL) (convert ??= []).push(i);
  }
  if (!convert) return result;
  for (const row of result as unknown as Record<string | number, unknown>[]) {
    for (const i of convert) {
      const key = asValues ? i : columns[i]!.name;
      const v = row[key];
      if (typeof v === "bigint" || typeof v === "string") row[key] = number(v);
      else if (typeof v === "boolean") row[key] = v ? 1 : 0;
    }
  }
  return result;
}

function bindable(params: readonly unknown[]): unknown[] {
  return params.map((p) => (typeof p === "boolean" ? (p ? 1 : 0) : p));
}

/** Runs one statement; inside a write transaction, a write that fails leaves the transaction usable. */
async function send(conn: Connection, sql: string, params: readonly unknown[], asValues: boolean): Promise<Rows | Values> {
  const t = translate(sql);
  const query = () => {
    const q = conn.sql.unsafe(t.text, bindable(params));
    return (asValues ? q.values() : q) as Promise<Rows | Values>;
  };
  if (!conn.inWrite || !t.writes) return portable(await query(), asValues);
  // The savepoint and its release go out with the statement, in one round trip. If the statement
  // fails, the transaction is aborted and the release queued behind it fails too ("current
  // transaction is aborted"): the savepoint is still there, and rolling back to it makes the
  // transaction usable again. The program sees the statement's own error.
  const [savepoint, result, release] = await Promise.allSettled([SAVEPOINT(conn.sql), query(), RELEASE(conn.sql)]);
  if (result.status === "rejected") {
    // Released too, so that no savepoint of this name is left for a later rollback to find.
    await Promise.all([ROLLBACK_TO(conn.sql), RELEASE(conn.sql)]);
    throw result.reason;
  }
  // Only a broken connection fails these once the statement succeeded: the transaction is lost.
  if (savepoint.status === "rejected") throw savepoint.reason;
  if (release.status === "rejected") throw release.reason;
  return portable(result.value, asValues);
}

export type PgDrizzle = SqliteRemoteDatabase<typeof schema>;

/**
 * Drizzle's SQLite query builder for the PostgreSQL store (core.db on PostgreSQL): the services
 * build their queries with it as on SQLite, and each query runs on the connection of the program
 * that yields it (its transaction, for a write).
 */
export function pgDrizzle(store: PgStore): PgDrizzle {
  return drizzle(
    async (sql, params, method) => {
      const conn = store.connection.getStore();
      if (!conn) throw new Error("a drizzle query ran outside a database program: yield* rows/row/exec(query), and run the program with core.store");
      const result = (await send(conn, sql, params, true)) as Values;
      if (method === "run") return { rows: [], changes: result.count };
      // Drizzle maps rows given as arrays of values, in the order of its selected fields; for
      // `get` it takes `rows` as the one row (or undefined), whatever its type says.
      return { rows: (method === "get" ? result[0] : result) as unknown[] };
    },
    { schema },
  );
}

export interface PgStoreOptions {
  url: string;
  /** Connections in the pool. */
  max?: number;
}

export class PgStore implements Store {
  readonly dialect = "postgres" as const;
  readonly sql: SQL;
  /** The connection of the program whose drizzle query is running. */
  readonly connection = new AsyncLocalStorage<Connection>();
  private readonly pool: Connection;
  /**
   * This process's writers queue here before they take a connection: one at a time waits for the
   * lock, and the others leave the pool to the readers.
   */
  private writers: Promise<unknown> = Promise.resolve();

  constructor(options: PgStoreOptions) {
    this.sql = new Bun.SQL({ url: options.url, bigint: true, max: options.max ?? 20 });
    this.pool = { sql: this.sql, inWrite: false };
  }

  read<T>(program: Q<T>): Promise<T> {
    return driveAsync(program, (op) => this.exec(this.pool, op));
  }

  write<T>(program: Q<T>): Promise<T> {
    return this.transaction(async (conn) => {
      await LOCK_WRITERS(conn.sql);
      return driveAsync(program, (op) => this.exec(conn, op));
    });
  }

  /**
   * Runs several programs in ONE write transaction (a group commit), each under its own savepoint:
   * a program that throws is rolled back alone and its outcome is its error; the others commit
   * together. Rejects when the transaction itself fails (the commit, say): then none happened.
   * A lone program runs as write() does, without a savepoint.
   */
  writeEach<T>(programs: Q<T>[]): Promise<Outcome<T>[]> {
    if (programs.length === 1) return this.write(programs[0]!).then((value) => [{ value }], (error: unknown) => [{ error }]);
    return this.transaction(async (conn) => {
      const outcomes: Outcome<T>[] = [];
      // What ends the previous program's savepoint goes out with the next one's (one round trip);
      // the first savepoint goes with the lock.
      let before = [LOCK_WRITERS];
      for (const program of programs) {
        await Promise.all([...before, SAVEPOINT_WRITE].map((statement) => statement(conn.sql)));
        try {
          outcomes.push({ value: await driveAsync(program, (op) => this.exec(conn, op)) });
          before = [RELEASE_WRITE];
        } catch (error) {
          outcomes.push({ error });
          before = [ROLLBACK_TO_WRITE, RELEASE_WRITE];
        }
      }
      // The commit releases the last savepoint; a refused last program is undone first.
      if (before.length > 1) await ROLLBACK_TO_WRITE(conn.sql);
      return outcomes;
    });
  }

  /**
   * A write transaction on a connection of its own. This process's writers take their turns
   * here, one at a time, before they take a connection (see `writers`).
   */
  private transaction<T>(body: (conn: Connection) => Promise<T>): Promise<T> {
    const turn = this.writers.then(() => this.sql.begin((tx) => body({ sql: tx, inWrite: true })));
    this.writers = turn.catch(() => {});
    return turn as Promise<T>;
  }

  sync<T>(_program: Q<T>): T {
    throw new Error("store.sync runs a program synchronously, which only SQLite can: on PostgreSQL, await store.read(program)");
  }

  syncWrite<T>(_program: Q<T>): T {
    throw new Error("store.syncWrite runs a program synchronously, which only SQLite can: on PostgreSQL, await store.write(program)");
  }

  /** Calls onPayload with each notification on the channel (every server on the database), until unlisten. */
  async listen(channel: string, onPayload: (payload: string) => void): Promise<{ unlisten(): Promise<void> }> {
    return this.sql.listen(channel, (payload) => {
      // Bun reports a throwing listener as an uncaught exception, which would stop the server.
      try {
        onPayload(payload);
      } catch (error) {
        console.error(`listener of ${channel} failed:`, error);
      }
    });
  }

  /** Notifies every listener of the channel, on every server on the database. */
  notify(channel: string, payload: string): Promise<void> {
    return this.sql.notify(channel, payload);
  }

  /**
   * Waits up to CLOSE_WAIT_S for the queries under way, then ends them: a query that does not end
   * (waiting on a lock held elsewhere, a database that stopped answering) must not hold a server's
   * stop, and its SIGTERM, for good.
   */
  async close() {
    await this.sql.close({ timeout: CLOSE_WAIT_S });
  }

  private async exec(conn: Connection, op: Op): Promise<unknown> {
    if (op.orm) {
      const orm = op.orm;
      try {
        return ormResult(op.method, await this.connection.run(conn, () => orm[op.method]()));
      } catch (error) {
        // Drizzle wraps the driver's error; SQLite's driver throws it bare, and the programs test
        // it (isUniqueViolation), so they get it bare here too.
        throw error instanceof DrizzleQueryError && error.cause ? error.cause : error;
      }
    }
    const result = (await send(conn, op.sql, op.params, false)) as Rows;
    if (op.method === "all") return result;
    if (op.method === "get") return result[0];
    return { changes: result.count };
  }
}
