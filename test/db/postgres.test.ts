// Opening a PostgreSQL database: its migrations make the tables SQLite's migrations make, with
// the same columns, keys, indexes and foreign keys; several servers starting at once migrate once;
// a database of a newer ao is refused as SQLite refuses it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Database } from "bun:sqlite";
import { SQL } from "bun";
import { openDatabase, NewerDatabaseError, NEWER_DATABASE } from "../../src/db";
import { openPostgres, postgresMigrationState } from "../../src/db/postgres";
import { embeddedMigrations } from "../../src/db/migrations.macro";
import { freshDatabase } from "../helpers/postgres";

const PG_MIGRATIONS = embeddedMigrations("postgres");

interface Shape {
  columns: Record<string, { type: string; notNull: boolean; default: string | null }>;
  primaryKey: string[];
  /** name → "unique? columns [where]" */
  indexes: Record<string, string>;
  /** "from → table.to on delete" */
  foreignKeys: string[];
}

/** The tables SQLite's migrations make, in words both stores can be compared in. */
function sqliteShapes(sqlite: Database): Record<string, Shape> {
  const out: Record<string, Shape> = {};
  const tables = sqlite.query<{ name: string }, []>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != '__drizzle_migrations'").all();
  for (const { name } of tables) {
    const info = sqlite.query<{ name: string; type: string; notnull: number; dflt_value: string | null; pk: number }, []>(`PRAGMA table_info(${name})`).all();
    const type = (t: string) => ({ integer: "bigint", text: "text", real: "double precision", blob: "bytea" })[t.toLowerCase()] ?? t;
    const indexes: Record<string, string> = {};
    for (const ix of sqlite.query<{ name: string; unique: number; origin: string; partial: number }, []>(`PRAGMA index_list(${name})`).all()) {
      if (ix.origin === "pk") continue;
      const cols = sqlite.query<{ name: string }, []>(`PRAGMA index_info(${ix.name})`).all().map((c) => c.name);
      const sql = sqlite.query<{ sql: string | null }, [string]>("SELECT sql FROM sqlite_master WHERE name = ?").get(ix.name)?.sql ?? "";
      const where = / WHERE (.*)$/is.exec(sql)?.[1].trim();
      indexes[ix.name] = `${ix.unique ? "unique " : ""}${cols.join(",")}${where ? ` where ${where}` : ""}`;
    }
    out[name] = {
      columns: Object.fromEntries(
        info.map((c) => [c.name, { type: type(c.type), notNull: !!c.notnull || c.pk > 0, default: normalizeDefault(c.dflt_value) }]),
      ),
      primaryKey: info.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk).map((c) => c.name),
      indexes,
      foreignKeys: sqlite
        .query<{ from: string; table: string; to: string; on_delete: string }, []>(`PRAGMA foreign_key_list(${name})`)
        .all()
        .map((f) => `${f.from} → ${f.table}.${f.to} on delete ${f.on_delete.toLowerCase()}`)
        .sort(),
    };
  }
  return out;
}

async function postgresShapes(sql: SQL): Promise<Record<string, Shape>> {
  const out: Record<string, Shape> = {};
  const columns = await sql`
    SELECT table_name, column_name, data_type, is_nullable, column_default, collation_name, is_identity
    FROM information_schema.columns WHERE table_schema = 'public' AND table_name != '__drizzle_migrations'
    ORDER BY table_name, ordinal_position`;
  for (const c of columns) {
    const shape = (out[c.table_name] ??= { columns: {}, primaryKey: [], indexes: {}, foreignKeys: [] });
    // Every text column compares bytewise, as SQLite's do.
    if (c.data_type === "text") expect(`${c.table_name}.${c.column_name} ${c.collation_name}`).toBe(`${c.table_name}.${c.column_name} C`);
    shape.columns[c.column_name] = { type: c.data_type, notNull: c.is_nullable === "NO", default: normalizeDefault(c.column_default) };
  }
  const keys = await sql`
    SELECT c.conrelid::regclass::text AS tbl, c.contype, a.attname AS col, c.confrelid::regclass::text AS ref, af.attname AS refcol, c.confdeltype, k.i
    FROM pg_constraint c
    CROSS JOIN LATERAL unnest(c.conkey, coalesce(c.confkey, c.conkey)) WITH ORDINALITY AS k(col, refcol, i)
    JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.col
    LEFT JOIN pg_attribute af ON af.attrelid = c.confrelid AND af.attnum = k.refcol
    WHERE c.contype IN ('p', 'f') AND c.connamespace = 'public'::regnamespace
    ORDER BY tbl, c.conname, k.i`;
  const actions: Record<string, string> = { a: "no action", c: "cascade", n: "set null", r: "restrict", d: "set default" };
  for (const k of keys) {
    if (k.tbl === "__drizzle_migrations") continue;
    if (k.contype === "p") out[k.tbl].primaryKey.push(k.col);
    else out[k.tbl].foreignKeys.push(`${k.col} → ${k.ref}.${k.refcol} on delete ${actions[k.confdeltype]}`);
  }
  for (const shape of Object.values(out)) shape.foreignKeys.sort();
  const indexes = await sql`
    SELECT t.relname AS tbl, i.relname AS name, x.indisunique, x.indisprimary, pg_get_expr(x.indpred, x.indrelid) AS pred,
           array_to_string(ARRAY(SELECT a.attname FROM unnest(x.indkey) WITH ORDINALITY AS k(n, o) JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.n ORDER BY k.o), ',') AS cols
    FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
    WHERE t.relnamespace = 'public'::regnamespace AND t.relname != '__drizzle_migrations'`;
  for (const ix of indexes) {
    if (ix.indisprimary) continue;
    // PostgreSQL prints a predicate with parentheses and casts: (status = 'pending'::text), IN as = ANY (ARRAY[...]).
    const where = ix.pred ? ` where ${String(ix.pred).replace(/::text/g, "").replace(/^\((.*)\)$/s, "$1").replace(/ = ANY \(ARRAY\[(.*)\]\)/, " IN ($1)")}` : "";
    out[ix.tbl].indexes[ix.name] = `${ix.indisunique ? "unique " : ""}${ix.cols}${where}`;
  }
  return out;
}

