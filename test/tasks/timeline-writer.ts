// A second process writing to the same database (a stand-in for another server process): appends
// log events to a task, one transaction each, through the same store code the server uses, until
// a line arrives on stdin; then prints "done <count>".
import { Database } from "bun:sqlite";
import type { Core } from "../../src/server/core";
import { changeTask } from "../../src/modules/tasks/store";
import { SqliteStore } from "../../src/db/store";

const [path, taskId] = process.argv.slice(2);
const sqlite = new Database(path!);
sqlite.exec("PRAGMA busy_timeout = 10000");
// Only what an events-only change touches: the database, no hooks, nobody listening.
const core = { sqlite, store: new SqliteStore(sqlite), taskHooks: [], hub: { publish() {}, hasSubscribers: () => false }, events: { emit() {} } } as unknown as Core;
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
console.log(`done ${count}`);
