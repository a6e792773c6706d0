// Background jobs run on exactly one server: with PostgreSQL the holder of an advisory lock leads,
// and when it goes (closed, or its connection killed as a kill -9 of its server looks to
// PostgreSQL) another contender takes over within a few retry periods.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { leadership, lockKey, type Leadership } from "../../src/server/leader";
import type { Logger } from "../../src/server/core";
import { freshDatabase } from "../helpers/postgres";
import { until } from "../workers/helpers";

const log: Logger = { info() {}, warn() {}, error() {} };

/** Resolves at the contender's next change to `leader`. */
function becomes(l: Leadership, leader: boolean): Promise<void> {
  return new Promise((resolve) => {
    const off = l.onChange((now) => {
      if (now !== leader) return;
      off();
      resolve();
    });
  });
}

/** Two contenders on the database; returns them as [leader, follower]. */
async function contenders(url: string, name: string): Promise<[Leadership, Leadership]> {
  const one = leadership(name, { url, retryMs: 100, log });
  const two = leadership(name, { url, retryMs: 100, log });
  await Promise.all([one.ready, two.ready]);
  expect([one.isLeader(), two.isLeader()].filter(Boolean)).toHaveLength(1);
  return one.isLeader() ? [one, two] : [two, one];
}

test("without PostgreSQL the only server is always the leader", async () => {
  const l = leadership("sweeper", { log });
  await l.ready;
  expect(l.isLeader()).toBe(true);
  await l.close();
});

test("the lock key is a stable signed 64-bit number, different per name", () => {
  expect(lockKey("sweeper")).toBe(lockKey("sweeper"));
  expect(lockKey("sweeper")).not.toBe(lockKey("expiries"));
  expect(BigInt.asIntN(64, lockKey("sweeper"))).toBe(lockKey("sweeper"));
});

describe("two servers contend on one PostgreSQL database", () => {
  let url: string;
  let admin: SQL;
  const open: Leadership[] = [];

  beforeAll(async () => {
    url = await freshDatabase("leader");
    admin = new SQL(url, { max: 1 });
  });
  afterAll(async () => {
    await Promise.all(open.map((l) => l.close()));
    await admin?.close();
  });

  test("exactly one leads; when it closes, the other takes over and the closed one hears its loss", async () => {
    const [leader, follower] = await contenders(url, "close");
    open.push(leader, follower);
    const lost = becomes(leader, false);
    const won = becomes(follower, true);
    await leader.close();
    await Promise.all([lost, won]);
    expect(leader.isLeader()).toBe(false);
    expect(follower.isLeader()).toBe(true);
  });

  test("when the leader's backend is terminated, it steps down, one of the two leads again, and the stepped-down one can lead again", async () => {
    const [leader, follower] = await contenders(url, "kill");
    open.push(leader, follower);
    const lost = becomes(leader, false);
    const killed = await admin`
      SELECT pg_terminate_backend(l.pid) AS ok FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = 'ao leader kill'`;
    expect(killed.map((r: { ok: boolean }) => r.ok)).toEqual([true]);
    await lost;
    // Both contend for the freed lock: the other on its connection, the stepped-down one on a new
    // one. Usually the other wins; under load the stepped-down one can be first. Exactly one leads.
    await until(() => leader.isLeader() || follower.isLeader(), 10_000, 10);
    expect([leader.isLeader(), follower.isLeader()].filter(Boolean)).toHaveLength(1);

    // The stepped-down server keeps contending on its new connection and leads once the other goes.
    if (follower.isLeader()) {
      const back = becomes(leader, true);
      await follower.close();
      await back;
    }
    expect(leader.isLeader()).toBe(true);
  });

  test("different names lead independently", async () => {
    const a = leadership("jobs-a", { url, retryMs: 100, log });
    const b = leadership("jobs-b", { url, retryMs: 100, log });
    open.push(a, b);
    await Promise.all([a.ready, b.ready]);
    expect(a.isLeader()).toBe(true);
    expect(b.isLeader()).toBe(true);
  });
});
