// The store runs database programs (db/query.ts). Services never see which database is behind it.
import type { Database, Statement } from "bun:sqlite";
import { drive, type Method, type Op, type Q, type RunResult } from "./query";

export type Dialect = "sqlite" | "postgres";

export interface Store {
  readonly dialect: Dialect;
  /** Runs a program outside a transaction (reads; a single-statement write is atomic alone). */
  read<T>(program: Q<T>): Promise<T>;
  /**
   * Runs a program in one write transaction: everything it writes commits together, or nothing
   * if it throws. Writers are serialized as SQLite's IMMEDIATE transactions are, on both stores,
   * so a program may read, decide and write without another writer in between.
   */
  write<T>(program: Q<T>): Promise<T>;
  /**
   * SQLite only: runs a program now, synchronously (inside the caller's transaction if there is
   * one). For the synchronous paths that keep SQLite fast (group commit) and for callers not yet
   * moved to an async edge; throws on PostgreSQL.
   */
  sync<T>(program: Q<T>): T;
  /** SQLite only: runs a program in its own IMMEDIATE transaction, synchronously; throws on PostgreSQL. */
  syncWrite<T>(program: Q<T>): T;
  close(): Promise<void>;
}

/** Prepared statements by SQL text, made once per database (bun:sqlite's own cache keeps only 20). */
export class StatementCache {
  private readonly statements = new Map<string, Statement>();
  constructor(readonly sqlite: Database) {}

  statement(sql: string): Statement {
    let s = this.statements.get(sql);
    if (!s) this.statements.set(sql, (s = this.sqlite.prepare(sql)));
    return s;
  }

  /** Answers one query of a program. */
  exec = (op: Op): unknown => {
    if (op.orm) return ormResult(op.method, op.orm[op.method]());
    const s = this.statement(op.sql);
    if (op.method === "all") return s.all(...op.params);
    if (op.method === "get") return s.get(...op.params) ?? undefined;
    return { changes: Number(s.run(...op.params).changes) };
  };
}

/** What a program receives for a drizzle query: its rows, or for `exec` the rows it changed. */
export function ormResult(method: Method, result: unknown): unknown {
  return method === "run" ? ({ changes: Number((result as { changes?: number }).changes ?? 0) } satisfies RunResult) : result;
}

export class SqliteStore implements Store {
  readonly dialect = "sqlite" as const;
  readonly statements: StatementCache;
  private readonly inTransaction: (program: Q<unknown>) => unknown;

  constructor(readonly sqlite: Database) {
    this.statements = new StatementCache(sqlite);
    const tx = sqlite.transaction((program: Q<unknown>) => drive(program, this.statements.exec));
    this.inTransaction = (program) => tx.immediate(program);
  }

  read<T>(program: Q<T>): Promise<T> {
    try {
      return Promise.resolve(drive(program, this.statements.exec));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  write<T>(program: Q<T>): Promise<T> {
    try {
      return Promise.resolve(this.syncWrite(program));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  sync<T>(program: Q<T>): T {
    return drive(program, this.statements.exec);
  }

  /** Inside an open transaction (a group commit), a nested transaction() is a savepoint. */
  syncWrite<T>(program: Q<T>): T {
    return this.inTransaction(program) as T;
  }

  async close() {}
}
