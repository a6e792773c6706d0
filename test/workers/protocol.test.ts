// The worker protocol against a real server: socket auth, offers, atomic claims, lease fencing,
// idempotent events, transitions, controls, artifacts, and bad input of every kind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { addMember, newOrg } from "../helpers/identity";
import { ProtocolClient, STEADY, addRepositoryRow, createTaskApi, makeWorker, orgWithProject, until, workerApi } from "./helpers";
import { LEASE_HEADER } from "../../src/protocol/requests";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { all } from "../../src/db/query";

let s: TestServer;
let p: Awaited<ReturnType<typeof orgWithProject>>;

beforeAll(async () => {
  // Nothing here waits for a silent worker; one scenario waits for an offer to run out (2 s).
  s = await startTestServer({ workerTimeouts: STEADY, artifactLimitBytes: 64 * 1024 });
  p = await orgWithProject(s);
});
afterAll(() => s.stop());

/** Each scenario gets its own org, so tasks left queued by one never reach another's workers. */
const fresh = async () => orgWithProject(s, await newOrg(s));

async function claimNext(c: ProtocolClient, cred: string, taskId: string) {
  const offer = await c.next("offer", (m) => m.taskId === taskId);
  const r = await workerApi(s, cred)("POST", `/worker/tasks/${taskId}/claim`, { offerId: offer.offerId });
  expect(r.status).toBe(200);
  return { offer, claim: r.body };
}

describe("worker socket", () => {
  test.each([
    ["no credential", undefined],
    ["malformed", "Bearer aow_nope"],
    ["wrong checksum", "Bearer aow_" + "a".repeat(36)],
    ["a person's token shape", "Bearer aot_" + "a".repeat(36)],
  ])("upgrade refused: %s", async (_name, header) => {
    const res = await fetch(s.url + "/api/v1/worker/ws", { headers: { upgrade: "websocket", connection: "upgrade", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-version": "13", ...(header ? { authorization: header } : {}) } });
    expect(res.status).toBe(401);
    expect(((await res.json()) as any).error.code).toBe("unauthorized");
  });

  test("hello gets welcome; garbage gets an error and the socket keeps serving", async () => {
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential, null);
    c.send("not json");
    c.send({ type: "heartbeat", running: [] });
    c.send({ type: "hello", protocol: 1 });
    c.send(JSON.stringify({ type: "heartbeat", running: [], pad: "x".repeat(300_000) }));
    expect((await c.next("error")).code).toBe("bad_message");
    expect((await c.next("error")).code).toBe("hello_first");
    expect((await c.next("error")).code).toBe("bad_message");
    expect((await c.next("error")).code).toBe("bad_message");
    c.send({ type: "hello", protocol: 1, version: "x", tools: [{ name: "git", version: "2" }], agents: [], providers: ["ANTHROPIC_API_KEY"], capacity: 2 });
    const welcome = await c.next("welcome");
    expect(welcome).toMatchObject({ workerId: w.workerId, orgId: p.orgId, status: "active" });
    const rec = await s.api("GET", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token });
    expect(rec.body).toMatchObject({ status: "online", capacity: 2, providers: ["ANTHROPIC_API_KEY"], tools: [{ name: "git", version: "2" }] });
    c.close();
    await until(async () => (await s.api("GET", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token })).body.status === "offline");
  });

  test("a worker that keeps sending garbage is closed with 4005; the server keeps serving it and others", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    for (let i = 0; i < 20; i++) c.send(i % 2 ? "\u0000\uffff{" : { type: "claim", taskId: "tsk_x" });
    expect((await c.waitClose()).code).toBe(4005);
    expect(c.messages.filter((m) => m.type === "error")).toHaveLength(20);
    // Nothing was lost: the same worker reconnects and works, the API answers.
    const again = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, p);
    await claimNext(again, w.credential, task.id);
    expect((await s.api("GET", "/health")).status).toBe(200);
    again.close();
  });

  test("an unsupported protocol version is closed with 4002", async () => {
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential, null);
    c.send({ type: "hello", protocol: 99, version: "x", tools: [], agents: [], providers: [], capacity: 1 });
    expect((await c.waitClose()).code).toBe(4002);
  });
});

