// Outbound callbacks through the outbox and relay, against real HTTP receivers on loopback:
// payload and signature (verified here with node:crypto), events, retries with a receiver that
// fails then recovers, times out, redirects, answers 410 or Retry-After, is down; redelivery;
// the completion webhook plugin; private targets refused at delivery time.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { hostname } from "node:os";
import { startTestServer, type TestServer } from "../helpers/server";
import { changeTask, txChangeTask } from "../../src/modules/tasks/store";
import { get } from "../../src/db/query";
import { deliver, eventually, makeIntegration, makeProject, makeWorld, putInState, Receiver, receiversStoppedAfterEach, sleep, svcSignature, type Received, type World } from "./fixtures";

let s: TestServer;
let w: World;
const receiver = receiversStoppedAfterEach();

beforeAll(async () => {
  s = await startTestServer({ allowPrivateCallbacks: true, callbacks: { retryDelaysMs: [100, 200, 300], timeoutMs: 300 } });
  w = await makeWorld(s);
});
afterAll(() => s.stop());

/** A signed JSON integration calling back to `url`, and a task it created. */
async function integrationWithTask(url: string, ref = "build-17") {
  const i = await makeIntegration(s, w.owner, { kind: "signed_json", name: "CI", projectId: w.projectId, callbackUrl: url });
  const body = JSON.stringify({ title: "Fix the flaky test", prompt: "tests/upload.test.ts fails once in 20 runs", ref });
  const r = await deliver(s, i.id, body, { "x-svc-signature": svcSignature(i.secret, body), "x-svc-delivery": `d-${Math.random()}` });
  expect(r.status).toBe(201);
  return { integration: i, taskId: r.body.taskId as string };
}

/** Verifies X-Svc-Signature the way a receiver would: t within 300 s, HMAC-SHA256(secret, "<t>.<body>"). */
function verify(req: Received, secret: string): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(req.headers["x-svc-signature"] ?? "");
  if (!m) return false;
  if (Math.abs(Date.now() / 1000 - Number(m[1])) > 300) return false;
  return createHmac("sha256", secret).update(`${m[1]}.${req.body}`).digest("hex") === m[2];
}

const deliveries = async (integrationId: string) =>
  (await s.api("GET", `/orgs/${w.owner.orgId}/integrations/${integrationId}/deliveries`, { token: w.owner.accessToken })).body.items;

const complete = async (taskId: string) => {
  await putInState(s, taskId, "running");
  return putInState(s, taskId, "completed");
};

