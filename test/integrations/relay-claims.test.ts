// Two relays on one database, as two servers will be: a delivery is claimed by one of them only
// (the claim updates a row only while it is still pending), so each try is sent once.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { Relay, relayOf } from "../../src/modules/integrations/relay";
import { get, run } from "../../src/db/query";
import { deliver, eventually, makeIntegration, makeWorld, putInState, Receiver, sleep, svcSignature, type World } from "./fixtures";

let s: TestServer;
let w: World;
const rx = new Receiver();
beforeAll(async () => {
  s = await startTestServer({ allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [60_000], timeoutMs: 5000 } });
  w = await makeWorld(s);
});
afterAll(async () => {
  await s.stop();
  await rx.stop();
});

test("two relays woken together over the same due rows: each delivery is sent once", async () => {
  // The second relay starts first: its start-up pass (rows a crash left in flight are due again) is over before any row is claimed.
  const second = new Relay(s.core);
  second.start();
  try {
    await sleep(100);
    const integration = await makeIntegration(s, w.owner, { kind: "signed_json", name: "CI", projectId: w.projectId, callbackUrl: rx.url() });
    // First tries answered 503: every row waits a minute for its retry.
    rx.answer = () => new Response("down", { status: 503 });
    const count = 40;
    for (let i = 0; i < count; i++) {
      const body = JSON.stringify({ title: "Ship it", prompt: `x ${crypto.randomUUID()}` });
      const r = await deliver(s, integration.id, body, { "x-svc-signature": svcSignature(integration.secret, body), "x-svc-delivery": crypto.randomUUID() });
      await putInState(s, r.body.taskId, "running");
      await putInState(s, r.body.taskId, "completed");
    }
    const waiting = () => get<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE target_id = ? AND status = 'pending' AND attempts = 1", integration.id);
    await eventually(async () => (await s.core.store.read(waiting()))!.n === count);
    expect(rx.requests).toHaveLength(count);

    // Every retry due now, and both relays look at once.
    rx.answer = () => new Response("ok");
    await s.core.store.write(run("UPDATE deliveries SET next_attempt_at = 0 WHERE target_id = ?", integration.id));
    relayOf(s.core)!.wake();
    second.wake();
    const succeeded = () => get<{ n: number }>("SELECT count(*) AS n FROM deliveries WHERE target_id = ? AND status = 'succeeded' AND attempts = 2", integration.id);
    await eventually(async () => (await s.core.store.read(succeeded()))!.n === count);
    await sleep(300);
    const retried = rx.requests.slice(count).map((r) => r.headers["x-svc-delivery"]);
    expect(retried).toHaveLength(count);
    expect(new Set(retried).size).toBe(count);
  } finally {
    await second.stop();
  }
}, 60_000); // 40 tasks through delivery and two changes each: over 15 s on PostgreSQL under load