describe("offers and claims", () => {
  test("create -> offer -> claim -> running with attempt 1 and the project", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, p, { title: "first" });
    // Claims of one offer racing each other: exactly one wins.
    const offer = await c.next("offer", (m) => m.taskId === task.id);
    const racing = await Promise.all(
      Array.from({ length: 6 }, () => workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId })),
    );
    expect(racing.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    const claim = racing.find((r) => r.status === 200)!.body;
    c.running.push({ taskId: task.id, attempt: claim.attempt }); // its heartbeats report it, so it is not taken as lost
    expect(offer.attempt).toBe(1);
    expect(claim).toMatchObject({ attempt: 1, runMode: "fresh", task: { id: task.id, title: "first", kind: "task" }, project: { id: p.projectId, repositories: [] } });
    expect(claim.leaseToken).toBeString();
    const t = await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token });
    expect(t.body).toMatchObject({ status: "running", attempt: 1, workerId: w.workerId });
    expect(t.body.startedAt).toBeString();
    // The same offer again, another worker's claim, an unknown task, another org's task.
    const api = workerApi(s, w.credential);
    expect((await api("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId })).status).toBe(409);
    const other = await makeWorker(s, p.orgId);
    expect((await workerApi(s, other.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId })).status).toBe(409);
    expect((await api("POST", `/worker/tasks/tsk_unknown/claim`, { offerId: "ofr_x" })).status).toBe(404);
    const o2 = await newOrg(s);
    const p2 = await orgWithProject(s, o2);
    const foreign = await createTaskApi(s, p2);
    expect((await api("POST", `/worker/tasks/${foreign.id}/claim`, { offerId: "ofr_x" })).status).toBe(404);
    expect((await api("POST", `/worker/tasks/${task.id}/claim`, { offerId: 5 })).status).toBe(400);
    expect((await s.api("POST", `/worker/tasks/${task.id}/claim`, { body: { offerId: "x" } })).status).toBe(401);
    expect((await s.api("POST", `/worker/tasks/${task.id}/claim`, { body: { offerId: "x" }, token: p.token })).status).toBe(401);
    c.close();
  });

  test("an unclaimed offer runs out and goes to another worker; a closed socket's offer is re-offered at once", async () => {
    const p = await fresh();
    const a = await makeWorker(s, p.orgId, { labels: ["slowpoke"] });
    const ca = await ProtocolClient.connect(s, a.credential);
    const task = await createTaskApi(s, p);
    const first = await ca.next("offer", (m) => m.taskId === task.id);
    const b = await makeWorker(s, p.orgId);
    const cb = await ProtocolClient.connect(s, b.credential, { capacity: 1 });
    // b connected while a's offer was live: b gets it only after a's offer expires (STEADY.offerMs).
    const started = Date.now();
    const second = await cb.next("offer", (m) => m.taskId === task.id, STEADY.offerMs * 3);
    expect(Date.now() - started).toBeGreaterThan(STEADY.offerMs / 2);
    expect(second.offerId).not.toBe(first.offerId);
    expect((await workerApi(s, a.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: first.offerId })).status).toBe(409);
    // b goes away without claiming: the offer is void and a gets it again at once (not after an expiry).
    cb.close();
    const third = await ca.next("offer", (m) => m.taskId === task.id, STEADY.offerMs * 0.75);
    expect((await workerApi(s, a.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: third.offerId })).status).toBe(200);
    ca.close();
  });

  test("a worker that declines is left out of offers for a moment, then offered again", async () => {
    const p = await fresh();
    const a = await makeWorker(s, p.orgId);
    const ca = await ProtocolClient.connect(s, a.credential);
    const task = await createTaskApi(s, p);
    const offer = await ca.next("offer", (m) => m.taskId === task.id);
    const declined = Date.now();
    ca.send({ type: "decline", offerId: offer.offerId });
    await ca.next("offer", (m) => m.taskId === task.id, 3000);
    expect(Date.now() - declined).toBeGreaterThanOrEqual(900);
    ca.close();
  });

  test("decline hands the task to another worker", async () => {
    const p = await fresh();
    const a = await makeWorker(s, p.orgId);
    const b = await makeWorker(s, p.orgId);
    const ca = await ProtocolClient.connect(s, a.credential);
    const task = await createTaskApi(s, p);
    const offer = await ca.next("offer", (m) => m.taskId === task.id);
    const cb = await ProtocolClient.connect(s, b.credential);
    ca.send({ type: "decline", offerId: offer.offerId });
    await cb.next("offer", (m) => m.taskId === task.id, STEADY.offerMs * 0.75); // before a's offer would have run out
    ca.close();
    cb.close();
  });
});

