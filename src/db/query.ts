// Queries as values. A service that reads or writes the database is a generator: it yields each
// query and receives its result, so one service runs on both stores:
// - SQLite runs the generator to its end synchronously (bun:sqlite is synchronous): a transaction
//   stays one synchronous block that nothing else interleaves with, and the group commit of
//   tasks/batch.ts keeps working;
// - PostgreSQL awaits each query on the connection of the generator's transaction.
//
//   function* findOrg(core: Core, id: string): Q<OrgRow | undefined> {
//     return yield* get<OrgRow>("SELECT * FROM orgs WHERE id = ?", id);
//   }
//   const org = await core.store.read(findOrg(core, id));
//
// SQL is written once, in the subset both dialects share: `?` placeholders (numbered for
// PostgreSQL by the runner), no booleans as parameters (1 and 0), `CAST(count(*) AS INTEGER)`
// where a count is compared, `json_each(?)` over a JSON array of ids (rewritten for PostgreSQL).
// Drizzle's query builder (core.db) works too: yield* rows(core.db.select()...).

export type Param = string | number | null | Uint8Array;
export type Method = "all" | "get" | "run";

/** A drizzle query builder (select, insert, update, delete; with or without returning()). */
export interface OrmQuery {
  all(): unknown;
  get(): unknown;
  run(): unknown;
  toSQL(): { sql: string; params: unknown[] };
}

export type Op = { sql: string; params: Param[]; method: Method; orm?: undefined } | { orm: OrmQuery; method: Method; sql?: undefined };

/** A database program returning T; run it with core.store.read / write / sync. */
export type Q<T> = Generator<Op, T, unknown>;

export interface RunResult {
  changes: number;
}

/** Every row of a query. */
export function* all<T>(sql: string, ...params: Param[]): Q<T[]> {
  return (yield { sql, params, method: "all" }) as T[];
}

/** The first row of a query, or undefined. */
export function* get<T>(sql: string, ...params: Param[]): Q<T | undefined> {
  return (yield { sql, params, method: "get" }) as T | undefined;
}

/** A statement that writes; its result is the number of rows it changed. */
export function* run(sql: string, ...params: Param[]): Q<RunResult> {
  return (yield { sql, params, method: "run" }) as RunResult;
}

/** Every row of a drizzle query (a select, or a write with returning()). */
export function* rows<T>(query: { all(): T[] | Promise<T[]> } & Omit<OrmQuery, "all">): Q<T[]> {
  return (yield { orm: query as OrmQuery, method: "all" }) as T[];
}

/** The first row of a drizzle query, or undefined. */
export function* row<T>(query: { get(): T | undefined | Promise<T | undefined> } & Omit<OrmQuery, "get">): Q<T | undefined> {
  return (yield { orm: query as OrmQuery, method: "get" }) as T | undefined;
}

/** A drizzle write without returning(). */
export function* exec(query: OrmQuery): Q<RunResult> {
  return (yield { orm: query, method: "run" }) as RunResult;
}

/** A value as a program (for a branch that needs no query). */
// eslint-disable-next-line require-yield
export function* pure<T>(value: T): Q<T> {
  return value;
}

/** A unique or primary-key constraint refused the write, on either store. */
export function isUniqueViolation(error: unknown): boolean {
  const e = error as { code?: unknown; errno?: unknown } | null;
  if (!e) return false;
  if (typeof e.code === "string" && (e.code.startsWith("SQLITE_CONSTRAINT_UNIQUE") || e.code.startsWith("SQLITE_CONSTRAINT_PRIMARYKEY"))) return true;
  return e.errno === "23505" || e.code === "23505";
}

/** A foreign-key constraint refused the write, on either store. */
export function isForeignKeyViolation(error: unknown): boolean {
  const e = error as { code?: unknown; errno?: unknown } | null;
  if (!e) return false;
  if (typeof e.code === "string" && e.code.startsWith("SQLITE_CONSTRAINT_FOREIGNKEY")) return true;
  return e.errno === "23503" || e.code === "23503";
}

/**
 * Runs a program synchronously with `exec` answering each query (SQLite's runner). A query that
 * throws is thrown into the program, which may catch it (a unique violation it expects).
 */
export function drive<T>(program: Q<T>, exec: (op: Op) => unknown): T {
  let step = program.next();
  while (!step.done) {
    let result: unknown;
    try {
      result = exec(step.value);
    } catch (error) {
      step = program.throw(error);
      continue;
    }
    step = program.next(result);
  }
  return step.value;
}

/** Runs a program with an asynchronous `exec` (PostgreSQL's runner). */
export async function driveAsync<T>(program: Q<T>, exec: (op: Op) => Promise<unknown>): Promise<T> {
  let step = program.next();
  while (!step.done) {
    let result: unknown;
    try {
      result = await exec(step.value);
    } catch (error) {
      step = program.throw(error);
      continue;
    }
    step = program.next(result);
  }
  return step.value;
}
