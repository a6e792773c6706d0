// The callback relay under faults: a server killed (SIGKILL) with a callback in flight, a database
// locked when a try's result is written or when the relay starts, a receiver down for an hour
// with the real retry schedule (scaled down), jitter, which answers count as delivered, and no
// secret in the logs through all of it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { defaultConfig } from "../../src/server/config";
import { Relay } from "../../src/modules/integrations/relay";
import type { Logger } from "../../src/server/core";
import { all, get, run } from "../../src/db/query";
import { deliver, eventually, makeIntegration, makeWorld, putInState, Receiver, sleep, svcSignature, type World } from "./fixtures";

const ROOT = join(import.meta.dir, "..", "..");
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "ao-relay-faults-"));
  dirs.push(d);
  return d;
};

const logLines: string[] = [];
const logger: Logger = {
  info: (m, f) => void logLines.push(`${m} ${JSON.stringify(f ?? {})}`),
  warn: (m, f) => void logLines.push(`${m} ${JSON.stringify(f ?? {})}`),
  error: (m, f) => void logLines.push(`${m} ${JSON.stringify(f ?? {})}`),
};
const secrets: string[] = [];

let s: TestServer;
let w: World;
beforeAll(async () => {
  s = await startTestServer({ logger, allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [60_000], timeoutMs: 2000 } });
  w = await makeWorld(s);
});
afterAll(async () => {
  await s.stop();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

type Row = { id: string; status: string; attempts: number; round_attempts: number; last_status_code: number | null; next_attempt_at: number; last_attempt_at: string | null };
const rowsOf = (srv: TestServer, taskId: string) => srv.core.store.read(all<Row>("SELECT * FROM deliveries WHERE task_id = ? ORDER BY id", taskId));

/** A signed JSON integration of `srv` calling back to `url`, and a completed task it created. */
async function completedCallingBack(srv: TestServer, world: World, url: string) {
  const i = await makeIntegration(srv, world.owner, { kind: "signed_json", name: "CI", projectId: world.projectId, callbackUrl: url });
  secrets.push(i.secret);
  const body = JSON.stringify({ title: "Ship it", prompt: "x" });
  const r = await deliver(srv, i.id, body, { "x-svc-signature": svcSignature(i.secret, body), "x-svc-delivery": `d-${Math.random()}` });
  await putInState(srv, r.body.taskId, "running");
  await putInState(srv, r.body.taskId, "completed");
  return { integration: i, taskId: r.body.taskId as string };
}

/** Another connection holds the write lock; the server's connection gives up after 20 ms instead of 5 s. */
function lockDatabase(srv: TestServer) {
  srv.core.sqlite.exec("PRAGMA busy_timeout = 20");
  const other = new Database(join(srv.dataDir, "ao.db"));
  other.exec("BEGIN EXCLUSIVE");
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    other.exec("ROLLBACK");
    other.close();
    srv.core.sqlite.exec("PRAGMA busy_timeout = 5000");
  };
}

// The child server and the look at what the kill left use the SQLite file of the data directory.
describe.skipIf(onPostgres)("a server killed with a callback in flight", () => {
  test("SIGKILL mid-send: the next server on the data directory sends it again with the same id; the sender's retry of the inbound delivery is a duplicate", async () => {
    const dataDir = tempDir();
    const rx = new Receiver();
    let release!: () => void;
    const hanging = new Promise<void>((r) => (release = r));
    rx.answer = async (_, n) => {
      if (n === 1) await hanging; // the first try never gets its answer
      return new Response("ok");
    };
    const child = Bun.spawn([process.execPath, join(import.meta.dir, "crash-child.ts")], {
      cwd: ROOT,
      env: { ...process.env, AO_CRASH_DATA_DIR: dataDir, AO_CRASH_CALLBACK_URL: rx.url() },
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    let s2: TestServer | null = null;
    try {
      // The child prints one JSON line once its task completed; read it without waiting for exit.
      let text = "";
      const reader = child.stdout.getReader();
      const info = await eventually(async () => {
        const { value, done } = await reader.read();
        if (value) text += new TextDecoder().decode(value);
        if (done) throw new Error(`the child exited: ${text}${await new Response(child.stderr).text()}`);
        const line = text.split("\n").find((l) => l.startsWith("{"));
        return line ? JSON.parse(line) : null;
      }, 20_000);
      secrets.push(info.secret);
      await rx.waitFor(1, 10_000);
      child.kill("SIGKILL");
      expect(await child.exited).not.toBe(0);

      // What the kill left: the row marked in flight, never recorded.
      const left = new Database(join(dataDir, "ao.db"));
      expect(left.query<{ status: string; attempts: number }, []>("SELECT status, attempts FROM deliveries").all()).toEqual([{ status: "delivering", attempts: 0 }]);
      left.close();

      s2 = await startTestServer({ dataDir, logger, allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [60_000], timeoutMs: 2000 } });
      await rx.waitFor(2, 5000);
      expect(rx.requests[1].headers["x-svc-delivery"]).toBe(rx.requests[0].headers["x-svc-delivery"]);
      expect(rx.requests[1].body).toBe(rx.requests[0].body);
      const row = await eventually(async () => (await rowsOf(s2!, info.taskId)).find((r) => r.status === "succeeded"));
      expect(row!.attempts).toBe(1);

      // The CI job retries its delivery after the outage: the same task, not a second one.
      const again = await deliver(s2, info.integrationId, info.body, { "x-svc-signature": svcSignature(info.secret, info.body), "x-svc-delivery": "crash-1" });
      expect(again).toEqual({ status: 200, body: { status: "duplicate", taskId: info.taskId } });
      expect((await s2.core.store.read(get<{ n: number }>("SELECT COUNT(*) AS n FROM tasks")))!.n).toBe(1);
      const log = await s2.api("GET", `/orgs/${info.orgId}/integrations/${info.integrationId}/deliveries`, { token: info.token });
      expect(log.body.items).toHaveLength(1);
      expect(log.body.items[0]).toMatchObject({ status: "succeeded", attempts: 1 });
    } finally {
      if (child.exitCode === null) child.kill("SIGKILL");
      release();
      await s2?.stop();
      await rx.stop();
    }
  }, 40_000);
});

// SQLite's write lock, held by another connection to the file (busy_timeout, BEGIN EXCLUSIVE).
describe.skipIf(onPostgres)("a locked database", () => {
  test("the result of a try cannot be written: it is written once the lock is gone; the callback is not sent twice", async () => {
    const rx = new Receiver();
    let unlock: (() => void) | null = null;
    rx.answer = () => {
      // The receiver answers 200 while another process holds the write lock.
      if (!unlock) unlock = lockDatabase(s);
      return new Response("ok");
    };
    try {
      const { taskId } = await completedCallingBack(s, w, rx.url());
      await rx.waitFor(1);
      await eventually(() => logLines.some((l) => l.startsWith("callback relay could not record a try; retrying")), 3000);
      await sleep(300);
      unlock!();
      const row = await eventually(async () => (await rowsOf(s, taskId)).find((r) => r.status === "succeeded"), 5000);
      expect(row).toMatchObject({ attempts: 1, last_status_code: 200 });
      await sleep(300);
      expect(rx.requests).toHaveLength(1);
    } finally {
      (unlock as (() => void) | null)?.();
      await rx.stop();
    }
  });

  test("the relay starts while the database is locked: the start does not throw, and rows left in flight are resumed once it is free", async () => {
    const rx = new Receiver();
    try {
      const { taskId } = await completedCallingBack(s, w, rx.url());
      await rx.waitFor(1);
      await eventually(async () => (await rowsOf(s, taskId))[0]?.status === "succeeded");
      // As a crash leaves it: in flight.
      await s.core.store.write(run("UPDATE deliveries SET status = 'delivering' WHERE task_id = ?", taskId));
      const unlock = lockDatabase(s);
      // A relay starting as a server's does (its module relay keeps running beside it).
      const relay = new Relay(s.core);
      try {
        expect(() => relay.start()).not.toThrow();
        await sleep(300);
        unlock();
        await rx.waitFor(2, 5000);
        expect(rx.requests[1].headers["x-svc-delivery"]).toBe(rx.requests[0].headers["x-svc-delivery"]);
      } finally {
        unlock();
        await relay.stop();
      }
    } finally {
      await rx.stop();
    }
  });
});

describe("the retry schedule", () => {
  const schedule = defaultConfig().callbacks.retryDelaysMs;
  const HOUR = 3600_000;

  test("by default: 8 tries over about a day, each wait longer than the last", () => {
    expect(schedule.length + 1).toBe(8);
    const total = schedule.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(20 * HOUR);
    expect(total).toBeLessThan(26 * HOUR);
    for (let i = 1; i < schedule.length; i++) expect(schedule[i]).toBeGreaterThan(schedule[i - 1]);
    // Even with every wait at -20% jitter, tries are left after an hour of failures.
    let at = 0;
    let triesInFirstHour = 1;
    for (const d of schedule) {
      at += d * 0.8;
      if (at <= HOUR) triesInFirstHour++;
    }
    expect(triesInFirstHour).toBeLessThan(8);
  });

  test("a receiver down for an hour (the default schedule run 36,000 times faster: an hour is 100 ms) gets the callback after it is back", async () => {
    const scale = 1 / 36_000;
    const fast = await startTestServer({ logger, allowPrivateCallbacks: true, callbacks: { retryDelaysMs: schedule.map((d) => d * scale), timeoutMs: 500 } });
    const probe = new Receiver();
    const port = probe.port;
    await probe.stop(); // down: connections are refused
    let back: Receiver | null = null;
    try {
      const fw = await makeWorld(fast);
      const downSince = Date.now();
      const { taskId } = await completedCallingBack(fast, fw, `http://127.0.0.1:${port}/callback`);
      // Down for (at least) the scaled hour, with several tries refused meanwhile.
      await eventually(async () => ((await rowsOf(fast, taskId))[0]?.attempts ?? 0) >= 3);
      await sleep(Math.max(0, HOUR * scale - (Date.now() - downSince)));
      const during = (await rowsOf(fast, taskId))[0];
      expect(["pending", "delivering"]).toContain(during.status); // "delivering" if a try is under way right now
      expect(during.last_status_code).toBeNull();
      back = new Receiver(port);
      await back.waitFor(1, 5000);
      const row = await eventually(async () => (await rowsOf(fast, taskId)).find((r) => r.status === "succeeded"));
      expect(row!.attempts).toBeGreaterThan(during.attempts);
      expect(row!.attempts).toBeLessThanOrEqual(8);
    } finally {
      await back?.stop();
      await fast.stop();
    }
  });

  test("jitter: callbacks failing together are spread out (each wait within ±20% of the schedule's)", async () => {
    const rx = new Receiver();
    rx.answer = () => new Response("down", { status: 503 });
    try {
      const tasks: string[] = [];
      for (let i = 0; i < 12; i++) tasks.push((await completedCallingBack(s, w, rx.url())).taskId);
      const rows = await eventually(async () => {
        const firsts = await Promise.all(tasks.map(async (t) => (await rowsOf(s, t))[0]));
        return firsts.every((r) => r?.status === "pending" && r.attempts === 1) ? firsts : null;
      });
      const waits = rows!.map((r) => r.next_attempt_at - Date.parse(r.last_attempt_at!));
      for (const wait of waits) {
        expect(wait).toBeGreaterThanOrEqual(60_000 * 0.8 - 1);
        expect(wait).toBeLessThanOrEqual(60_000 * 1.2 + 1);
      }
      expect(Math.max(...waits) - Math.min(...waits)).toBeGreaterThan(1000);
    } finally {
      await rx.stop();
    }
  });
});

describe("only 2xx is delivered", () => {
  const cases: [number, string][] = [
    [200, "succeeded"],
    [202, "succeeded"],
    [204, "succeeded"],
    [301, "pending"],
    [304, "pending"],
    [400, "pending"],
    [404, "pending"],
    [429, "pending"],
    [500, "pending"],
    [503, "pending"],
  ];
  test.each(cases)("the receiver answers %d -> %s", async (code, status) => {
    const rx = new Receiver();
    rx.answer = () => new Response(code === 204 || code === 304 ? null : "x", { status: code, headers: code === 301 ? { location: rx.url("/moved") } : {} });
    try {
      const { taskId } = await completedCallingBack(s, w, rx.url());
      const row = await eventually(async () => (await rowsOf(s, taskId)).find((r) => r.attempts === 1));
      expect(row).toMatchObject({ status, last_status_code: code });
      expect(rx.requests.map((r) => new URL(r.url).pathname)).toEqual(["/callback"]);
    } finally {
      await rx.stop();
    }
  });

  test("410 from the completion webhook turns the plugin off", async () => {
    const rx = new Receiver();
    rx.answer = () => new Response("gone", { status: 410 });
    const path = `/orgs/${w.owner.orgId}/plugins/completion-webhook`;
    try {
      const put = await s.api("PUT", path, { token: w.owner.accessToken, body: { url: rx.url("/done") } });
      expect(put.status).toBe(201);
      secrets.push(put.body.secret);
      const t = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { projectId: w.projectId, title: "by hand", prompt: "x" } });
      await putInState(s, t.body.id, "running");
      await putInState(s, t.body.id, "completed");
      await rx.waitFor(1);
      const log = await eventually(async () => {
        const r = await s.api("GET", `${path}/deliveries`, { token: w.owner.accessToken });
        return r.body.items[0]?.status === "failed" ? r.body.items : null;
      });
      expect(log[0]).toMatchObject({ lastStatusCode: 410, attempts: 1 });
      expect((await s.api("GET", path, { token: w.owner.accessToken })).body.enabled).toBe(false);
    } finally {
      await s.api("DELETE", path, { token: w.owner.accessToken });
      await rx.stop();
    }
  });
});

test("no secret ever reaches the log, whatever failed above", () => {
  expect(secrets.length).toBeGreaterThan(5);
  expect(logLines.length).toBeGreaterThan(0);
  const all = logLines.join("\n");
  for (const secret of secrets) expect(all).not.toContain(secret);
});