/** SQLite says '{}' and false, PostgreSQL '{}'::text and 0. */
function normalizeDefault(value: string | null): string | null {
  if (value === null) return null;
  const v = value.replace(/::text$/, "");
  return v === "false" ? "0" : v === "true" ? "1" : v;
}

describe("openPostgres", () => {
  let sqlite: Database;
  beforeAll(() => {
    sqlite = openDatabase(":memory:").$client;
  });
  afterAll(() => sqlite.close());

  test("on an empty database: every SQLite table, with the same columns, keys, indexes and foreign keys", async () => {
    const sql = await openPostgres(await freshDatabase("ao_schema"));
    try {
      const expected = sqliteShapes(sqlite);
      const actual = await postgresShapes(sql);
      expect(Object.keys(actual).sort()).toEqual(Object.keys(expected).sort());
      for (const table of Object.keys(expected)) expect({ table, ...actual[table] }).toEqual({ table, ...expected[table] });
      expect(await postgresMigrationState(sql)).toEqual({ newer: false, pending: [] });
    } finally {
      await sql.close();
    }
  });

  test("the worker mail's id counts up by itself, as SQLite's AUTOINCREMENT does", async () => {
    const sql = await openPostgres(await freshDatabase("ao_identity"));
    try {
      await sql`INSERT INTO orgs (id, name, created_at, updated_at) VALUES ('o', 'o', 'now', 'now')`;
      await sql`INSERT INTO workers (id, org_id, name, credential_hash, created_at, updated_at) VALUES ('w', 'o', 'w', 'h', 'now', 'now')`;
      const ids = [];
      for (const message of ["a", "b"]) ids.push((await sql`INSERT INTO worker_mail (worker_id, message, created_at) VALUES ('w', ${message}, 'now') RETURNING id`)[0].id);
      expect(ids.map(Number)).toEqual([1, 2]);
    } finally {
      await sql.close();
    }
  });

  test("five servers opening one database at once all succeed; the migrations are applied once", async () => {
    const url = await freshDatabase("ao_race");
    const opened = await Promise.all(Array.from({ length: 5 }, () => openPostgres(url)));
    try {
      const rows = await opened[0]`SELECT hash, created_at FROM __drizzle_migrations ORDER BY id`;
      expect(rows.map((r: { hash: string; created_at: string }) => [r.hash, Number(r.created_at)])).toEqual(PG_MIGRATIONS.map((m) => [m.hash, m.folderMillis]));
    } finally {
      await Promise.all(opened.map((sql) => sql.close()));
    }
  });

  test("reopening applies nothing", async () => {
    const url = await freshDatabase("ao_reopen");
    const first = await openPostgres(url);
    const before = await first`SELECT id, hash, created_at FROM __drizzle_migrations ORDER BY id`;
    await first`INSERT INTO orgs (id, name, created_at, updated_at) VALUES ('kept', 'kept', 'now', 'now')`;
    await first.close();
    const again = await openPostgres(url);
    try {
      expect(await again`SELECT id, hash, created_at FROM __drizzle_migrations ORDER BY id`).toEqual(before);
      expect((await again`SELECT id FROM orgs`).map((r: { id: string }) => r.id)).toEqual(["kept"]);
    } finally {
      await again.close();
    }
  });

  test("a database written by a newer ao is refused, as SQLite refuses it, and left as it was", async () => {
    const url = await freshDatabase("ao_newer");
    const first = await openPostgres(url);
    const newer = PG_MIGRATIONS.at(-1)!.folderMillis + 1000;
    await first`INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('from-the-future', ${newer})`;
    expect(await postgresMigrationState(first)).toEqual({ newer: true, pending: [] });
    await first.close();
    const refused = await openPostgres(url).then(
      () => null,
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(NewerDatabaseError);
    expect((refused as Error).message).toBe(NEWER_DATABASE);
    const admin = new SQL(url);
    try {
      expect(Number((await admin`SELECT count(*) AS n FROM __drizzle_migrations`)[0].n)).toBe(PG_MIGRATIONS.length + 1);
    } finally {
      await admin.close();
    }
  });

  test("a server that cannot be reached, or refuses the credentials: the error says which database, never the password", async () => {
    const refused = "postgres://ao:s3cret-pw@127.0.0.1:1/ao";
    await expect(openPostgres(refused)).rejects.toThrow(/^PostgreSQL at 127\.0\.0\.1:1\/ao: /);
    const wrong = new URL(await freshDatabase("ao_wrong_user"));
    wrong.username = "no_such_role";
    wrong.password = "s3cret-pw";
    const error = (await openPostgres(wrong.toString()).catch((e: Error) => e)) as Error;
    expect(error.message).toStartWith(`PostgreSQL at ${wrong.host}${wrong.pathname}: `);
    expect(error.message).toContain("no_such_role");
    expect(error.message).not.toContain("s3cret-pw");
  });

  test("an empty database has every migration pending, and no table of ours", async () => {
    const sql = new SQL(await freshDatabase("ao_empty"));
    try {
      expect(await postgresMigrationState(sql)).toEqual({ newer: false, pending: PG_MIGRATIONS });
      expect(Number((await sql`SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = 'public'`)[0].n)).toBe(0);
    } finally {
      await sql.close();
    }
  });
});
