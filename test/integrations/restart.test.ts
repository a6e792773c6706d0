// No callback is lost across a restart: a server stopped with a delivery pending, and a server
// that crashed with a delivery in flight (its database copied mid-send, as a crash leaves it),
// both send it on the next start with the same X-Svc-Delivery id.
import { afterAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { freshDatabase } from "../helpers/postgres";
import { get } from "../../src/db/query";
import { deliver, eventually, makeIntegration, makeWorld, putInState, Receiver, svcSignature } from "./fixtures";

const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(join(tmpdir(), "ao-int-restart-"));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const options = (dataDir: string, databaseUrl: string | null, timeoutMs = 1000) => ({ dataDir, databaseUrl, allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [1200, 1200], timeoutMs } });
/** The database the servers of one test share: on PostgreSQL one fresh database (a server's data directory names it on SQLite). */
const sharedDatabase = async () => (onPostgres ? await freshDatabase() : null);

async function completedTaskCallingBack(s: TestServer, url: string) {
  const w = await makeWorld(s);
  const i = await makeIntegration(s, w.owner, { kind: "signed_json", name: "CI", projectId: w.projectId, callbackUrl: url });
  const body = JSON.stringify({ title: "Ship it", prompt: "x", ref: "r-1" });
  const r = await deliver(s, i.id, body, { "x-svc-signature": svcSignature(i.secret, body), "x-svc-delivery": "d-1" });
  await putInState(s, r.body.taskId, "running");
  await putInState(s, r.body.taskId, "completed");
  return { w, i, taskId: r.body.taskId as string };
}

test("stopped with a delivery pending (receiver failing): the next server on the same data directory sends it", async () => {
  const dataDir = tempDir();
  const rx = new Receiver();
  rx.answer = () => new Response("down", { status: 500 });
  const databaseUrl = await sharedDatabase();
  const s1 = await startTestServer(options(dataDir, databaseUrl));
  const { w, i } = await completedTaskCallingBack(s1, rx.url());
  await rx.waitFor(1);
  // The failed try is recorded; the next one is due in about 1.2 s.
  await eventually(async () => (await s1.core.store.read(get<{ n: number }>("SELECT COUNT(*) AS n FROM deliveries WHERE status = 'pending' AND attempts = 1")))!.n === 1);
  await s1.stop();

  rx.answer = () => new Response("ok");
  const s2 = await startTestServer(options(dataDir, databaseUrl));
  try {
    await rx.waitFor(2, 5000);
    expect(rx.requests[1].headers["x-svc-delivery"]).toBe(rx.requests[0].headers["x-svc-delivery"]);
    expect(rx.requests[1].body).toBe(rx.requests[0].body);
    const log = await eventually(async () => {
      const r = await s2.api("GET", `/orgs/${w.owner.orgId}/integrations/${i.id}/deliveries`, { token: w.owner.accessToken });
      return r.body.items?.[0]?.status === "succeeded" ? r.body.items : null;
    });
    expect(log[0].attempts).toBe(2);
  } finally {
    await s2.stop();
    await rx.stop();
  }
});

// The crash is a copy of the SQLite file taken mid-send (VACUUM INTO).
test.skipIf(onPostgres)("crashed with a delivery in flight: it is resumed on startup, same delivery id", async () => {
  const dataDir = tempDir();
  const crashDir = tempDir();
  const rx = new Receiver();
  let release!: () => void;
  const hanging = new Promise<void>((r) => (release = r));
  rx.answer = async (_, n) => {
    if (n === 1) await hanging;
    return new Response("ok");
  };
  const s1 = await startTestServer(options(dataDir, null, 10_000));
  await completedTaskCallingBack(s1, rx.url());
  await rx.waitFor(1);
  // The database as a crash at this instant leaves it: the row is marked in flight.
  s1.core.sqlite.exec(`VACUUM INTO '${join(crashDir, "ao.db")}'`);
  copyFileSync(join(dataDir, "master.key"), join(crashDir, "master.key"));
  const snapshot = new Database(join(crashDir, "ao.db"), { readonly: true });
  expect(snapshot.query<{ status: string }, []>("SELECT status FROM deliveries").all()).toEqual([{ status: "delivering" }]);
  snapshot.close();
  release();
  await s1.stop();

  const before = rx.requests.length;
  const s2 = await startTestServer(options(crashDir, null));
  try {
    await rx.waitFor(before + 1, 5000);
    const resent = rx.requests[before];
    expect(resent.headers["x-svc-delivery"]).toBe(rx.requests[0].headers["x-svc-delivery"]);
    expect(resent.body).toBe(rx.requests[0].body);
    await eventually(async () => (await s2.core.store.read(get<{ status: string }>("SELECT status FROM deliveries")))?.status === "succeeded");
  } finally {
    await s2.stop();
    await rx.stop();
  }
});

test("stopped mid-send: the interrupted try is not counted and the next start sends it again", async () => {
  const dataDir = tempDir();
  const rx = new Receiver();
  rx.answer = async (_, n) => {
    if (n === 1) await new Promise((r) => setTimeout(r, 3000));
    return new Response("ok");
  };
  const databaseUrl = await sharedDatabase();
  const s1 = await startTestServer(options(dataDir, databaseUrl, 10_000));
  await completedTaskCallingBack(s1, rx.url());
  await rx.waitFor(1);
  await s1.stop();
  const s2 = await startTestServer(options(dataDir, databaseUrl));
  try {
    await rx.waitFor(2, 5000);
    expect(rx.requests[1].headers["x-svc-delivery"]).toBe(rx.requests[0].headers["x-svc-delivery"]);
    const row = await eventually(() => s2.core.store.read(get<{ status: string; attempts: number }>("SELECT status, attempts FROM deliveries WHERE status = 'succeeded'")));
    expect(row!.attempts).toBe(1);
  } finally {
    await s2.stop();
    await rx.stop();
  }
});
