// One list of database programs, run on both stores: SQLite on a temporary file, PostgreSQL on a
// fresh database of the test cluster. A program that passes here means the same on both.
import { afterAll, beforeAll, describe, expect, spyOn, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { desc, eq, inArray, sql as raw } from "drizzle-orm";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { all, exec, get, isUniqueViolation, row, rows, run, type Param, type Q } from "../../src/db/query";
import { SqliteStore, type Store } from "../../src/db/store";
import { PgStore, pgDrizzle, toPostgres } from "../../src/db/pg-store";
import { freshDatabase } from "../helpers/postgres";

const items = sqliteTable("items", {
  id: text("id").primaryKey(),
  name: text("name").notNull().unique(),
  n: integer("n").notNull().default(0),
  done: integer("done", { mode: "boolean" }).notNull().default(false),
});

// Portable DDL: the same text on both.
const CREATE = `CREATE TABLE items (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  n INTEGER NOT NULL DEFAULT 0,
  done INTEGER NOT NULL DEFAULT 0
)`;

type Item = typeof items.$inferSelect;
// The builder's types are the same for both stores; only where the query runs differs.
type Builder = ReturnType<typeof drizzle<Record<string, never>>>;

interface Subject {
  store: Store;
  db: Builder;
}

function* seed(...names: string[]): Q<void> {
  for (const [i, name] of names.entries()) yield* run("INSERT INTO items (id, name, n) VALUES (?, ?, ?)", `i${i + 1}`, name, i + 1);
}

function* reset(): Q<void> {
  yield* run("DELETE FROM items");
}

const subjects: [string, () => Promise<Subject>][] = [
  [
    "sqlite",
    async () => {
      const sqlite = new Database(join(mkdtempSync(join(tmpdir(), "ao-store-")), "db.sqlite"), { create: true, strict: true });
      const store = new SqliteStore(sqlite);
      await store.write(run(CREATE));
      return { store, db: drizzle({ client: sqlite }) };
    },
  ],
  [
    "postgres",
    async () => {
      const store = new PgStore({ url: await freshDatabase("store"), max: 8 });
      await store.write(run(CREATE));
      return { store, db: pgDrizzle(store) as unknown as Builder };
    },
  ],
];

for (const [name, open] of subjects) {
  describe(`${name} store`, () => {
    let store: Store;
    let db: Builder;

    beforeAll(async () => {
      ({ store, db } = await open());
    });
    afterAll(async () => {
      await store.close();
    });

    test("all, get and run", async () => {
      await store.write(reset());
      await store.write(seed("a", "b", "c"));
      const found = await store.read(all<{ id: string; name: string; n: number }>("SELECT id, name, n FROM items WHERE n >= ? ORDER BY n", 2));
      expect(found).toEqual([
        { id: "i2", name: "b", n: 2 },
        { id: "i3", name: "c", n: 3 },
      ]);
      expect(await store.read(get<{ name: string }>("SELECT name FROM items WHERE id = ?", "i1"))).toEqual({ name: "a" });
      expect(await store.read(get("SELECT name FROM items WHERE id = ?", "nope"))).toBeUndefined();
      expect(await store.write(run("UPDATE items SET n = n + 10 WHERE n < ?", 3))).toEqual({ changes: 2 });
      expect(await store.write(run("DELETE FROM items WHERE id = ?", "nope"))).toEqual({ changes: 0 });
    });

    test("drizzle's builder: select, insert, update and returning", async () => {
      await store.write(reset());
      const inserted = await store.write(exec(db.insert(items).values({ id: "d1", name: "one", n: 1 })));
      expect(inserted).toEqual({ changes: 1 });
      const back = await store.write(rows(db.insert(items).values({ id: "d2", name: "two", n: 2, done: true }).returning()));
      expect(back).toEqual([{ id: "d2", name: "two", n: 2, done: true }]);
      const updated = await store.write(row(db.update(items).set({ n: raw`${items.n} + 5` }).where(eq(items.id, "d1")).returning({ n: items.n })));
      expect(updated).toEqual({ n: 6 });
      expect(await store.write(exec(db.update(items).set({ done: true }).where(eq(items.id, "nope"))))).toEqual({ changes: 0 });
      const listed: Item[] = await store.read(rows(db.select().from(items).orderBy(items.id)));
      expect(listed).toEqual([
        { id: "d1", name: "one", n: 6, done: false },
        { id: "d2", name: "two", n: 2, done: true },
      ]);
      expect(await store.read(row(db.select({ name: items.name }).from(items).where(eq(items.done, true))))).toEqual({ name: "two" });
      expect(await store.read(row(db.select().from(items).where(eq(items.id, "nope"))))).toBeUndefined();
    });

    test("drizzle's builder: upserts, lists of ids, limit and offset, delete with returning", async () => {
      await store.write(reset());
      await store.write(seed("a", "b", "c", "d"));
      await store.write(exec(db.insert(items).values({ id: "i1", name: "ignored" }).onConflictDoNothing()));
      await store.write(
        exec(
          db
            .insert(items)
            .values({ id: "i2", name: "b", n: 20 })
            .onConflictDoUpdate({ target: items.id, set: { n: raw`excluded.n` } }),
        ),
      );
      const page = await store.read(
        rows(db.select({ id: items.id, n: items.n }).from(items).where(inArray(items.id, ["i1", "i2", "i3"])).orderBy(desc(items.n)).limit(2).offset(1)),
      );
      expect(page).toEqual([
        { id: "i3", n: 3 },
        { id: "i1", n: 1 },
      ]);
      const gone = await store.write(rows(db.delete(items).where(eq(items.n, 20)).returning({ id: items.id })));
      expect(gone).toEqual([{ id: "i2" }]);
    });

    test("a query's error is thrown into the program, which may catch it and go on in the same transaction", async () => {
      await store.write(reset());
      await store.write(seed("taken"));
      function* insertOnce(id: string, name: string): Q<string> {
        try {
          yield* run("INSERT INTO items (id, name) VALUES (?, ?)", id, name);
          return "inserted";
        } catch (error) {
          if (!isUniqueViolation(error)) throw error;
          return "exists";
        }
      }
      function* insertOnceWithDrizzle(id: string, name: string): Q<string> {
        try {
          yield* exec(db.insert(items).values({ id, name }));
          return "inserted";
        } catch (error) {
          if (!isUniqueViolation(error)) throw error;
          return "exists";
        }
      }
      const outcome = await store.write(
        (function* () {
          const first = yield* insertOnce("x1", "taken");
          const second = yield* insertOnceWithDrizzle("x2", "taken");
          // The transaction is still usable: this write commits with it.
          const third = yield* insertOnce("x3", "free");
          return [first, second, third];
        })(),
      );
      expect(outcome).toEqual(["exists", "exists", "inserted"]);
      expect(await store.read(all("SELECT name FROM items ORDER BY name"))).toEqual([{ name: "free" }, { name: "taken" }]);
      // Outside a transaction too.
      expect(await store.read(insertOnce("x4", "taken"))).toBe("exists");
      // Not caught, it reaches the caller.
      const error = await store.write(run("INSERT INTO items (id, name) VALUES (?, ?)", "x5", "taken")).catch((e: unknown) => e);
      expect(isUniqueViolation(error)).toBe(true);
    });

    test("a write whose program throws rolls back, and the caller gets the same error", async () => {
      await store.write(reset());
      const thrown = new Error("changed my mind");
      const error = await store
        .write(
          (function* () {
            yield* run("INSERT INTO items (id, name) VALUES (?, ?)", "r1", "rolled back");
            yield* exec(db.insert(items).values({ id: "r2", name: "also rolled back" }));
            throw thrown;
          })(),
        )
        .catch((e: unknown) => e);
      expect(error).toBe(thrown);
      expect(await store.read(get("SELECT CAST(count(*) AS INTEGER) AS n FROM items"))).toEqual({ n: 0 });
    });

    test("concurrent writes that read, decide and write are serialized", async () => {
      await store.write(reset());
      await store.write(run("INSERT INTO items (id, name, n) VALUES ('counter', 'counter', 0)"));
      function* increment(): Q<void> {
        const current = (yield* get<{ n: number }>("SELECT n FROM items WHERE id = ?", "counter"))!;
        yield* run("UPDATE items SET n = ? WHERE id = ?", current.n + 1, "counter");
      }
      await Promise.all(Array.from({ length: 20 }, () => store.write(increment())));
      expect(await store.read(get("SELECT n FROM items WHERE id = ?", "counter"))).toEqual({ n: 20 });
    });

    test("a ? inside a string literal or a quoted identifier is not a placeholder", async () => {
      const found = await store.read(get<Record<string, unknown>>(`SELECT '?' AS "why?", 'it''s ?' AS quoted, ? AS p`, "given"));
      expect(found).toEqual({ "why?": "?", quoted: "it's ?", p: "given" });
    });

    test("json_each(?) takes a JSON list of values", async () => {
      await store.write(reset());
      await store.write(seed("a", "b", "c", "d"));
      const ids = ["i2", "i4", "missing"];
      const found = await store.read(all<{ id: string }>("SELECT id FROM items WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id", JSON.stringify(ids)));
      expect(found).toEqual([{ id: "i2" }, { id: "i4" }]);
      expect(await store.read(all("SELECT id FROM items WHERE id IN (SELECT value FROM json_each(?))", "[]"))).toEqual([]);
    });

    test("count(*), sum() and comparisons come back as numbers", async () => {
      await store.write(reset());
      await store.write(seed("a", "b", "c"));
      const found = await store.read(get("SELECT count(*) AS n, sum(n) AS total, max(n) AS top, (count(*) > 2) AS many FROM items"));
      expect(found).toEqual({ n: 3, total: 6, top: 3, many: 1 });
      const grouped = await store.read(all("SELECT done, count(*) AS n FROM items GROUP BY done"));
      expect(grouped).toEqual([{ done: 0, n: 3 }]);
      // Drizzle's rows too, where no mapWith(Number) says it.
      expect(await store.read(row(db.select({ n: raw<number>`count(*)`, top: raw<number>`max(${items.n})` }).from(items)))).toEqual({ n: 3, top: 3 });
    });

    test("booleans are bound as 1 and 0", async () => {
      await store.write(reset());
      await store.write(run("INSERT INTO items (id, name, done) VALUES (?, ?, ?)", "b1", "yes", true as unknown as Param));
      await store.write(run("INSERT INTO items (id, name, done) VALUES (?, ?, ?)", "b2", "no", false as unknown as Param));
      expect(await store.read(all("SELECT id, done FROM items ORDER BY id"))).toEqual([
        { id: "b1", done: 1 },
        { id: "b2", done: 0 },
      ]);
      expect(await store.read(rows(db.select({ id: items.id }).from(items).where(eq(items.done, true))))).toEqual([{ id: "b1" }]);
    });
  });
}

describe("postgres store only", () => {
  let store: PgStore;

  beforeAll(async () => {
    store = new PgStore({ url: await freshDatabase("store_pg"), max: 4 });
  });
  afterAll(async () => {
    await store.close();
  });

  test("placeholders are numbered outside literals, identifiers and comments", () => {
    expect(toPostgres(`SELECT ? , '?''?' , "a?""?" -- ?\n, /* ? */ ?`)).toBe(`SELECT $1 , '?''?' , "a?""?" -- ?\n, /* ? */ $2`);
    expect(toPostgres("SELECT value FROM json_each( ? ) WHERE x = ?")).toBe("SELECT value FROM json_array_elements_text(CAST($1 AS text)::json) WHERE x = $2");
    expect(toPostgres("SELECT my_json_each(?)")).toBe("SELECT my_json_each($1)");
    expect(toPostgres(`insert into "m" ("a", "b") values (?, ?) on conflict ("m"."a", "m"."b") do update set "b" = ?`)).toBe(
      `insert into "m" ("a", "b") values ($1, $2) on conflict ("a", "b") do update set "b" = $3`,
    );
    expect(toPostgres("INSERT INTO m (a) VALUES (?) ON CONFLICT (a) DO NOTHING")).toBe("INSERT INTO m (a) VALUES ($1) ON CONFLICT (a) DO NOTHING");
  });

  test("an integer beyond JavaScript's safe integers is refused, not rounded", async () => {
    expect(await store.read(get("SELECT CAST(? AS BIGINT) AS n", 2 ** 53 - 1))).toEqual({ n: 2 ** 53 - 1 });
    await expect(store.read(get("SELECT CAST(? AS BIGINT) + 1 AS n", 2 ** 53))).rejects.toThrow(/safe integers/);
  });

  test("sync and syncWrite say they are SQLite's only", () => {
    expect(() => store.sync(get("SELECT 1 AS one"))).toThrow(/only SQLite/);
    expect(() => store.syncWrite(get("SELECT 1 AS one"))).toThrow(/only SQLite/);
  });

  test("a drizzle query outside a program is refused", async () => {
    const error = await pgDrizzle(store).select({ one: raw`1` }).from(items).all().catch((e: Error) => e);
    expect(String((error as Error).cause)).toMatch(/outside a database program/);
  });

  test("writers on two servers of one database are serialized", async () => {
    const url = await freshDatabase("store_servers");
    const servers = [new PgStore({ url, max: 4 }), new PgStore({ url, max: 4 })];
    await servers[0]!.write(run("CREATE TABLE counter (n INTEGER NOT NULL)"));
    await servers[0]!.write(run("INSERT INTO counter (n) VALUES (0)"));
    function* increment(): Q<void> {
      const { n } = (yield* get<{ n: number }>("SELECT n FROM counter"))!;
      yield* run("UPDATE counter SET n = ?", n + 1);
    }
    await Promise.all(Array.from({ length: 40 }, (_, i) => servers[i % 2]!.write(increment())));
    expect(await servers[1]!.read(get("SELECT n FROM counter"))).toEqual({ n: 40 });
    await Promise.all(servers.map((s) => s.close()));
  });

  test("listen receives what notify sends", async () => {
    const received: string[] = [];
    const { promise: arrived, resolve } = Promise.withResolvers<void>();
    const subscription = await store.listen("ao_test", (payload) => {
      received.push(payload);
      if (received.length === 2) resolve();
    });
    await store.notify("ao_test", "first");
    await store.notify("ao_test", JSON.stringify({ id: "t1" }));
    await arrived;
    expect(received).toEqual(["first", '{"id":"t1"}']);
    await subscription.unlisten();
  });

  test("a listener that throws is logged, and the others still get the payload", async () => {
    const logged = spyOn(console, "error").mockImplementation(() => {});
    try {
      const { promise: arrived, resolve } = Promise.withResolvers<string>();
      const failing = await store.listen("ao_test_throw", () => {
        throw new Error("listener bug");
      });
      const working = await store.listen("ao_test_throw", resolve);
      await store.notify("ao_test_throw", "still here");
      expect(await arrived).toBe("still here");
      expect(logged).toHaveBeenCalled();
      await failing.unlisten();
      await working.unlisten();
    } finally {
      logged.mockRestore();
    }
  });
});
