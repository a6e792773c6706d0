// Timeline seqs (SPEC §5): 1, 2, 3... per task with no gaps and no repeats, even while several
// writers append at once: parallel actions over HTTP, artifact uploads (async file writes between
// their reads and their commits), and another process on the same database (ao.db, or the same
// PostgreSQL database). Each seq is taken from the task row inside the write transaction that
// writes the event.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeTask, makeWorld, putInState, type World } from "./fixtures";
import { storeArtifact } from "../../src/modules/tasks/artifacts";
import { all, get } from "../../src/db/query";

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
});
afterAll(() => s.stop());

const lastSeq = async (id: string) => (await s.core.store.read(get<{ last_seq: number }>("SELECT last_seq FROM tasks WHERE id = ?", id)))!.last_seq;

const bun = join(import.meta.dir, "..", "..", "node_modules", ".bin", "bun");

test("concurrent writers in and out of the process leave seq 1..n without gaps", async () => {
  const task = await makeTask(s, w.owner, w.project.id);
  await putInState(s, task.id, "running"); // seq 2
  const ACTIONS = 30;
  const UPLOADS = 10;

  const other = Bun.spawn([bun, join(import.meta.dir, "timeline-writer.ts"), s.core.config.databaseUrl ?? join(s.dataDir, "ao.db"), task.id], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  const output = new Response(other.stdout).text();
  // Start ours once the other process has written its first event, in waves while it writes.
  while ((await lastSeq(task.id)) < 3) await Bun.sleep(2);
  const answers: { status: number }[] = [];
  const uploads: Promise<unknown>[] = [];
  for (let wave = 0; wave < 5; wave++) {
    uploads.push(
      ...Array.from({ length: UPLOADS / 5 }, (_, i) => storeArtifact(s.core, w.owner.orgId, task.id, `file-${wave}-${i}.txt`, new Blob([`content ${i}`]), 1)),
    );
    const wave_ = Array.from({ length: ACTIONS / 5 }, (_, i) =>
      s.api("POST", `/orgs/${w.owner.orgId}/tasks/${task.id}/actions`, { token: w.member.accessToken, body: { action: "input", input: `answer ${wave}.${i}` } }),
    );
    answers.push(...(await Promise.all(wave_)));
    await Bun.sleep(15);
  }
  await Promise.all(uploads);
  // Let the other process write a little more after ours, then stop it.
  await Bun.sleep(15);
  other.stdin.write("stop\n");
  await other.stdin.end();
  const [code, out, err] = await Promise.all([other.exited, output, new Response(other.stderr).text()]);
  expect({ code, err }).toEqual({ code: 0, err: "" });
  const OTHER = Number(/done (\d+)/.exec(out)![1]);
  expect(OTHER).toBeGreaterThan(10);
  expect(answers.map((a) => a.status)).toEqual(Array(ACTIONS).fill(200));

  const total = 2 + ACTIONS + UPLOADS + OTHER;
  const seqs = (await s.core.store.read(all<{ seq: number }>("SELECT seq FROM task_events WHERE task_id = ? ORDER BY seq", task.id))).map((r) => r.seq);
  expect(seqs).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  expect(await lastSeq(task.id)).toBe(total);

  // And the API pages through them in order, each once.
  const seen: number[] = [];
  let after = 0;
  for (;;) {
    const page = await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${task.id}/events?after=${after}&limit=37`, { token: w.viewer.accessToken });
    seen.push(...page.body.items.map((e: { seq: number }) => e.seq));
    if (!page.body.nextCursor) break;
    after = Number(page.body.nextCursor);
  }
  expect(seen).toEqual(seqs);
  const types = await s.core.store.read(all<{ type: string; n: number }>("SELECT type, count(*) AS n FROM task_events WHERE task_id = ? GROUP BY type ORDER BY type", task.id));
  // The writers really overlapped: ours landed between the other process's first and last event.
  const logs = await s.core.store.read(all<{ seq: number }>("SELECT seq FROM task_events WHERE task_id = ? AND type = 'log' ORDER BY seq", task.id));
  const ours = (await s.core.store.read(
    get<{ n: number }>(
      "SELECT count(*) AS n FROM task_events WHERE task_id = ? AND type IN ('action', 'artifact') AND seq BETWEEN ? AND ?",
      task.id,
      logs[0]!.seq,
      logs.at(-1)!.seq,
    ),
  ))!.n;
  expect(ours).toBe(ACTIONS + UPLOADS);
  expect(types).toEqual([
    { type: "action", n: ACTIONS },
    { type: "artifact", n: UPLOADS },
    { type: "log", n: OTHER },
    { type: "status", n: 2 },
  ]);
}, 30_000);
