// PgStore.writeEach, the group commit's transaction on PostgreSQL: each program under its own
// savepoint, one that throws undone alone (whatever state it left the transaction in), the others
// committed together; and a failed write statement that a program catches leaves it going on.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { freshDatabase } from "../helpers/postgres";
import { PgStore } from "../../src/db/pg-store";
import { all, get, isUniqueViolation, run, type Q } from "../../src/db/query";
import { isUnstorableText } from "../../src/server/errors";

let store: PgStore;
beforeAll(async () => {
  store = new PgStore({ url: await freshDatabase("ao_write_each"), max: 4 });
  await store.sql.unsafe("CREATE TABLE items (id text PRIMARY KEY, n integer NOT NULL)");
}, 60_000);
afterAll(() => store?.close());

function* insert(id: string, n = 1): Q<string> {
  yield* run("INSERT INTO items (id, n) VALUES (?, ?)", id, n);
  return id;
}

/** Inserts, then tries a duplicate and takes the refusal as an answer (as services do), then writes again. */
function* insertTwice(id: string): Q<string> {
  yield* run("INSERT INTO items (id, n) VALUES (?, ?)", id, 1);
  try {
    yield* run("INSERT INTO items (id, n) VALUES (?, ?)", id, 2);
  } catch (error) {
    if (!isUniqueViolation(error)) throw error;
  }
  yield* run("UPDATE items SET n = n + 10 WHERE id = ?", id);
  return id;
}

function* writeThenRefuse(id: string): Q<string> {
  yield* run("INSERT INTO items (id, n) VALUES (?, ?)", id, 1);
  throw new Error(`refused ${id}`);
}

/** Writes, then a plain SELECT fails: the whole transaction is aborted until its savepoint is rolled back to. */
function* writeThenBreak(id: string): Q<string> {
  yield* run("INSERT INTO items (id, n) VALUES (?, ?)", id, 1);
  yield* get("SELECT 1 / (SELECT count(*) - count(*) FROM items) AS x");
  return id;
}

const rows = () => store.read(all<{ id: string; n: number }>("SELECT id, n FROM items ORDER BY id"));

test("each program commits or is undone alone; the values and errors come back in order", async () => {
  const outcomes = await store.writeEach<string>([insert("a"), writeThenRefuse("b"), insertTwice("c"), writeThenBreak("d"), insert("e"), writeThenRefuse("f")]);
  expect(outcomes.map((o) => ("value" in o ? o.value : String((o.error as Error).message)))).toEqual([
    "a",
    "refused b",
    "c",
    expect.stringContaining("division by zero"),
    "e",
    "refused f",
  ]);
  expect(await rows()).toEqual([
    { id: "a", n: 1 },
    { id: "c", n: 11 },
    { id: "e", n: 1 },
  ]);
});

test("a lone program is its own transaction: its error is its outcome, and nothing of it stays", async () => {
  expect(await store.writeEach([writeThenRefuse("g")])).toEqual([{ error: expect.any(Error) }]);
  expect(await store.writeEach([insertTwice("h")])).toEqual([{ value: "h" }]);
  expect((await rows()).map((r) => r.id)).toEqual(["a", "c", "e", "h"]);
});

test("a program's own unique violation comes to it as the statement's error, and a later write still commits", async () => {
  const [o] = await store.writeEach([
    (function* () {
      try {
        yield* insert("a");
      } catch (error) {
        return isUniqueViolation(error) ? "duplicate" : String(error);
      }
      return "inserted";
    })(),
    insert("i"),
  ]);
  expect(o).toEqual({ value: "duplicate" });
  expect((await rows()).map((r) => r.id)).toContain("i");
});

test("a NUL (U+0000) in a text value is refused by PostgreSQL alone; isUnstorableText knows the refusal (a 400, not a 500)", async () => {
  await store.sql.unsafe("CREATE TABLE notes (id text PRIMARY KEY, body text NOT NULL)");
  const write = (id: string, body: string) => (function* () {
    yield* run("INSERT INTO notes (id, body) VALUES (?, ?)", id, body);
    return id;
  })();
  const [refused, kept] = await store.writeEach<string>([write("n1", "a\u0000b"), write("n2", "ab")]);
  expect("error" in refused! && isUnstorableText(refused.error)).toBe(true);
  expect(kept).toEqual({ value: "n2" });
  // Other refusals are not taken for it.
  const [duplicate] = await store.writeEach<string>([write("n2", "again")]);
  expect("error" in duplicate! && isUnstorableText(duplicate.error)).toBe(false);
  expect(await store.read(all<{ id: string }>("SELECT id FROM notes ORDER BY id"))).toEqual([{ id: "n2" }]);
});
