// Slow consumers (SPEC §6, issue: "dropped rather than buffered without bound"): a subscriber that
// stops reading is closed by the server once its send buffer passes the limit, while a subscriber
// that keeps up gets every update and the server goes on serving.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { makeTask, makeWorld, type World } from "../tasks/fixtures";
import { changeTask } from "../../src/modules/tasks/store";

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
});
afterAll(() => s.stop());

const bun = join(import.meta.dir, "..", "..", "node_modules", ".bin", "bun");

test("a subscriber that stops reading is dropped; one that reads gets everything", async () => {
  const topic = `org:${w.owner.orgId}`;
  const wsUrl = s.url.replace("http", "ws") + "/api/v1/ws";

  // The one that keeps up, in this process.
  const updates: { summary: string | null }[] = [];
  const fast = new WebSocket(wsUrl, { headers: { authorization: `Bearer ${w.owner.accessToken}` } } as unknown as string[]);
  await new Promise<void>((resolve, reject) => {
    fast.onopen = () => fast.send(JSON.stringify({ type: "subscribe", orgId: w.owner.orgId }));
    fast.onerror = () => reject(new Error("socket error"));
    fast.onmessage = (e) => {
      const m = JSON.parse(String(e.data));
      if (m.type === "subscribed") resolve();
      if (m.type === "task.updated") updates.push(m.task);
    };
  });

  // The one that will stop reading, in a child process we can freeze.
  const child = Bun.spawn([bun, join(import.meta.dir, "subscriber.ts")], {
    env: { ...process.env, AO_WS: wsUrl, AO_TOKEN: w.owner.accessToken, AO_ORG: w.owner.orgId },
    stdout: "pipe",
    stderr: "inherit",
  });
  const reader = child.stdout.getReader();
  let out = "";
  const read = async (until: (text: string) => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!until(out) && Date.now() < deadline) {
      const chunk = await Promise.race([reader.read(), Bun.sleep(deadline - Date.now()).then(() => null)]);
      if (!chunk || chunk.done) break;
      out += new TextDecoder().decode(chunk.value);
    }
    return out;
  };
  try {
    expect(await read((t) => t.includes("subscribed"), 5000)).toContain("subscribed");
    expect(s.server.subscriberCount(topic)).toBe(2);
    process.kill(child.pid, "SIGSTOP");

    // Each change pushes the whole record (~100 kB with this prompt). The kernel's socket buffers
    // take the first few MB; past them the server holds at most its backpressure limit (1 MiB),
    // then closes the socket. 400 changes (40 MB) is far more than that needs.
    const task = await makeTask(s, w.owner, w.project.id, { prompt: "p".repeat(100_000) });
    let changes = 0;
    while (s.server.subscriberCount(topic) === 2 && changes < 400) {
      changes++;
      await changeTask(s.core, null, task.id, () => ({ patch: { summary: `step ${changes}` }, events: [] }));
      // The reading subscriber lives in this process: give it the turn to read each update.
      const want = `step ${changes}`;
      for (let i = 0; i < 200 && updates.at(-1)?.summary !== want; i++) await Bun.sleep(1);
      expect(updates.at(-1)?.summary).toBe(want);
    }
    expect(s.server.subscriberCount(topic)).toBe(1);
    // Dropped after a bounded amount, not at the end of what we were prepared to send.
    expect(changes).toBeLessThan(400);

    // The frozen one, thawed, finds its socket closed, having missed updates.
    process.kill(child.pid, "SIGCONT");
    const report = JSON.parse((await read((t) => t.includes('"closed"'), 5000)).split("\n").find((l) => l.includes('"closed"'))!);
    // It was sent the task's creation (task.updated + task.event) and one task.updated per change.
    expect(report.received).toBeLessThan(changes + 2);

    // The server still serves: the reading subscriber got every change and still gets new ones.
    expect(updates.filter((u) => u.summary?.startsWith("step "))).toHaveLength(changes);
    await changeTask(s.core, null, task.id, () => ({ patch: { summary: "after" }, events: [] }));
    for (let i = 0; i < 200 && updates.at(-1)?.summary !== "after"; i++) await Bun.sleep(1);
    expect(updates.at(-1)?.summary).toBe("after");
  } finally {
    try {
      process.kill(child.pid, "SIGCONT");
    } catch {}
    child.kill();
    fast.close();
  }
}, 30_000);
