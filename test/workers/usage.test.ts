// The usage report and budget questions on the worker protocol, against a real server: lease
// fencing, bad input, what the claim carries, the budget question's answers, and the project
// policy that ao acts on validated field by field.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, newOrg, type Session } from "../helpers/identity";
import { ProtocolClient, createTaskApi, makeWorker, orgWithProject, workerApi } from "./helpers";
import { all } from "../../src/db/query";
import { readFileSync } from "node:fs";
import { join } from "node:path";

let s: TestServer;
let owner: Session;

beforeAll(async () => {
  // Default offer and offline times: nothing here waits for one to run out, and the short ones
  // (FAST) let a loaded machine expire an offer before its claim.
  s = await startTestServer();
  owner = await createAdmin(s);
});
afterAll(() => s.stop());

const USAGE = { inputTokens: 100, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.02, model: "m" };

async function claimed(policy: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  const p = await orgWithProject(s, await newOrg(s), policy);
  const w = await makeWorker(s, p.orgId);
  const c = await ProtocolClient.connect(s, w.credential, { agents: [{ name: "exec", version: null, command: "sh" }] });
  const task = await createTaskApi(s, p, extra);
  const offer = await c.next("offer", (m) => m.taskId === task.id);
  const r = await workerApi(s, w.credential)("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
  expect(r.status).toBe(200);
  c.running = [{ taskId: task.id, attempt: r.body.attempt }];
  return { p, w, c, task, claim: r.body, api: workerApi(s, w.credential) };
}

/** A live-updates subscriber on the task's topic that keeps every message. */
async function subscribe(orgId: string, taskId: string, token: string) {
  const ws = new WebSocket(s.url.replace("http", "ws") + "/api/v1/ws", { headers: { authorization: `Bearer ${token}` } } as any);
  const got: any[] = [];
  ws.onmessage = (e) => got.push(JSON.parse(String(e.data)));
  await new Promise((resolve) => (ws.onopen = resolve));
  ws.send(JSON.stringify({ type: "subscribe", orgId, taskId }));
  const next = async (pred: (m: any) => boolean) => {
    for (let i = 0; i < 200; i++) {
      const m = got.find(pred);
      if (m) return m;
      await Bun.sleep(10);
    }
    throw new Error(`no such message; got ${JSON.stringify(got.map((m) => m.type))}`);
  };
  await next((m) => m.type === "subscribed");
  return { ws, next };
}

const rows = (taskId: string) => s.core.store.read(all("SELECT * FROM task_usage WHERE task_id = ?", taskId));

describe("POST /worker/tasks/:taskId/usage", () => {
  test("cumulative: a resent or smaller report adds nothing; the task shows the sum", async () => {
    const { p, task, claim, api, c } = await claimed();
    expect(claim.budget).toBeNull();
    expect(claim.task.agent).toBeNull();
    const send = (usage: unknown) => api("POST", `/worker/tasks/${task.id}/usage`, { leaseToken: claim.leaseToken, usage });
    expect((await send(USAGE)).body).toEqual({ costUsd: 0.02 });
    expect((await send(USAGE)).body).toEqual({ costUsd: 0.02 });
    expect((await send({ ...USAGE, inputTokens: 50, costUsd: 0.01 })).body).toEqual({ costUsd: 0.02 });
    expect((await send({ ...USAGE, inputTokens: 300, costUsd: 0.05, model: "m2" })).body).toEqual({ costUsd: 0.05 });
    expect(await rows(task.id)).toHaveLength(1);
    const t = (await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token })).body;
    expect(t.usage).toEqual({ inputTokens: 300, outputTokens: 10, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.05, model: "m2" });
    c.ws.close();
  });

  test("bad input is 400 naming the field; another attempt's lease, another org's worker, an ended attempt: refused, nothing recorded", async () => {
    const { task, claim, api, c, p } = await claimed();
    const post = (body: unknown) => api("POST", `/worker/tasks/${task.id}/usage`, body);
    for (const [usage, field] of [
      [{ ...USAGE, inputTokens: -1 }, "usage.inputTokens"],
      [{ ...USAGE, outputTokens: 1.5 }, "usage.outputTokens"],
      [{ ...USAGE, costUsd: "1" }, "usage.costUsd"],
      [{ ...USAGE, model: "x".repeat(201) }, "usage.model"],
      [{ inputTokens: 1 }, "usage.outputTokens"],
    ] as const) {
      const r = await post({ leaseToken: claim.leaseToken, usage });
      expect(r.status, field).toBe(400);
      expect(r.body.error.details.map((d: any) => d.field)).toContain(field);
    }
    const stale = await post({ leaseToken: "not-the-lease", usage: USAGE });
    expect(stale.status).toBe(409);
    expect(stale.body.error.details.reason).toBe("stale_lease");
    const stranger = await makeWorker(s, (await newOrg(s)).orgId);
    expect((await workerApi(s, stranger.credential)("POST", `/worker/tasks/${task.id}/usage`, { leaseToken: claim.leaseToken, usage: USAGE })).status).toBe(404);
    expect((await s.api("POST", `/worker/tasks/${task.id}/usage`, { body: { leaseToken: claim.leaseToken, usage: USAGE } })).status).toBe(401);
    expect((await s.api("POST", `/worker/tasks/${task.id}/usage`, { token: p.token, body: { leaseToken: claim.leaseToken, usage: USAGE } })).status).toBe(401);
    expect(await rows(task.id)).toEqual([]);
    expect((await api("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: claim.leaseToken, to: "completed" })).status).toBe(200);
    const ended = await post({ leaseToken: claim.leaseToken, usage: USAGE });
    expect(ended.status).toBe(409);
    expect(ended.body.error.details.reason).toBe("ended");
    expect(await rows(task.id)).toEqual([]);
    c.ws.close();
  });
});

describe("budget questions", () => {
  test("the claim carries the budget; a budget question records cost and allowance; approve raises it, deny cancels and tells the worker to stop", async () => {
    const { p, task, claim, api, c } = await claimed({ budget: { perTaskUsd: 0.5 } }, { agent: "exec" });
    expect(claim.budget).toEqual({ perTaskUsd: 0.5, allowanceUsd: 0.5, costUsd: 0 });
    expect(claim.task.agent).toBe("exec");
    const lease = claim.leaseToken;
    await api("POST", `/worker/tasks/${task.id}/usage`, { leaseToken: lease, usage: { ...USAGE, costUsd: 0.6 } });
    // A budget question goes with needs_approval only.
    const wrong = await api("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: lease, to: "needs_input", needs: { kind: "budget", message: "over" } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.details.map((d: any) => d.field)).toEqual(["needs.kind"]);
    const ask = (message: string) => api("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: lease, to: "needs_approval", needs: { kind: "budget", message } });
    expect((await ask("over budget: $0.60 of $0.50; continue?")).status).toBe(200);
    const get = async () => (await s.api("GET", `/orgs/${p.orgId}/tasks/${task.id}`, { token: p.token })).body;
    expect((await get()).needs).toEqual({ kind: "budget", message: "over budget: $0.60 of $0.50; continue?", costUsd: 0.6, allowanceUsd: 0.5 });
    // A viewer cannot answer.
    const viewer = await addMember(s, p.session, "viewer");
    expect((await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: viewer.accessToken, body: { action: "approve" } })).status).toBe(403);
    // Approve: running, allowance 1.0, and the worker hears approve. Live updates show the record as GET does.
    const live = await subscribe(p.orgId, task.id, p.token);
    const approved = await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: p.token, body: { action: "approve" } });
    expect(approved.body).toMatchObject({ status: "running", needs: null, allowanceUsd: 1 });
    const pushed = await live.next((m) => m.type === "task.updated" && m.task.status === "running");
    expect(pushed.task).toMatchObject({ allowanceUsd: 1, usage: { costUsd: 0.6 }, waitingReason: null });
    live.ws.close();
    expect((await c.next("control", (m) => m.taskId === task.id)).action).toBe("approve");
    // Asked again past the new allowance; deny cancels and the worker is told to cancel, not deny.
    await api("POST", `/worker/tasks/${task.id}/usage`, { leaseToken: lease, usage: { ...USAGE, costUsd: 1.1 } });
    expect((await ask("over budget: $1.10 of $1.00; continue?")).status).toBe(200);
    expect((await get()).needs).toMatchObject({ costUsd: 1.1, allowanceUsd: 1 });
    const denied = await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: p.token, body: { action: "deny", reason: "enough" } });
    expect(denied.body).toMatchObject({ status: "cancelled", needs: null });
    expect(await c.next("control", (m) => m.taskId === task.id)).toMatchObject({ action: "cancel", reason: "enough" });
    // A later attempt starts knowing both: the raised allowance and what was spent.
    expect((await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: p.token, body: { action: "retry" } })).status).toBe(200);
    const offer = await c.next("offer", (m) => m.taskId === task.id);
    const again = await api("POST", `/worker/tasks/${task.id}/claim`, { offerId: offer.offerId });
    expect(again.body.budget).toEqual({ perTaskUsd: 0.5, allowanceUsd: 1, costUsd: 1.1 });
    c.ws.close();
  });

  test("an ordinary approval question is answered as before: deny goes back to running and the agent hears the reason", async () => {
    const { p, task, claim, api, c } = await claimed({ budget: { perTaskUsd: 0.5 } });
    await api("POST", `/worker/tasks/${task.id}/transition`, { leaseToken: claim.leaseToken, to: "needs_approval", needs: { message: "run rm?" } });
    const denied = await s.api("POST", `/orgs/${p.orgId}/tasks/${task.id}/actions`, { token: p.token, body: { action: "deny", reason: "no" } });
    expect(denied.body).toMatchObject({ status: "running", allowanceUsd: 0.5 });
    expect(await c.next("control", (m) => m.taskId === task.id)).toMatchObject({ action: "deny", reason: "no" });
    c.ws.close();
  });
});

