// A second process writing to the same database (a stand-in for another server process): appends
// log events to a task, one transaction each, through the same store code the server uses, until
// a line arrives on stdin; then prints "done <count>". The database is ao.db's path or a
// postgres:// URL.
import { Database } from "bun:sqlite";
import type { Core } from "../../src/server/core";
import { changeTask } from "../../src/modules/tasks/store";
import { SqliteStore, type Store } from "../../src/db/store";
import { PgStore } from "../../src/db/pg-store";

const [database, taskId] = process.argv.slice(2);
function open(): Store {
  if (/^postgres(ql)?:\/\//.test(database!)) return new PgStore({ url: database!, max: 2 });
  const sqlite = new Database(database!);
  sqlite.exec("PRAGMA busy_timeout = 10000");
  return new SqliteStore(sqlite);
}
const store = open();
// Only what an events-only change touches: the database, no hooks, nobody listening.
const core = { store, taskHooks: [], hub: { publish() {}, hasSubscribers: () => false }, events: { emit() {} } } as unknown as Core;
let stop = false;
void (async () => {
  for await (const _ of console) break;
  stop = true;
})();
let count = 0;
// Bounded, in case the test never says stop.
while (!stop && count < 5000) {
  await changeTask(core, null, taskId!, () => ({ events: [{ type: "log", data: { line: `from the other process ${count}` } }] }));
  count++;
  // Spread over time, so the other writers' transactions fall between ours.
  await Bun.sleep(1);
}
await store.close();
console.log(`done ${count}`);
