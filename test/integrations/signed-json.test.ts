// Signed JSON deliveries (a CI pipeline): X-Svc-Signature t=,v1= over "<t>.<body>" within 300 s,
// optional X-Svc-Delivery, the task body validated; forged, stale, replayed, rotated secrets.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { startTestServer, type TestServer } from "../helpers/server";
import { countTasksOf, deliver, makeIntegration, makeProject, makeWorld, nowSec, svcSignature, taskRow, type World } from "./fixtures";

let s: TestServer;
let w: World;
let ci: { id: string; secret: string };
let seq = 0;

beforeAll(async () => {
  s = await startTestServer();
  w = await makeWorld(s);
  ci = await makeIntegration(s, w.owner, { kind: "signed_json", name: "CI", projectId: w.projectId });
});
afterAll(() => s.stop());

const task = (extra: Record<string, unknown> = {}) => ({ title: `Fix build ${++seq}`, prompt: "The nightly build fails at the lint step.", ...extra });

function send(payload: unknown, opts: { secret?: string; t?: number; delivery?: string | null; signature?: string; id?: string } = {}) {
  const body = typeof payload === "string" ? payload : JSON.stringify(payload);
  const headers: Record<string, string> = { "x-svc-signature": opts.signature ?? svcSignature(opts.secret ?? ci.secret, body, opts.t) };
  if (opts.delivery !== null) headers["x-svc-delivery"] = opts.delivery ?? `ci-run-${Date.now()}-${++seq}`;
  return deliver(s, opts.id ?? ci.id, body, headers);
}