describe("daily budget", () => {
  test("a usage report that takes the project to its daily budget tells the followers of its queued tasks why they now wait", async () => {
    const { p, task, claim, api } = await claimed({ budget: { perDayUsd: 0.05 } });
    // The worker's one slot is taken: the next task waits for a slot, which it does not name.
    const next = await createTaskApi(s, p);
    const live = await subscribe(p.orgId, next.id, p.token);
    expect((await s.api("GET", `/orgs/${p.orgId}/tasks/${next.id}`, { token: p.token })).body.waitingReason).toBeNull();
    expect((await api("POST", `/worker/tasks/${task.id}/usage`, { leaseToken: claim.leaseToken, usage: { ...USAGE, costUsd: 0.06 } })).status).toBe(200);
    const update = await live.next((m) => m.type === "task.updated" && m.task.id === next.id);
    expect(update.task).toMatchObject({ status: "queued", waitingReason: "project over its daily budget ($0.06 of $0.05)" });
    live.ws.close();
  });
});

describe("project policy validation", () => {
  const create = (policy: unknown) => s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: `p-${crypto.randomUUID().slice(0, 8)}`, policy } });

  test.each([
    ["a rule of an unknown kind", { agent: { allow: ["shell:bun test*", "rm -rf"] } }, ["policy.agent.allow.1"]],
    ["an empty rule", { agent: { ask: [""] } }, ["policy.agent.ask.0"]],
    ["rules not a list", { agent: { deny: "shell" } }, ["policy.agent.deny"]],
    ["a default that is no decision", { agent: { default: "maybe" } }, ["policy.agent.default"]],
    ["an unknown key in the agent policy", { agent: { allow: [], sometimes: [] } }, ["policy.agent.sometimes"]],
    ["agent not an object", { agent: "strict" }, ["policy.agent"]],
    ["a negative budget", { budget: { perTaskUsd: -1 } }, ["policy.budget.perTaskUsd"]],
    ["a zero budget", { budget: { perDayUsd: 0 } }, ["policy.budget.perDayUsd"]],
    ["a budget as text", { budget: { perDayUsd: "10" } }, ["policy.budget.perDayUsd"]],
    ["an unknown budget key", { budget: { perHourUsd: 1 } }, ["policy.budget.perHourUsd"]],
    ["budget not an object", { budget: 5 }, ["policy.budget"]],
    ["an unknown preferred agent", { preferredAgent: "gpt" }, ["policy.preferredAgent"]],
    ["worker labels not labels", { workerLabels: ["GPU!"] }, ["policy.workerLabels"]],
    ["several at once", { budget: { perTaskUsd: 0 }, preferredAgent: 1 }, ["policy.budget.perTaskUsd", "policy.preferredAgent"]],
  ])("refused on create and update: %s", async (_name, policy, fields) => {
    const r = await create(policy);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe("validation_failed");
    expect(r.body.error.details.map((d: any) => d.field).sort()).toEqual([...fields].sort());
    const p = await create({ budget: { perTaskUsd: 2 } });
    const patched = await s.api("PATCH", `/orgs/${owner.orgId}/projects/${p.body.id}`, { token: owner.accessToken, body: { policy } });
    expect(patched.status).toBe(400);
    expect(patched.body.error.details.map((d: any) => d.field).sort()).toEqual([...fields].sort());
    // Nothing changed.
    expect((await s.api("GET", `/orgs/${owner.orgId}/projects/${p.body.id}`, { token: owner.accessToken })).body.policy).toEqual({ budget: { perTaskUsd: 2 } });
  });

  test("a full policy is kept as given, with keys ao does not act on", async () => {
    const policy = {
      agent: { allow: ["read", "shell:bun test*", "tool:WebFetch"], ask: ["shell:git push*", "network"], deny: ["edit:/etc/*"], default: "ask" },
      budget: { perTaskUsd: 2.5, perDayUsd: 40 },
      preferredAgent: "claude",
      workerLabels: ["linux", "gpu"],
      team: { notes: "anything" },
    };
    const r = await create(policy);
    expect(r.status).toBe(201);
    expect(r.body.policy).toEqual(policy);
  });
});

test("the README's policies are valid as written", async () => {
  const readme = readFileSync(join(import.meta.dir, "..", "..", "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("## Policies, usage and budgets"));
  const full = JSON.parse(/```json\n([\s\S]*?)```/.exec(section)![1]);
  const examples = [...section.slice(section.indexOf("Some useful policies")).matchAll(/`(\{"[^`]*\})`/g)].map((m) => ({ agent: JSON.parse(m[1]) }));
  expect(examples).toHaveLength(3);
  for (const policy of [full, ...examples]) {
    const r = await s.api("POST", `/orgs/${owner.orgId}/projects`, { token: owner.accessToken, body: { name: `readme-${crypto.randomUUID().slice(0, 8)}`, policy } });
    expect(r.status, JSON.stringify(policy)).toBe(201);
  }
});
