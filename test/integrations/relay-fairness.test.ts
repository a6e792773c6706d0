// One slow receiver must not hold up everyone's callbacks: the relay sends at most IN_FLIGHT.perTarget
// (8) at a time to one integration (32 in all), so another integration's callback goes out at once
// meanwhile.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { IN_FLIGHT } from "../../src/modules/integrations/relay";
import { all } from "../../src/db/query";
import { deliver, eventually, makeIntegration, makeWorld, putInState, Receiver, sleep, svcSignature, type World } from "./fixtures";

let s: TestServer;
let w: World;
const slow = new Receiver();
const fast = new Receiver();
beforeAll(async () => {
  s = await startTestServer({ allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [60_000], timeoutMs: 10_000 } });
  w = await makeWorld(s);
});
afterAll(async () => {
  await s.stop();
  await Promise.all([slow.stop(), fast.stop()]);
});

/** Creates a task through the integration's hook and completes it: one callback each. */
async function completeVia(integration: { id: string; secret: string }) {
  // A body of its own each time: the same signed request twice is a replay (one task).
  const body = JSON.stringify({ title: "Ship it", prompt: `x ${crypto.randomUUID()}` });
  const r = await deliver(s, integration.id, body, { "x-svc-signature": svcSignature(integration.secret, body), "x-svc-delivery": crypto.randomUUID() });
  expect(r.status).toBe(201);
  await putInState(s, r.body.taskId, "running");
  await putInState(s, r.body.taskId, "completed");
}

test("a receiver that hangs gets 8 callbacks at a time; another integration's callback is sent meanwhile", async () => {
  // The slow receiver answers only when the test lets it; it records how many it held at once.
  const held: (() => void)[] = [];
  let open = 0;
  let most = 0;
  slow.answer = () =>
    new Promise<Response>((resolve) => {
      most = Math.max(most, ++open);
      held.push(() => {
        open--;
        resolve(new Response("ok"));
      });
    });
  const sluggish = await makeIntegration(s, w.owner, { kind: "signed_json", name: "slow", projectId: w.projectId, callbackUrl: slow.url() });
  const quick = await makeIntegration(s, w.owner, { kind: "signed_json", name: "fast", projectId: w.projectId, callbackUrl: fast.url() });

  // More than the whole relay could send at once: without the per-target limit they would take every slot.
  const many = IN_FLIGHT.total + 8;
  for (let i = 0; i < many; i++) await completeVia(sluggish);
  await slow.waitFor(IN_FLIGHT.perTarget);
  await sleep(300);
  expect(slow.requests).toHaveLength(IN_FLIGHT.perTarget);

  const sent = Date.now();
  await completeVia(quick);
  await fast.waitFor(1, 2000);
  expect(Date.now() - sent).toBeLessThan(2000);

  // Let the slow receiver answer, one at a time: the rest follow, never more than perTarget at once.
  while (slow.requests.length < many || held.length > 0) {
    await eventually(() => held.length > 0, 5000);
    held.shift()!();
  }
  const statuses = () => s.core.store.read(all<{ status: string; n: number }>("SELECT status, count(*) AS n FROM deliveries WHERE target_id = ? GROUP BY status", sluggish.id));
  await eventually(async () => (await statuses()).every((r) => r.status === "succeeded"));
  expect(await statuses()).toEqual([{ status: "succeeded", n: many }]);
  expect(most).toBe(IN_FLIGHT.perTarget);
});