describe("created", () => {
  test("a valid delivery -> 201; the task has the body's fields, its source and ref", async () => {
    const r = await send(task({ priority: "HIGH", ref: "pipeline/4711" }), { delivery: "run-4711" });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ status: "created", taskId: expect.stringMatching(/^tsk_/) });
    const got = await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${r.body.taskId}`, { token: w.owner.accessToken });
    expect(got.body).toMatchObject({
      priority: "HIGH",
      kind: "task",
      createdBy: { type: "integration", id: ci.id },
      source: { integrationId: ci.id, integrationKind: "signed_json", deliveryId: "run-4711", ref: "pipeline/4711" },
    });
  });

  test("kind review with base and head (400 while the project has no repository to review, nothing created); kind plan", async () => {
    const before = await countTasksOf(s, ci.id);
    const bare = await send(task({ kind: "review", review: { base: "main", head: "feature/x" } }));
    expect(bare.status).toBe(400);
    expect(bare.body.error).toMatchObject({ code: "validation_failed", details: [{ field: "kind", message: "review needs a project with a repository" }] });
    expect(await countTasksOf(s, ci.id)).toBe(before);
    const added = await s.api("POST", `/orgs/${w.owner.orgId}/projects/${w.projectId}/repositories`, { token: w.owner.accessToken, body: { url: "https://example.com/acme/ci.git" } });
    expect(added.status).toBe(201);
    const review = await send(task({ kind: "review", review: { base: "main", head: "feature/x" } }));
    expect(review.status).toBe(201);
    expect(JSON.parse((await taskRow(s, review.body.taskId)).review)).toEqual({ base: "main", head: "feature/x" });
    const plan = await send(task({ kind: "plan" }));
    expect((await taskRow(s, plan.body.taskId)).kind).toBe("plan");
  });

  test("a timestamp 299 s away in either direction is still accepted", async () => {
    expect((await send(task(), { t: nowSec() - 299 })).status).toBe(201);
    expect((await send(task(), { t: nowSec() + 299 })).status).toBe(201);
  });
});

describe("duplicates", () => {
  test("the same X-Svc-Delivery -> 200 duplicate with the first taskId, even with another body", async () => {
    const first = await send(task(), { delivery: "dup-1" });
    expect(first.status).toBe(201);
    expect(await send(task(), { delivery: "dup-1" })).toEqual({ status: 200, body: { status: "duplicate", taskId: first.body.taskId } });
  });

  test("the same body without a delivery id, signed anew -> a second task (only the delivery id dedupes)", async () => {
    const body = task();
    const a = await send(body, { delivery: null, t: nowSec() - 1 });
    const b = await send(body, { delivery: null });
    expect(a.status).toBe(201);
    expect(b.status).toBe(201);
    expect(a.body.taskId).not.toBe(b.body.taskId);
  });

  test("a replay of the very same signed request without a delivery id -> duplicate", async () => {
    const body = JSON.stringify(task());
    const signature = svcSignature(ci.secret, body);
    const first = await deliver(s, ci.id, body, { "x-svc-signature": signature });
    const replay = await deliver(s, ci.id, body, { "x-svc-signature": signature });
    expect(first.status).toBe(201);
    expect(replay).toEqual({ status: 200, body: { status: "duplicate", taskId: first.body.taskId } });
  });

  test("a captured signed request replayed with another, no, or a new delivery id -> duplicate of the one task", async () => {
    const before = await countTasksOf(s, ci.id);
    const body = JSON.stringify(task());
    const signature = svcSignature(ci.secret, body);
    const first = await deliver(s, ci.id, body, { "x-svc-signature": signature, "x-svc-delivery": "captured-1" });
    expect(first.status).toBe(201);
    const duplicate = { status: 200, body: { status: "duplicate", taskId: first.body.taskId } };
    expect(await deliver(s, ci.id, body, { "x-svc-signature": signature, "x-svc-delivery": "captured-2" })).toEqual(duplicate);
    expect(await deliver(s, ci.id, body, { "x-svc-signature": signature })).toEqual(duplicate);
    // Extra v1 values (tried in turn, as for a secret rotation) do not make it another request.
    const padded = `${signature},v1=${"0".repeat(64)}`;
    expect(await deliver(s, ci.id, body, { "x-svc-signature": padded, "x-svc-delivery": "captured-3" })).toEqual(duplicate);
    expect(await deliver(s, ci.id, body, { "x-svc-signature": signature.toUpperCase().replace("T=", "t=").replace("V1=", "v1="), "x-svc-delivery": "captured-4" })).toEqual(duplicate);
    expect(await countTasksOf(s, ci.id)).toBe(before + 1);
  });

  test("a request first sent without a delivery id, replayed with one -> duplicate", async () => {
    const body = JSON.stringify(task());
    const signature = svcSignature(ci.secret, body);
    const first = await deliver(s, ci.id, body, { "x-svc-signature": signature });
    expect(first.status).toBe(201);
    expect(await deliver(s, ci.id, body, { "x-svc-signature": signature, "x-svc-delivery": "late-id" })).toEqual({
      status: 200,
      body: { status: "duplicate", taskId: first.body.taskId },
    });
  });

  test("one delivery id sent 25 times at once -> exactly one task", async () => {
    const before = await countTasksOf(s, ci.id);
    const results = await Promise.all(Array.from({ length: 25 }, () => send(task(), { delivery: "burst-1" })));
    expect(results.filter((r) => r.status === 201).length).toBe(1);
    expect(results.filter((r) => r.status === 200 && r.body.status === "duplicate").length).toBe(24);
    expect(new Set(results.map((r) => r.body.taskId)).size).toBe(1);
    expect(await countTasksOf(s, ci.id)).toBe(before + 1);
  });

  test("delivery ids are per integration: the same id at another integration makes its own task", async () => {
    const other = await makeIntegration(s, w.owner, { kind: "signed_json", name: "CI 2", projectId: w.projectId });
    const a = await send(task(), { delivery: "shared-id" });
    const b = await send(task(), { delivery: "shared-id", id: other.id, secret: other.secret });
    expect([a.status, b.status]).toEqual([201, 201]);
  });
});

describe("refused", () => {
  test("stale: more than 300 s old or ahead -> 401 saying so", async () => {
    // Ahead by 302, not 301: a request that crosses a second boundary on its way in would make 301 a 300.
    for (const t of [nowSec() - 301, nowSec() + 302, 1]) {
      const r = await send(task(), { t });
      expect(r.status).toBe(401);
      expect(r.body.error.message).toContain("300 s");
    }
  });

  test("forged or malformed signatures -> 401 with one uniform message", async () => {
    const body = JSON.stringify(task());
    const t = nowSec();
    const v1 = createHmac("sha256", ci.secret).update(`${t}.${body}`).digest("hex");
    const cases = [
      svcSignature("aos_wrong", body, t), // another secret
      `t=${t + 1},v1=${v1}`, // the signature of another timestamp
      `v1=${v1}`, // no timestamp
      `t=${t}`, // no signature
      `t=abc,v1=${v1}`,
      `t=${t},v1=${v1.slice(0, 63)}`,
      `t=${t},v1=`,
      `sha256=${v1}`,
      "",
    ];
    const messages = new Set<string>();
    for (const signature of cases) {
      const r = await deliver(s, ci.id, body, signature ? { "x-svc-signature": signature } : {});
      expect(`${signature} -> ${r.status}`).toBe(`${signature} -> 401`);
      messages.add(r.body.error.message);
    }
    expect(messages.size).toBe(1);
    // Several v1 values: one matching is enough (as when a sender signs with two secrets).
    const ok = await deliver(s, ci.id, body, { "x-svc-signature": `t=${t},v1=${"0".repeat(64)},v1=${v1}` });
    expect(ok.status).toBe(201);
  });

  test("tampered or truncated body -> 401", async () => {
    const body = JSON.stringify(task());
    const signature = svcSignature(ci.secret, body);
    for (const sent of [body.replace("lint", "test"), body.slice(0, -1)]) {
      expect((await deliver(s, ci.id, sent, { "x-svc-signature": signature })).status).toBe(401);
    }
  });

  test("after rotate-secret the old secret stops at once and the new one works", async () => {
    const own = await makeIntegration(s, w.owner, { kind: "signed_json", name: "rotating", projectId: w.projectId });
    expect((await send(task(), { id: own.id, secret: own.secret })).status).toBe(201);
    const rotated = await s.api("POST", `/orgs/${w.owner.orgId}/integrations/${own.id}/rotate-secret`, { token: w.owner.accessToken });
    expect((await send(task(), { id: own.id, secret: own.secret })).status).toBe(401);
    expect((await send(task(), { id: own.id, secret: rotated.body.secret })).status).toBe(201);
  });

  const invalidBodies: [string, unknown, string][] = [
    ["no title", { prompt: "x" }, "title"],
    ["empty prompt", { title: "x", prompt: "" }, "prompt"],
    ["title too long", { title: "t".repeat(201), prompt: "x" }, "title"],
    ["unknown priority", { title: "x", prompt: "x", priority: "high" }, "priority"],
    ["unknown kind", { title: "x", prompt: "x", kind: "epic" }, "kind"],
    ["review without refs", { title: "x", prompt: "x", kind: "review" }, "review"],
    ["ref not a string", { title: "x", prompt: "x", ref: 42 }, "ref"],
    ["a misspelt field", { title: "x", prompt: "x", priorty: "HIGH" }, "priorty"],
    ["a project of its own", { title: "x", prompt: "x", projectId: "prj_other" }, "projectId"],
    ["an unknown field in the review", { title: "x", prompt: "x", kind: "review", review: { base: "main", head: "feature", merge: true } }, "review.merge"],
  ];
  test.each(invalidBodies)("%s -> 400 validation_failed naming the field, no task", async (_, body, field) => {
    const before = await countTasksOf(s, ci.id);
    const r = await send(body);
    expect(await countTasksOf(s, ci.id)).toBe(before);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
    expect(r.body.error.details.map((d: any) => d.field)).toContain(field);
  });

  test("non-JSON, correctly signed -> 400; oversized -> 413; unknown id -> 401", async () => {
    expect((await send("title=x&prompt=y")).status).toBe(400);
    const big = JSON.stringify(task({ prompt: "p".repeat(1024 * 1024 + 10) }));
    const r = await send(big);
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe("payload_too_large");
    expect((await send(task(), { id: "int_unknown" })).status).toBe(401);
  });

  test("a body nested 100,000 levels deep, correctly signed -> 400 saying so, no task", async () => {
    const before = await countTasksOf(s, ci.id);
    const r = await send(`{"title":"x","prompt":"y","extra":${"[".repeat(100_000)}${"]".repeat(100_000)}}`);
    expect(r.status).toBe(400);
    expect(r.body.error).toEqual({ code: "validation_failed", message: "the body nests objects and arrays more than 64 levels deep" });
    expect(await countTasksOf(s, ci.id)).toBe(before);
  });

  test("a prompt with a NUL character, correctly signed -> 400 naming prompt, no task (on PostgreSQL it was a 500)", async () => {
    const before = await countTasksOf(s, ci.id);
    const r = await send(task({ prompt: "lint fails\u0000here" }));
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: "validation_failed", details: [{ field: "prompt", message: expect.stringContaining("NUL") }] });
    expect(await countTasksOf(s, ci.id)).toBe(before);
  });

  test("a disabled integration ignores a correct delivery", async () => {
    const off = await makeIntegration(s, w.owner, { kind: "signed_json", name: "off", projectId: w.projectId, enabled: false });
    expect(await send(task(), { id: off.id, secret: off.secret })).toEqual({ status: 200, body: { status: "ignored", reason: "the integration is disabled" } });
  });

  test("the integration's project was archived -> ignored, no task", async () => {
    const pid = await makeProject(s, w.owner, "to-archive");
    const own = await makeIntegration(s, w.owner, { kind: "signed_json", name: "arch", projectId: pid });
    expect((await s.api("DELETE", `/orgs/${w.owner.orgId}/projects/${pid}`, { token: w.owner.accessToken })).status).toBeLessThan(300);
    expect(await send(task(), { id: own.id, secret: own.secret })).toEqual({ status: 200, body: { status: "ignored", reason: "the integration's project is archived" } });
  });
});