describe("leases, events and transitions", () => {
  test("events are idempotent per seq and fenced by the lease; transitions follow the machine", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, p);
    const { claim } = await claimNext(c, w.credential, task.id);
    c.running.push({ taskId: task.id, attempt: claim.attempt }); // its heartbeats report it, so it is not taken as lost
    const api = workerApi(s, w.credential);
    const lease = claim.leaseToken;
    const batch = [
      { seq: 1, type: "log", data: { line: "hello" } },
      { seq: 2, type: "message", data: { role: "assistant", text: "hi" } },
      { seq: 2, type: "message", data: { role: "assistant", text: "dup in batch" } },
    ];
    expect((await api("POST", `/worker/tasks/${task.id}/events`, { leaseToken: lease, events: batch })).body).toEqual({ written: 2, duplicates: 1 });
    expect((await api("POST", `/worker/tasks/${task.id}/events`, { leaseToken: lease, events: batch })).body).toEqual({ written: 0, duplicates: 3 });
    const cases: [string, unknown, number, string?][] = [
      ["wrong lease", { leaseToken: "nope", events: [{ seq: 9, type: "log", data: {} }] }, 409, "conflict"],
      ["server-only type", { leaseToken: lease, events: [{ seq: 9, type: "status", data: {} }] }, 400, "validation_failed"],
      ["seq 0", { leaseToken: lease, events: [{ seq: 0, type: "log", data: {} }] }, 400, "validation_failed"],
      ["no events", { leaseToken: lease, events: [] }, 400, "validation_failed"],
      ["huge event", { leaseToken: lease, events: [{ seq: 9, type: "log", data: "x".repeat(300_000) }] }, 400, "validation_failed"],
    ];
    for (const [name, body, status, code] of cases) {
      const r = await api("POST", `/worker/tasks/${task.id}/events`, body);
      expect([name, r.status, r.body?.error?.code]).toEqual([name, status, code]);
    }
    const tr = (body: Record<string, unknown>) => api("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: lease, ...body });
    expect((await tr({ to: "needs_input" })).status).toBe(400); // needs.message required
    // A NUL (U+0000) in a text the server stores is refused on either database (PostgreSQL cannot store one).
    for (const body of [{ to: "needs_input", needs: { message: "a\u0000b" } }, { to: "completed", summary: "a\u0000b" }, { to: "failed", error: "a\u0000b" }]) {
      const r = await tr(body);
      expect([body.to, r.status, r.body.error?.code, r.body.error?.details?.[0]?.message]).toEqual([body.to, 400, "validation_failed", "must be text without NUL characters (U+0000)"]);
    }
    expect((await tr({ to: "running" })).status).toBe(409); // running -> running is not a worker transition
    expect((await tr({ to: "needs_input", needs: { message: "which color?" } })).status).toBe(200);
    let t = await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token });
    expect(t.body).toMatchObject({ status: "needs_input", needs: { kind: "input", message: "which color?" } });
    // The person answers: the worker gets a control message with the input.
    expect((await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: p.token, body: { action: "input", input: "blue" } })).status).toBe(200);
    expect(await c.next("control", (m) => m.taskId === task.id)).toMatchObject({ action: "input", input: "blue", attempt: 1 });
    expect((await tr({ to: "needs_approval", needs: { message: "ship it?" } })).status).toBe(200);
    await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: p.token, body: { action: "deny", reason: "not yet" } });
    expect(await c.next("control", (m) => m.taskId === task.id)).toMatchObject({ action: "deny", reason: "not yet" });
    expect((await tr({ to: "completed", summary: "done", plan: { tasks: [] } })).status).toBe(400); // not a plan task
    expect((await tr({ to: "completed", summary: "done" })).status).toBe(200);
    expect((await tr({ to: "completed", summary: "done" })).status).toBe(200); // a repeated report is a no-op
    expect((await tr({ to: "failed" })).status).toBe(409);
    expect((await api("POST", `/worker/tasks/${task.id}/events`, { leaseToken: lease, events: [{ seq: 10, type: "log", data: {} }] })).status).toBe(409);
    t = await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token });
    expect(t.body).toMatchObject({ status: "completed", summary: "done", needs: null });
    expect(t.body.finishedAt).toBeString();
    const ev = await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}/events`, { token: p.token });
    const types = ev.body.items.map((e: any) => e.type);
    expect(types.filter((x: string) => x === "log" || x === "message")).toEqual(["log", "message"]);
    expect(ev.body.items.map((e: any) => e.seq)).toEqual(ev.body.items.map((_: unknown, i: number) => i + 1));
    c.close();
  });

  test("a plan task completes only with a plan apply-plan accepts: malformed plans are 400 and change nothing", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, p, { kind: "plan" });
    const { claim } = await claimNext(c, w.credential, task.id);
    c.running.push({ taskId: task.id, attempt: claim.attempt }); // its heartbeats report it, so it is not taken as lost
    const tr = (plan: unknown) =>
      workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: claim.leaseToken, to: "completed", ...(plan === undefined ? {} : { plan }) });
    const item = { title: "step", prompt: "do it" };
    const cases: [string, unknown, string][] = [
      ["no plan", undefined, "plan"],
      ["tasks not a list", { tasks: "step" }, "plan.tasks"],
      ["no tasks key", {}, "plan.tasks"],
      ["blank title", { tasks: [{ ...item, title: "   " }] }, "plan.tasks.0.title"],
      ["review without refs", { tasks: [item, { ...item, kind: "review" }] }, "plan.tasks.1.review"],
      ["unknown priority", { tasks: [{ ...item, priority: "SOON" }] }, "plan.tasks.0.priority"],
      ["unknown agent", { tasks: [{ ...item, agent: "gpt" }] }, "plan.tasks.0.agent"],
      ["too many tasks", { tasks: Array.from({ length: 101 }, () => item) }, "plan.tasks"],
    ];
    for (const [name, plan, field] of cases) {
      const r = await tr(plan);
      expect([name, r.status, r.body.error.code]).toEqual([name, 400, "validation_failed"]);
      expect([name, r.body.error.details.some((d: any) => String(d.field).replace(/^\//, "").replaceAll("/", ".").startsWith(field))]).toEqual([name, true]);
    }
    const t = await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token });
    expect(t.body).toMatchObject({ status: "running", plan: null });
    const ok = await tr({ tasks: [{ ...item, title: "  padded  ", prompt: "do\u0000 it" }, { title: "check", prompt: "look", kind: "review", review: { base: "main", head: "x" }, agent: "claude" }] });
    expect(ok.status).toBe(200);
    await addRepositoryRow(s, p.orgId, p.projectId, "https://example.test/a/planned.git"); // the review needs one
    const applied = await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/apply-plan`, { token: p.token });
    expect(applied.status).toBe(201);
    expect(applied.body.tasks.map((x: any) => [x.title, x.kind, x.agent])).toEqual([["padded", "task", null], ["check", "review", "claude"]]);
    // An agent's NUL (not storable on PostgreSQL) is dropped from the prompt, not a reason to refuse the plan.
    expect((await s.api("GET", `/orgs/${p.orgId}/tasks/${applied.body.tasks[0].id}`, { token: p.token })).body.prompt).toBe("do it");
    c.close();
  });

  test("cancel reaches the worker and its old lease is refused afterwards; restart stops the attempt and re-offers", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential, { capacity: 2 });
    const api = workerApi(s, w.credential);
    const task = await createTaskApi(s, p);
    const { claim } = await claimNext(c, w.credential, task.id);
    c.running.push({ taskId: task.id, attempt: claim.attempt }); // its heartbeats report it, so it is not taken as lost
    await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: p.token, body: { action: "pause" } });
    expect(await c.next("control", (m) => m.taskId === task.id)).toMatchObject({ action: "pause", attempt: 1 });
    await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: p.token, body: { action: "resume" } });
    expect(await c.next("control", (m) => m.taskId === task.id)).toMatchObject({ action: "resume", attempt: 1 });
    await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: p.token, body: { action: "restart" } });
    expect(await c.next("control", (m) => m.taskId === task.id)).toMatchObject({ action: "cancel", attempt: 1 });
    c.running = []; // it stopped the attempt
    const again = await c.next("offer", (m) => m.taskId === task.id);
    expect(again.attempt).toBe(2);
    expect((await api("POST", `/worker/tasks/${task.id}/events`, { leaseToken: claim.leaseToken, events: [{ seq: 1, type: "log", data: {} }] })).status).toBe(409);
    const second = await api("POST", `/worker/tasks/${task.id}/claim`, { offerId: again.offerId });
    expect(second.body.attempt).toBe(2);
    c.running = [{ taskId: task.id, attempt: 2 }];
    await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: p.token, body: { action: "cancel", reason: "enough" } });
    expect(await c.next("control", (m) => m.taskId === task.id && m.attempt === 2)).toMatchObject({ action: "cancel", attempt: 2, reason: "enough" });
    const stale = await api("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: second.body.leaseToken, to: "failed" });
    expect(stale.status).toBe(409);
    expect((await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token })).body.status).toBe("cancelled");
    c.close();
  });

  test("artifacts: raw upload with the lease; traversal, bad names, oversize and stale leases refused", async () => {
    const p = await fresh();
    const w = await makeWorker(s, p.orgId);
    const c = await ProtocolClient.connect(s, w.credential);
    const task = await createTaskApi(s, p);
    const { claim } = await claimNext(c, w.credential, task.id);
    c.running.push({ taskId: task.id, attempt: claim.attempt }); // its heartbeats report it, so it is not taken as lost
    const put = (name: string, body: string | Uint8Array, lease = claim.leaseToken) =>
      fetch(`${s.url}/api/v1/worker/tasks/${task.id}/artifacts/${name}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${w.credential}`, [LEASE_HEADER]: lease, "content-type": "application/octet-stream" },
        body,
      });
    const ok = await put("report.md", "# Report\n");
    expect(ok.status).toBe(201);
    expect(await ok.json()).toMatchObject({ name: "report.md", contentType: "text/markdown; charset=utf-8", size: 9 });
    const json = await fetch(`${s.url}/api/v1/worker/tasks/${task.id}/artifacts/data.json`, {
      method: "PUT",
      headers: { authorization: `Bearer ${w.credential}`, [LEASE_HEADER]: claim.leaseToken, "content-type": "application/json" },
      body: '{"a":1}',
    });
    expect(json.status).toBe(201);
    for (const [name, status] of [
      ["..%2F..%2Fetc%2Fpasswd", 400],
      ["%2E%2E", 404], // the URL itself resolves to another path: no route
      [".hidden", 400],
      ["a%5Cb", 400],
    ] as const) {
      expect([name, (await put(name, "x")).status]).toEqual([name, status]);
    }
    expect((await put("big.bin", new Uint8Array(65 * 1024))).status).toBe(413);
    expect((await put("x.txt", "x", "stale")).status).toBe(409);
    // No lease header at all: the request lacks a part (400 naming it), not a stale lease.
    const bare = await fetch(`${s.url}/api/v1/worker/tasks/${task.id}/artifacts/x.txt`, { method: "PUT", headers: { authorization: `Bearer ${w.credential}` }, body: "x" });
    expect([bare.status, await bare.json()]).toEqual([400, { error: { code: "validation_failed", message: `the ${LEASE_HEADER} header is required: the lease of the attempt`, details: [{ field: LEASE_HEADER, message: "required" }] } }]);
    const t = await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token });
    expect(t.body.artifacts.map((a: any) => a.name)).toEqual(["data.json", "report.md"]);
    if (onPostgres) {
      // The bodies are in the database (chunks), one for each artifact: the refused uploads left none.
      const bodies = await s.core.store.read(all("SELECT stored FROM artifact_bodies WHERE task_id = ?", task.id));
      expect(bodies).toEqual([{ stored: 1 }, { stored: 1 }]);
    } else {
      expect(readdirSync(join(s.dataDir, "artifacts", task.id)).sort()).toEqual(["data.json", "report.md"]);
      expect(readdirSync(join(s.dataDir, "artifacts")).every((n) => n.startsWith("tsk_"))).toBe(true);
    }
    const dl = await fetch(`${s.url}/api/v1/orgs/${p.orgId}/tasks/${task.id}/artifacts/report.md`, { headers: { authorization: `Bearer ${p.token}` } });
    expect(await dl.text()).toBe("# Report\n");
    c.close();
  });

  test("a member without worker.manage cannot patch or revoke; a viewer can list", async () => {
    const member = await addMember(s, p.session, "member");
    const w = await makeWorker(s, p.orgId);
    expect((await s.api("PATCH", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: member.accessToken, body: { name: "x" } })).status).toBe(403);
    expect((await s.api("DELETE", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: member.accessToken })).status).toBe(403);
    expect((await s.api("POST", `/orgs/${p.orgId}/workers/${w.workerId}/approve`, { token: member.accessToken })).status).toBe(403);
    const viewer = await addMember(s, p.session, "viewer");
    const list = await s.api("GET", `/orgs/${p.orgId}/workers?limit=2`, { token: viewer.accessToken });
    expect(list.status).toBe(200);
    expect(list.body.items.length).toBe(2);
    const next = await s.api("GET", `/orgs/${p.orgId}/workers?limit=2&cursor=${list.body.nextCursor}`, { token: viewer.accessToken });
    expect(next.body.items[0].id < list.body.items[1].id).toBe(true);
    const other = await newOrg(s);
    expect((await s.api("GET", `/orgs/${other.orgId}/workers/${w.workerId}`, { token: other.accessToken })).status).toBe(404);
    const bad = await s.api("PATCH", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token, body: { labels: ["Has Space"] } });
    expect(bad.status).toBe(400);
  });
});