describe("the callback", () => {
  test("completed: one signed POST with the payload, within 1 s of the state change; logged as succeeded", async () => {
    const rx = receiver();
    const { integration, taskId } = await integrationWithTask(rx.url());
    await putInState(s, taskId, "running");
    const changedAt = Date.now();
    await putInState(s, taskId, "completed", { summary: "Retried the upload on 503" });
    await rx.waitFor(1);
    const req = rx.requests[0];
    expect(req.at - changedAt).toBeLessThan(1000);
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["x-svc-delivery"]).toMatch(/^dlv_/);
    expect(verify(req, integration.secret)).toBe(true);
    expect(JSON.parse(req.body)).toEqual({
      taskId,
      status: "completed",
      title: "Fix the flaky test",
      summary: "Retried the upload on 503",
      url: `${s.core.config.publicUrl}/tasks/${taskId}`,
      ref: "build-17",
      event: "completed",
    });
    // The Host header is the URL's, although the relay connected to the address it checked.
    expect(new URL(req.url).host).toBe(new URL(rx.url()).host);

    const log = await eventually(async () => {
      const items = await deliveries(integration.id);
      return items[0]?.status === "succeeded" ? items : null;
    });
    expect(log).toHaveLength(1);
    expect(log[0]).toMatchObject({ id: req.headers["x-svc-delivery"], taskId, event: "completed", status: "succeeded", attempts: 1, lastStatusCode: 200, lastError: null, nextAttemptAt: null });
    expect(log[0].latencyMs).toBeGreaterThanOrEqual(0);
    expect(log[0].deliveredAt).toBeString();
  });

  test("events: failed -> failed; needs_input and needs_approval -> needs_attention; running, paused, cancelled -> none", async () => {
    const rx = receiver();
    const { integration, taskId } = await integrationWithTask(rx.url());
    await putInState(s, taskId, "running");
    await putInState(s, taskId, "needs_input");
    await putInState(s, taskId, "running");
    await putInState(s, taskId, "needs_approval");
    await putInState(s, taskId, "running");
    await putInState(s, taskId, "failed");
    await rx.waitFor(3);
    await sleep(300);
    const events = rx.requests.map((r) => JSON.parse(r.body)).sort((a, b) => a.event.localeCompare(b.event));
    expect(events.map((e) => [e.event, e.status])).toEqual([
      ["failed", "failed"],
      ["needs_attention", "needs_input"],
      ["needs_attention", "needs_approval"],
    ]);
    expect(new Set(rx.requests.map((r) => r.headers["x-svc-delivery"])).size).toBe(3);
    for (const r of rx.requests) expect(verify(r, integration.secret)).toBe(true);

    const other = await integrationWithTask(rx.url());
    await putInState(s, other.taskId, "running");
    await changeTask(s.core, null, other.taskId, () => ({ patch: { status: "cancelled" }, events: [] }));
    await sleep(300);
    expect(rx.requests).toHaveLength(3);
  });

  test("needs_attention is sent once per question: pausing and resuming a task that waits for an answer sends nothing more; the next question does", async () => {
    const rx = receiver();
    const plugin = receiver();
    const pluginPath = `/orgs/${w.owner.orgId}/plugins/completion-webhook`;
    await s.api("PUT", pluginPath, { token: w.owner.accessToken, body: { url: plugin.url("/done"), projectId: w.projectId } });
    try {
      const { taskId } = await integrationWithTask(rx.url());
      const act = async (action: string) => {
        const r = await s.api("POST", `/orgs/${w.owner.orgId}/tasks/${taskId}/actions`, { token: w.owner.accessToken, body: { action } });
        expect(r.status).toBe(200);
        return r.body.status as string;
      };
      await putInState(s, taskId, "running");
      await putInState(s, taskId, "needs_input");
      await rx.waitFor(1);
      for (const round of [1, 2]) expect([await act("pause"), await act("resume"), round]).toEqual(["paused", "needs_input", round]);
      // The answer, then an approval the worker asks for, paused and resumed too.
      await putInState(s, taskId, "running");
      await putInState(s, taskId, "needs_approval");
      expect(await act("pause")).toBe("paused");
      expect(await act("resume")).toBe("needs_approval");
      // Each callback's delivery row is written with the change that causes it: two a target, no more.
      const written = await s.core.store.read(get<{ n: number }>("SELECT COUNT(*) AS n FROM deliveries WHERE task_id = ?", taskId));
      expect(written!.n).toBe(4);
      await rx.waitFor(2);
      await plugin.waitFor(2);
      for (const target of [rx, plugin]) {
        expect(target.requests.map((r) => [JSON.parse(r.body).event, JSON.parse(r.body).status])).toEqual([
          ["needs_attention", "needs_input"],
          ["needs_attention", "needs_approval"],
        ]);
      }
    } finally {
      await s.api("DELETE", pluginPath, { token: w.owner.accessToken });
    }
  });

  test("the outbox row is written in the transaction of the change: present at once, absent when it rolls back", async () => {
    const rx = receiver();
    rx.answer = () => new Response("no", { status: 500 });
    const { taskId } = await integrationWithTask(rx.url());
    await putInState(s, taskId, "running");
    const count = async () => (await s.core.store.read(get<{ n: number }>("SELECT COUNT(*) AS n FROM deliveries WHERE task_id = ?", taskId)))!.n;
    const failing = function* () {
      yield* txChangeTask(s.core, null, taskId, () => ({ patch: { status: "completed" }, events: [] }));
      throw new Error("the change fails after the hook ran");
    };
    await expect(s.core.store.write(failing())).rejects.toThrow("the change fails");
    expect(await count()).toBe(0);
    await putInState(s, taskId, "completed");
    expect(await count()).toBe(1); // as soon as the change commits, before the relay had a chance to run
  });

  test("tasks the integration did not create get no callback from it", async () => {
    const rx = receiver();
    await makeIntegration(s, w.owner, { kind: "signed_json", name: "quiet", projectId: w.projectId, callbackUrl: rx.url() });
    const t = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { projectId: w.projectId, title: "by hand", prompt: "x" } });
    await complete(t.body.id);
    await sleep(300);
    expect(rx.requests).toHaveLength(0);
  });
});

