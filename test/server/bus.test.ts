// The bus between the servers of one service: in-process with SQLite (localBus), over PostgreSQL's
// LISTEN/NOTIFY with several servers (postgresBus). Every handler hears each message once, in order.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { localBus, postgresBus, type Bus } from "../../src/server/bus";
import type { Logger } from "../../src/server/core";
import { freshDatabase } from "../helpers/postgres";

function collectingLog() {
  const errors: string[] = [];
  const log: Logger = { info() {}, warn() {}, error: (message, fields) => void errors.push(`${message} ${JSON.stringify(fields)}`) };
  return { log, errors };
}

/** Resolves when the list has reached n entries (checked on each push). */
function collector<T>() {
  const items: T[] = [];
  const waits: { n: number; resolve: () => void }[] = [];
  return {
    items,
    push(item: T) {
      items.push(item);
      for (const w of waits.filter((w) => items.length >= w.n)) w.resolve();
    },
    reach(n: number): Promise<void> {
      if (items.length >= n) return Promise.resolve();
      return new Promise((resolve) => waits.push({ n, resolve }));
    },
  };
}

describe("localBus", () => {
  test("a message reaches every handler of its channel after the publisher's call returns, in publish order", async () => {
    const { log } = collectingLog();
    const bus = localBus(log);
    const heard: string[] = [];
    bus.on("task.created", (p) => heard.push(`a${p.n}`));
    bus.on("task.created", (p) => heard.push(`b${p.n}`));
    bus.on("other", () => heard.push("other"));

    bus.publish("task.created", { n: 1 });
    bus.publish("task.created", { n: 2 });
    expect(heard).toEqual([]);
    await Promise.resolve();
    expect(heard).toEqual(["a1", "b1", "a2", "b2"]);
    await bus.close();
  });

  test("a throwing handler is logged and the others still hear the message; a removed handler hears nothing", async () => {
    const { log, errors } = collectingLog();
    const bus = localBus(log);
    const heard: number[] = [];
    bus.on("c", () => {
      throw new Error("handler bug");
    });
    bus.on("c", (p) => heard.push(p.n));
    const off = bus.on("c", (p) => heard.push(-p.n));
    off();
    bus.publish("c", { n: 7 });
    await Promise.resolve();
    expect(heard).toEqual([7]);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("handler bug");
    await bus.close();
  });

  test("after close, publishing delivers nothing", async () => {
    const bus = localBus(collectingLog().log);
    const heard: unknown[] = [];
    bus.on("c", (p) => heard.push(p));
    await bus.close();
    bus.publish("c", { n: 1 });
    await Promise.resolve();
    expect(heard).toEqual([]);
  });
});

describe("postgresBus: two servers on one database", () => {
  let url: string;
  let a: Bus;
  let b: Bus;
  const logA = collectingLog();
  const logB = collectingLog();

  beforeAll(async () => {
    url = await freshDatabase("bus");
    a = postgresBus(url, "server-a", logA.log);
    b = postgresBus(url, "server-b", logB.log);
    await Promise.all([a.ready, b.ready]);
  });
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
  });

  test("100 numbered messages published on A reach the handlers on A and on B once each, in order", async () => {
    const onA = collector<number>();
    const onB = collector<number>();
    const offA = a.on("task.created", (p) => onA.push(p.n));
    const offB = b.on("task.created", (p) => onB.push(p.n));
    // The end marker comes from B once it has all 100: by then A's own copies have come back over
    // NOTIFY before it (one server's notifications arrive in commit order), so a duplicate would show.
    const doneOnA = collector<string>();
    const offDone = a.on("done", (p) => doneOnA.push(p.from));

    for (let n = 1; n <= 100; n++) a.publish("task.created", { n });
    await onB.reach(100);
    b.publish("done", { from: "b" });
    await doneOnA.reach(1);

    const expected = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(onA.items).toEqual(expected);
    expect(onB.items).toEqual(expected);
    expect(doneOnA.items).toEqual(["b"]);
    expect(logA.errors).toEqual([]);
    expect(logB.errors).toEqual([]);
    offA();
    offB();
    offDone();
  });

  test("a burst leaves in few notifications, each under PostgreSQL's limit; B hears every message once, in order", async () => {
    // What PostgreSQL delivers on the channel, read by a listener of its own.
    const raw = new SQL(url, { max: 1 });
    const notifications: string[] = [];
    await raw.listen("ao_bus", (text) => notifications.push(text));
    const onB = collector<number>();
    const offB = b.on("burst", (p) => onB.push(p.n));
    // 2 KB each: no more than three fit in one notification.
    const pad = "p".repeat(2000);
    for (let n = 1; n <= 300; n++) a.publish("burst", { n, pad: n % 10 === 0 ? pad : "" });
    await onB.reach(300);
    expect(onB.items).toEqual(Array.from({ length: 300 }, (_, i) => i + 1));
    const ours = notifications.filter((t) => t.includes('"burst"'));
    expect(ours.length).toBeLessThan(100);
    for (const text of ours) expect(Buffer.byteLength(text)).toBeLessThan(7000);
    expect(logA.errors).toEqual([]);
    expect(logB.errors).toEqual([]);
    offB();
    await raw.close();
  });

  test("a payload over 7,000 bytes is refused at publish and goes nowhere", async () => {
    const onA = collector<string>();
    const onB = collector<string>();
    const offA = a.on("big", (p) => onA.push(p.id));
    const offB = b.on("big", (p) => onB.push(p.id));

    expect(() => a.publish("big", { id: "x", rows: "r".repeat(7000) })).toThrow(/send ids/);
    a.publish("big", { id: "small" });
    await Promise.all([onA.reach(1), onB.reach(1)]);
    expect(onA.items).toEqual(["small"]);
    expect(onB.items).toEqual(["small"]);
    offA();
    offB();
  });

  test("a handler that throws on the receiving server is logged; the other handlers there still hear the message", async () => {
    const heard = collector<number>();
    const offBad = b.on("access.changed", () => {
      throw new Error("receiver bug");
    });
    const offGood = b.on("access.changed", (p) => heard.push(p.n));
    a.publish("access.changed", { n: 1 });
    a.publish("access.changed", { n: 2 });
    await heard.reach(2);
    expect(heard.items).toEqual([1, 2]);
    expect(logB.errors.filter((e) => e.includes("receiver bug"))).toHaveLength(2);
    logB.errors.length = 0;
    offBad();
    offGood();
  });

  test("when B's LISTEN connection is cut, B reconnects, calls its onReconnect hooks, and hears messages again", async () => {
    const reconnected = collector<true>();
    const offHook = b.onReconnect(() => reconnected.push(true));
    const admin = new SQL(url, { max: 1 });
    try {
      const cut = await admin`
        SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = 'ao bus server-b' AND query LIKE 'LISTEN%'`;
      expect(cut.map((r: { ok: boolean }) => r.ok)).toEqual([true]);
    } finally {
      await admin.close();
    }
    await reconnected.reach(1);

    const heard = collector<number>();
    const off = b.on("after", (p) => heard.push(p.n));
    a.publish("after", { n: 1 });
    await heard.reach(1);
    expect(heard.items).toEqual([1]);
    off();
    offHook();
  });
});