describe("retries and failures", () => {
  test("500, 500, then 200: three tries with the same delivery id and body, backing off; succeeded after 3 attempts", async () => {
    const rx = receiver();
    rx.answer = (_, n) => new Response(n <= 2 ? "down" : "ok", { status: n <= 2 ? 500 : 200 });
    const { integration, taskId } = await integrationWithTask(rx.url());
    await complete(taskId);
    await rx.waitFor(3);
    const ids = new Set(rx.requests.map((r) => r.headers["x-svc-delivery"]));
    expect(ids.size).toBe(1);
    expect(new Set(rx.requests.map((r) => r.body)).size).toBe(1);
    // Delays of 100 and 200 ms with ±20% jitter.
    expect(rx.requests[1].at - rx.requests[0].at).toBeGreaterThanOrEqual(75);
    expect(rx.requests[2].at - rx.requests[1].at).toBeGreaterThanOrEqual(155);
    const log = await eventually(async () => ((await deliveries(integration.id))[0]?.status === "succeeded" ? await deliveries(integration.id) : null));
    expect(log[0]).toMatchObject({ attempts: 3, lastStatusCode: 200, status: "succeeded" });
  });

  test("always 500: gives up after the schedule's tries (4 here), logged as failed with the last status", async () => {
    const rx = receiver();
    rx.answer = () => new Response("down", { status: 500 });
    const { integration, taskId } = await integrationWithTask(rx.url());
    await complete(taskId);
    await rx.waitFor(4, 5000);
    const log = await eventually(async () => ((await deliveries(integration.id))[0]?.status === "failed" ? await deliveries(integration.id) : null));
    expect(log[0]).toMatchObject({ attempts: 4, lastStatusCode: 500, status: "failed", nextAttemptAt: null });
    expect(log[0].lastError).toContain("gave up after 4 tries");
    await sleep(500);
    expect(rx.requests).toHaveLength(4);
  });

  test("a receiver that does not answer in time is retried; the log says it timed out", async () => {
    const rx = receiver();
    rx.answer = async (_, n) => {
      if (n === 1) await sleep(1000);
      return new Response("ok");
    };
    const { integration, taskId } = await integrationWithTask(rx.url());
    await complete(taskId);
    await rx.waitFor(2, 5000);
    const log = await eventually(async () => ((await deliveries(integration.id))[0]?.status === "succeeded" ? await deliveries(integration.id) : null));
    expect(log[0].attempts).toBeGreaterThanOrEqual(2); // 3 when a loaded machine's second answer ran past 300 ms too
    const first = await s.core.store.read(get<any>("SELECT * FROM delivery_tries WHERE delivery_id = ? AND attempt = 1", log[0].id));
    expect(first).toMatchObject({ outcome: "retrying", status_code: null });
    expect(first.error).toContain("timed out after 300 ms");
    expect(rx.requests[1].at - rx.requests[0].at).toBeGreaterThanOrEqual(300); // the timeout, then 100 ms' backoff less arrival lag
  });

  test("redirects are not followed: a 302 is a failed try, the Location never hears from us", async () => {
    const rx = receiver();
    rx.answer = (req) => (req.url.endsWith("/elsewhere") ? new Response("ok") : Response.redirect(rx.url("/elsewhere"), 302));
    const { integration, taskId } = await integrationWithTask(rx.url());
    await complete(taskId);
    await rx.waitFor(2, 5000);
    const log = await deliveries(integration.id);
    expect(log[0].lastStatusCode).toBe(302);
    expect(log[0].lastError).toContain("redirect");
    expect(rx.requests.every((r) => r.url.endsWith("/callback"))).toBe(true);
  });

  test("410 Gone: no more tries, the integration's callbacks are disabled until its URL is set again", async () => {
    const rx = receiver();
    rx.answer = () => new Response("gone", { status: 410 });
    const { integration, taskId } = await integrationWithTask(rx.url());
    await complete(taskId);
    await rx.waitFor(1);
    const log = await eventually(async () => ((await deliveries(integration.id))[0]?.status === "failed" ? await deliveries(integration.id) : null));
    expect(log[0]).toMatchObject({ attempts: 1, lastStatusCode: 410 });
    const rec = await s.api("GET", `/orgs/${w.owner.orgId}/integrations/${integration.id}`, { token: w.owner.accessToken });
    expect(rec.body.callbackDisabledAt).toBeString();

    // A second task of the integration completes: nothing is written or sent.
    const body = JSON.stringify({ title: "again", prompt: "x" });
    const second = await deliver(s, integration.id, body, { "x-svc-signature": svcSignature(integration.secret, body) });
    await complete(second.body.taskId);
    await sleep(400);
    expect(rx.requests).toHaveLength(1);
    expect(await deliveries(integration.id)).toHaveLength(1);

    // Setting the URL again re-enables callbacks.
    rx.answer = () => new Response("ok");
    const patched = await s.api("PATCH", `/orgs/${w.owner.orgId}/integrations/${integration.id}`, { token: w.owner.accessToken, body: { callbackUrl: rx.url() } });
    expect(patched.body.callbackDisabledAt).toBeNull();
    const third = await deliver(s, integration.id, JSON.stringify({ title: "third", prompt: "x" }), {
      "x-svc-signature": svcSignature(integration.secret, JSON.stringify({ title: "third", prompt: "x" })),
    });
    await complete(third.body.taskId);
    await rx.waitFor(2);
  });

  test("Retry-After is honoured: the next try waits at least that long", async () => {
    const rx = receiver();
    rx.answer = (_, n) => (n === 1 ? new Response("busy", { status: 503, headers: { "retry-after": "1" } }) : new Response("ok"));
    const { taskId } = await integrationWithTask(rx.url());
    await complete(taskId);
    await rx.waitFor(2, 5000);
    expect(rx.requests[1].at - rx.requests[0].at).toBeGreaterThanOrEqual(950);
  });

  test("a receiver that is down (connection refused) gets the callback once it is back", async () => {
    const probe = new Receiver();
    const port = probe.port;
    await probe.stop();
    const { integration, taskId } = await integrationWithTask(`http://127.0.0.1:${port}/callback`);
    await complete(taskId);
    await eventually(async () => (await deliveries(integration.id))[0]?.attempts >= 1);
    const first = (await deliveries(integration.id))[0];
    expect(first.status).toBe("pending");
    expect(first.lastStatusCode).toBeNull();
    expect(first.lastError).toBeString();
    const back = receiver(port);
    await back.waitFor(1, 5000);
    expect(back.requests[0].headers["x-svc-delivery"]).toBe(first.id);
  });

  test("an integration disabled while its callback is pending: the retries stop", async () => {
    const rx = receiver();
    rx.answer = () => new Response("down", { status: 500 });
    const { integration, taskId } = await integrationWithTask(rx.url());
    await complete(taskId);
    await rx.waitFor(1);
    await s.api("PATCH", `/orgs/${w.owner.orgId}/integrations/${integration.id}`, { token: w.owner.accessToken, body: { enabled: false } });
    const log = await eventually(async () => ((await deliveries(integration.id))[0]?.status === "failed" ? await deliveries(integration.id) : null));
    expect(log[0].lastError).toBe("the integration is disabled");
    await sleep(300);
    expect(rx.requests).toHaveLength(1);
  });
});

describe("redelivery", () => {
  test("POST .../redeliver sends the same delivery again with the same id and body", async () => {
    const rx = receiver();
    const { integration, taskId } = await integrationWithTask(rx.url());
    await complete(taskId);
    await rx.waitFor(1);
    const [d] = await eventually(async () => ((await deliveries(integration.id))[0]?.status === "succeeded" ? await deliveries(integration.id) : null));
    const r = await s.api("POST", `/orgs/${w.owner.orgId}/integrations/${integration.id}/deliveries/${d.id}/redeliver`, { token: w.owner.accessToken });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ id: d.id, status: "pending" });
    await rx.waitFor(2);
    expect(rx.requests[1].headers["x-svc-delivery"]).toBe(d.id);
    expect(rx.requests[1].body).toBe(rx.requests[0].body);
    expect(verify(rx.requests[1], integration.secret)).toBe(true);
    const after = await eventually(async () => ((await deliveries(integration.id))[0]?.attempts === 2 ? await deliveries(integration.id) : null));
    expect(after[0].status).toBe("succeeded");

    for (const [path, token, status] of [
      [`/orgs/${w.owner.orgId}/integrations/${integration.id}/deliveries/dlv_nope/redeliver`, w.owner.accessToken, 404],
      [`/orgs/${w.other.orgId}/integrations/${integration.id}/deliveries/${d.id}/redeliver`, w.other.accessToken, 404],
      [`/orgs/${w.owner.orgId}/integrations/${integration.id}/deliveries/${d.id}/redeliver`, w.member.accessToken, 403],
    ] as [string, string, number][]) {
      expect((await s.api("POST", path, { token })).status).toBe(status);
    }
  });
});

describe("completion webhook plugin", () => {
  test("every task of the org, whatever created it, signed with the plugin's own secret; projectId narrows it", async () => {
    const rx = receiver();
    const path = `/orgs/${w.owner.orgId}/plugins/completion-webhook`;
    const put = await s.api("PUT", path, { token: w.owner.accessToken, body: { url: rx.url("/done") } });
    expect(put.status).toBe(201);
    const secret = put.body.secret as string;

    const byHand = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { projectId: w.projectId, title: "by hand", prompt: "x" } });
    await complete(byHand.body.id);
    await rx.waitFor(1);
    expect(verify(rx.requests[0], secret)).toBe(true);
    expect(JSON.parse(rx.requests[0].body)).toMatchObject({ taskId: byHand.body.id, event: "completed", ref: null, title: "by hand" });

    // A task from a signed JSON integration with its own callback: both hear of it, each with its own secret.
    const cb = receiver();
    const { integration, taskId } = await integrationWithTask(cb.url());
    await complete(taskId);
    await rx.waitFor(2);
    await cb.waitFor(1);
    expect(verify(rx.requests[1], secret)).toBe(true);
    expect(verify(rx.requests[1], integration.secret)).toBe(false);
    expect(verify(cb.requests[0], integration.secret)).toBe(true);
    expect(JSON.parse(rx.requests[1].body).ref).toBe("build-17");

    // Narrowed to another project: tasks of this project no longer call it.
    const p2 = await makeProject(s, w.owner, "plugin-scope");
    await s.api("PUT", path, { token: w.owner.accessToken, body: { url: rx.url("/done"), projectId: p2 } });
    const outside = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { projectId: w.projectId, title: "outside", prompt: "x" } });
    const inside = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { projectId: p2, title: "inside", prompt: "x" } });
    await complete(outside.body.id);
    await complete(inside.body.id);
    await rx.waitFor(3);
    await sleep(300);
    expect(rx.requests).toHaveLength(3);
    expect(JSON.parse(rx.requests[2].body).taskId).toBe(inside.body.id);

    const log = await s.api("GET", `${path}/deliveries`, { token: w.owner.accessToken });
    expect(log.status).toBe(200);
    expect(log.body.items).toHaveLength(3);
    const again = await s.api("POST", `${path}/deliveries/${log.body.items[0].id}/redeliver`, { token: w.owner.accessToken });
    expect(again.status).toBe(202);
    await rx.waitFor(4);
    expect(rx.requests[3].headers["x-svc-delivery"]).toBe(log.body.items[0].id);

    // Disabled: nothing more.
    await s.api("PUT", path, { token: w.owner.accessToken, body: { url: rx.url("/done"), enabled: false } });
    const quiet = await s.api("POST", `/orgs/${w.owner.orgId}/tasks`, { token: w.owner.accessToken, body: { projectId: w.projectId, title: "quiet", prompt: "x" } });
    await complete(quiet.body.id);
    await sleep(300);
    expect(rx.requests).toHaveLength(4);
    await s.api("DELETE", path, { token: w.owner.accessToken });
  });
});

describe("private targets at delivery time", () => {
  test("with private callbacks not allowed, a host resolving to loopback is refused when sending; nothing leaves", async () => {
    const rx = receiver();
    // Configured while allowed, with this machine's name (not an address, and not "localhost",
    // which is refused by name) so only the address it resolves to tells.
    const { integration, taskId } = await integrationWithTask(`http://${hostname()}:${rx.port}/callback`);
    s.core.config.allowPrivateCallbacks = false;
    try {
      await complete(taskId);
      const log = await eventually(async () => ((await deliveries(integration.id))[0]?.status === "failed" ? await deliveries(integration.id) : null));
      expect(log[0].lastError).toContain(`${hostname()} resolves to `);
      expect(log[0].attempts).toBe(1);
      await sleep(200);
      expect(rx.requests).toHaveLength(0);
    } finally {
      s.core.config.allowPrivateCallbacks = true;
    }
  });
});
