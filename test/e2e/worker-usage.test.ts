// Usage, budgets and agent choice with real `ao worker` processes: the exec agent's script reports
// usage with ::ao::usage lines, the server records it per attempt and day, a per-task budget
// pauses the real process and asks, a daily budget holds the queue, and tasks that name an agent
// go to a worker that has it.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { addMember, createAdmin, newOrg, type Session } from "../helpers/identity";
import { createTaskApi, orgWithProject, until } from "../workers/helpers";
import { alive, preparedWorker, startWorker, type WorkerProcess } from "./worker-helpers";
import { processState, voluntarySwitches } from "../helpers/processes";
import { all, get } from "../../src/db/query";
import { dayOf } from "../../src/modules/usage/service";

// The machine's PATH without npm's node_modules/.bin (npm test puts it first): the real claude and
// codex CLIs installed for other tests must not be found by `--agent auto` here.
const SYSTEM_PATH = (process.env.PATH ?? "").split(":").filter((d) => !d.includes("node_modules/.bin")).join(":");

const TIMEOUTS = { offerMs: 2000, offlineMs: 3000, heartbeatMs: 300 };

let s: TestServer;
let tmp: string;
let owner: Session;
let script: string;
let bin: string;
const workers: WorkerProcess[] = [];
const fixtures = join(import.meta.dir, "..", "workers", "fixtures");

// One script plays every agent: what it does depends on the task's title.
const AGENT = `
case "$AO_TASK_TITLE" in
  usage)
    echo '::ao::usage {"inputTokens": 400, "outputTokens": 10, "costUsd": 0.04, "model": "m-a'$AO_TASK_ATTEMPT'"}'
    echo '::ao::usage {"inputTokens": 1000, "outputTokens": 20, "cacheReadTokens": 300, "cacheWriteTokens": 5, "costUsd": 0.1, "model": "m-a'$AO_TASK_ATTEMPT'"}'
    [ "$AO_TASK_ATTEMPT" = "1" ] && exit 1
    echo "::ao::summary done"
    ;;
  steady)
    i=1; while [ $i -le 30 ]; do echo "::ao::usage {\\"outputTokens\\": $i, \\"costUsd\\": $i}"; i=$((i+1)); sleep 0.1; done
    ;;
  spend)
    echo $$ > "$PIDS/$AO_TASK_ID"
    i=1; while [ $i -le 300 ]; do echo "::ao::usage {\\"costUsd\\": \${i}e-2}"; echo "tick $i"; i=$((i+1)); sleep 0.1; done
    ;;
  daily)
    echo '::ao::usage {"costUsd": 0.06}'
    ;;
  jump)
    # Builtins only: a child stopped between its fork and its exec would leave the shell waiting on
    # it (state D, not T). It waits on its stdin, which the worker keeps open.
    echo $$ > "$PIDS/$AO_TASK_ID"
    echo '::ao::usage {"costUsd": 0.12}'
    read line
    ;;
  *)
    echo "ran with exec"
    ;;
esac
`;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-worker-usage-"));
  script = join(tmp, "agent.sh");
  writeFileSync(script, AGENT);
  mkdirSync(join(tmp, "pids"));
  // A stand-in `claude` on PATH that replays recorded stream-json output.
  bin = join(tmp, "bin");
  mkdirSync(bin);
  const claude = join(bin, "claude");
  writeFileSync(claude, `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "9.9.9 (stand-in)"; exit 0; fi\ncat "${join(fixtures, "claude-stream.jsonl")}"\n`);
  chmodSync(claude, 0o755);
  s = await startTestServer({ workerTimeouts: TIMEOUTS });
  owner = await createAdmin(s);
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await s.stop();
  rmSync(tmp, { recursive: true, force: true });
});

type P = { orgId: string; projectId: string; token: string };

async function run(org: string, name: string, extra: string[] = ["--exec", `sh ${script}`], env: Record<string, string> = {}) {
  const dataDir = join(tmp, name);
  const w = await preparedWorker(s, org, dataDir);
  const proc = startWorker(s, dataDir, extra, { PIDS: join(tmp, "pids"), ...env });
  workers.push(proc);
  return { proc, workerId: w.workerId };
}

const task = async (p: P, id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}`, { token: p.token })).body;
const events = async (p: P, id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}/events?limit=200`, { token: p.token })).body.items as any[];
const action = (p: P, id: string, body: Record<string, unknown>) => s.api("POST", `/orgs/${p.orgId}/tasks/${id}/actions`, { token: p.token, body });
const waitStatus = (p: P, id: string, status: string, ms = 15_000) =>
  until(async () => {
    const t = await task(p, id);
    return t.status === status && t;
  }, ms, 50);
const lastTick = async (p: P, id: string) =>
  Math.max(0, ...(await events(p, id)).filter((e) => e.type === "log" && /^tick \d+$/.test(e.data.line)).map((e) => Number(e.data.line.slice(5))));

describe("usage", () => {
  let p: P;
  let worker: WorkerProcess;

  beforeAll(async () => {
    p = await orgWithProject(s, owner);
    worker = (await run(p.orgId, "usage")).proc;
    await worker.waitFor(/connected as/);
  });

  test("each attempt's cumulative report is recorded; the task shows the sum over its attempts (GET, list, ao task show)", async () => {
    const t = await createTaskApi(s, p, { title: "usage" });
    const failed = await waitStatus(p, t.id, "failed");
    expect(failed.usage).toEqual({ inputTokens: 1000, outputTokens: 20, cacheReadTokens: 300, cacheWriteTokens: 5, costUsd: 0.1, model: "m-a1" });
    expect((await action(p, t.id, { action: "retry" })).status).toBe(200);
    const done = await waitStatus(p, t.id, "completed");
    expect(done.attempt).toBe(2);
    expect(done.usage).toEqual({ inputTokens: 2000, outputTokens: 40, cacheReadTokens: 600, cacheWriteTokens: 10, costUsd: 0.2, model: "m-a2" });
    // Per attempt in the database: the second attempt's report did not add to the first's.
    const rows = await s.core.store.read(all("SELECT attempt, input_tokens, cost_usd, model FROM task_usage WHERE task_id = ? ORDER BY attempt", t.id));
    expect(rows).toEqual([
      { attempt: 1, input_tokens: 1000, cost_usd: 0.1, model: "m-a1" },
      { attempt: 2, input_tokens: 1000, cost_usd: 0.1, model: "m-a2" },
    ]);
    const listed = (await s.api("GET", `/orgs/${p.orgId}/tasks?projectId=${p.projectId}`, { token: p.token })).body.items.find((x: any) => x.id === t.id);
    expect(listed.usage).toEqual(done.usage);
    // A task that reported nothing shows null, not zeros.
    const quiet = await createTaskApi(s, p, { title: "quiet" });
    expect((await waitStatus(p, quiet.id, "completed")).usage).toBeNull();
    // ao task show prints it.
    // Not spawnSync: the server runs in this process and must answer meanwhile.
    const cli = Bun.spawn([join(import.meta.dir, "..", "..", "node_modules", ".bin", "bun"), join(import.meta.dir, "..", "..", "src", "main.ts"), "task", "show", t.id], {
      env: { ...process.env, AO_SERVER: s.url, AO_TOKEN: await apiToken(p) },
      stdout: "pipe",
      stderr: "pipe",
    });
    const [out, err] = await Promise.all([new Response(cli.stdout).text(), new Response(cli.stderr).text(), cli.exited]);
    expect(err).toBe("");
    expect(out).toMatch(/usage\s+\$0\.2000 · 2,000 in, 40 out, 600 cache read, 10 cache write · m-a2/);
  }, 40_000);

  test("reports reach the server at most every 2 s, and the last one always", async () => {
    const t = await createTaskApi(s, p, { title: "steady" });
    await waitStatus(p, t.id, "running");
    // 30 reports over about 3 s: the row changes only when a report arrives.
    const seen = new Set<string>();
    const poll = (async () => {
      for (;;) {
        const row = await s.core.store.read(get<{ updated_at: string }>("SELECT updated_at FROM task_usage WHERE task_id = ?", t.id));
        if (row) seen.add(row.updated_at);
        if ((await task(p, t.id)).status === "completed") return;
        await Bun.sleep(25);
      }
    })();
    await poll;
    const done = await task(p, t.id);
    expect(done.usage).toMatchObject({ outputTokens: 30, costUsd: 30 });
    // Reports that arrived, by the server's clock: sent 2 s apart (arrivals jitter with the machine's load), except the
    // last, sent before the final transition; 30 reports unthrottled would be 30 arrivals 0.1 s apart.
    const arrivals = [...seen].map((at) => Date.parse(at)).sort((a, b) => a - b);
    expect(arrivals.length).toBeGreaterThanOrEqual(2);
    expect(arrivals.length).toBeLessThan(8);
    for (let i = 1; i < arrivals.length - 1; i++) expect(arrivals[i] - arrivals[i - 1]).toBeGreaterThanOrEqual(1500);
  }, 30_000);

  test("GET /projects/:id/usage: totals and every day of the period; defaults, bad dates, viewers, other orgs", async () => {
    // The days the usage was recorded on, as the server dated them: one, or two for a run that
    // crossed 00:00 UTC (and "today" is read on both sides of the request, for the same reason).
    const recorded = (await s.core.store.read(all<{ day: string }>("SELECT DISTINCT day FROM task_usage WHERE project_id = ? ORDER BY day", p.projectId))).map((d) => d.day);
    const todayBefore = dayOf();
    const r = await s.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/usage`, { token: p.token });
    expect(r.status).toBe(200);
    expect([todayBefore, dayOf()]).toContain(r.body.to);
    expect(r.body.days).toHaveLength(30);
    expect(r.body.days.at(-1).day).toBe(r.body.to);
    expect(r.body.days[0].costUsd).toBe(0);
    // The days with usage are the recorded ones, and together they hold all of it.
    const spent = r.body.days.filter((d: any) => d.costUsd > 0);
    expect(spent.map((d: any) => d.day)).toEqual(recorded);
    const summed = (field: string) => spent.reduce((n: number, d: any) => n + d[field], 0);
    expect(["inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens"].map(summed)).toEqual([2000, 70, 600, 10]);
    expect(summed("costUsd")).toBeCloseTo(30.2, 6);
    expect(r.body.totals).toEqual({ inputTokens: 2000, outputTokens: 70, cacheReadTokens: 600, cacheWriteTokens: 10, costUsd: 30.2, tasks: 2 });
    // The recorded days alone; an ISO time counts as its UTC day.
    const [first, last] = [recorded[0], recorded.at(-1)];
    const one = await s.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/usage?from=${first}&to=${last}T23:59:59Z`, { token: p.token });
    expect(one.body).toMatchObject({ from: first, to: last, totals: { costUsd: 30.2, tasks: 2 } });
    expect(one.body.days).toHaveLength(recorded.length);
    // A period before any usage: zeros.
    const old = await s.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/usage?from=2020-01-01&to=2020-01-03`, { token: p.token });
    expect(old.body.totals).toEqual({ inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, tasks: 0 });
    expect(old.body.days.map((d: any) => d.day)).toEqual(["2020-01-01", "2020-01-02", "2020-01-03"]);
    for (const [query, field] of [
      ["from=yesterday", "from"],
      ["to=2026-02-31", "to"],
      ["to=2026-13-01", "to"],
      ["from=2026-03-02&to=2026-03-01", "from"],
      ["from=2020-01-01&to=2026-01-01", "from"],
    ]) {
      const bad = await s.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/usage?${query}`, { token: p.token });
      expect(bad.status, query).toBe(400);
      expect(bad.body.error.code).toBe("validation_failed");
      expect(bad.body.error.details.map((d: any) => d.field)).toEqual([field]);
    }
    // Reading is for every member, viewers too; another org's project is not found; no credential, 401.
    const viewer = await addMember(s, owner, "viewer");
    expect((await s.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/usage`, { token: viewer.accessToken })).status).toBe(200);
    const other = await newOrg(s);
    expect((await s.api("GET", `/orgs/${other.orgId}/projects/${p.projectId}/usage`, { token: other.accessToken })).status).toBe(404);
    expect((await s.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/usage`, { token: other.accessToken })).status).toBe(404);
    expect((await s.api("GET", `/orgs/${p.orgId}/projects/prj_nope/usage`, { token: p.token })).status).toBe(404);
    expect((await s.api("GET", `/orgs/${p.orgId}/projects/${p.projectId}/usage`)).status).toBe(401);
  });
});

async function apiToken(p: P & { session?: Session }) {
  const r = await s.api("POST", "/me/tokens", { token: p.token, body: { name: `cli-${Date.now()}`, orgId: p.orgId } });
  expect(r.status).toBe(201);
  return r.body.token as string;
}

describe("budgets", () => {
  test("per task: crossing it mid-run pauses the real process and asks; approve raises the allowance and goes on; the next crossing asks again; deny cancels", async () => {
    const p = await orgWithProject(s, owner, { budget: { perTaskUsd: 0.05 } });
    const { proc } = await run(p.orgId, "budget-task");
    await proc.waitFor(/connected as/);
    const t = await createTaskApi(s, p, { title: "spend" });
    const asked = await waitStatus(p, t.id, "needs_approval");
    expect(asked.needs).toEqual({ kind: "budget", message: "over budget: $0.06 of $0.05; continue?", costUsd: 0.06, allowanceUsd: 0.05 });
    expect(asked.allowanceUsd).toBe(0.05);
    // The process is stopped: no more progress.
    await Bun.sleep(500);
    const stoppedAt = await lastTick(p, t.id);
    await Bun.sleep(1500);
    expect(await lastTick(p, t.id)).toBe(stoppedAt);
    expect(stoppedAt).toBeLessThan(10);
    const decision = (await events(p, t.id)).find((e) => e.type === "decision");
    expect(decision.data).toMatchObject({ kind: "budget", decision: "ask", by: "project budget", costUsd: 0.06, allowanceUsd: 0.05 });

    // Approve: the allowance is raised by perTaskUsd, on the record, and the agent goes on.
    const approved = await action(p, t.id, { action: "approve" });
    expect(approved.status).toBe(200);
    expect(approved.body).toMatchObject({ status: "running", needs: null, allowanceUsd: 0.1 });
    const second = await waitStatus(p, t.id, "needs_approval");
    expect(second.needs).toMatchObject({ kind: "budget", message: "over budget: $0.11 of $0.10; continue?" });
    expect(await lastTick(p, t.id)).toBeGreaterThan(stoppedAt);
    const approveEvent = (await events(p, t.id)).find((e) => e.type === "action" && e.data.action === "approve");
    expect(approveEvent.actor).toMatchObject({ type: "user", id: owner.userId, name: expect.any(String) });
    expect(approveEvent.data.budget).toEqual({ allowanceUsd: 0.1 });

    // Deny cancels the task (there is no tool call to refuse) and the worker stops the process.
    const pid = Number(await Bun.file(join(tmp, "pids", t.id)).text());
    const denied = await action(p, t.id, { action: "deny", reason: "too expensive" });
    expect(denied.status).toBe(200);
    expect(denied.body.status).toBe("cancelled");
    await until(() => !alive(pid), 5000);
    const evs = await events(p, t.id);
    expect(evs.find((e) => e.type === "action" && e.data.action === "deny").data).toMatchObject({ reason: "too expensive", budget: { cancelled: true } });
    expect((await task(p, t.id)).usage.costUsd).toBeCloseTo(0.11, 5);
  }, 40_000);

  test("an approval the cost already passes asks again at once, the process never continued meanwhile; the next one lets it go on", async () => {
    const p = await orgWithProject(s, owner, { budget: { perTaskUsd: 0.05 } });
    const { proc } = await run(p.orgId, "budget-jump");
    await proc.waitFor(/connected as/);
    const t = await createTaskApi(s, p, { title: "jump" });
    expect((await waitStatus(p, t.id, "needs_approval")).needs).toMatchObject({ kind: "budget", message: "over budget: $0.12 of $0.05; continue?" });
    const pid = Number(await Bun.file(join(tmp, "pids", t.id)).text());
    await until(() => processState(pid) === "T", 20_000, 50);
    const switches = voluntarySwitches(pid);
    // 0.10 is still under 0.12: the worker asks again without continuing the process (continued and
    // stopped again, it would have woken once, and run for a moment no allowance covered).
    expect((await action(p, t.id, { action: "approve" })).body).toMatchObject({ status: "running", allowanceUsd: 0.1 });
    const again = await until(async () => {
      const r = await task(p, t.id);
      return r.status === "needs_approval" && r.allowanceUsd === 0.1 && r;
    }, 15_000, 50);
    expect(again.needs).toMatchObject({ kind: "budget", message: "over budget: $0.12 of $0.10; continue?" });
    expect(processState(pid)).toBe("T");
    expect(voluntarySwitches(pid)).toBe(switches);
    // 0.15 covers it: the process goes on (back to waiting on its input, no longer stopped).
    expect((await action(p, t.id, { action: "approve" })).body).toMatchObject({ status: "running", allowanceUsd: 0.15 });
    await until(() => processState(pid) === "S", 20_000, 50);
    expect(voluntarySwitches(pid)).toBeGreaterThan(switches);
    expect((await task(p, t.id)).status).toBe("running");
    expect((await action(p, t.id, { action: "cancel" })).status).toBe(200);
  }, 40_000);

  test("a later attempt knows the raised allowance and what the earlier ones cost (the claim carries them)", async () => {
    const p = await orgWithProject(s, owner, { budget: { perTaskUsd: 0.05 } });
    const { proc } = await run(p.orgId, "budget-retry");
    await proc.waitFor(/connected as/);
    const t = await createTaskApi(s, p, { title: "spend" });
    await waitStatus(p, t.id, "needs_approval");
    expect((await action(p, t.id, { action: "approve" })).status).toBe(200);
    await waitStatus(p, t.id, "needs_approval");
    expect((await action(p, t.id, { action: "cancel" })).status).toBe(200);
    // Attempt 1 cost 0.11 of an allowance of 0.10; attempt 2 starts with 0.11 spent: its first report passes 0.10 at once.
    expect((await action(p, t.id, { action: "retry" })).status).toBe(200);
    const asked = await until(async () => {
      const r = await task(p, t.id);
      return r.attempt === 2 && r.status === "needs_approval" && r;
    }, 15_000, 50);
    expect(asked.needs).toMatchObject({ kind: "budget", message: "over budget: $0.12 of $0.10; continue?" });
    expect((await action(p, t.id, { action: "cancel" })).status).toBe(200);
  }, 40_000);

  test("per day: a project at its daily budget gets no new offers and its queued tasks say why; a raised budget releases them at once", async () => {
    const p = await orgWithProject(s, owner, { budget: { perDayUsd: 0.05 } });
    const { proc } = await run(p.orgId, "budget-day");
    await proc.waitFor(/connected as/);
    const first = await createTaskApi(s, p, { title: "daily" });
    expect((await waitStatus(p, first.id, "completed")).usage.costUsd).toBe(0.06);
    const held = await createTaskApi(s, p, { title: "after" });
    await Bun.sleep(1500);
    const waiting = await task(p, held.id);
    expect(waiting).toMatchObject({ status: "queued", attempt: 0, waitingReason: "project over its daily budget ($0.06 of $0.05)" });
    const listed = (await s.api("GET", `/orgs/${p.orgId}/tasks?status=queued`, { token: p.token })).body.items.find((x: any) => x.id === held.id);
    expect(listed.waitingReason).toBe("project over its daily budget ($0.06 of $0.05)");
    // Another project of the org is not held.
    const free = await s.api("POST", `/orgs/${p.orgId}/projects`, { token: p.token, body: { name: `free-${Date.now()}` } });
    const other = await createTaskApi(s, { ...p, projectId: free.body.id }, { title: "other" });
    await waitStatus(p, other.id, "completed");
    expect((await task(p, held.id)).status).toBe("queued");
    // Raising the budget releases the queue at once (no waiting for the next day).
    const raised = await s.api("PATCH", `/orgs/${p.orgId}/projects/${p.projectId}`, { token: p.token, body: { policy: { budget: { perDayUsd: 1 } } } });
    expect(raised.status).toBe(200);
    const done = await waitStatus(p, held.id, "completed", 5000);
    expect(done.waitingReason).toBeNull();
  }, 40_000);
});

describe("agents", () => {
  test("a task naming an agent goes to a worker that has it, not to one that does not; one no worker has waits and says why", async () => {
    const org = await newOrg(s);
    const p = await orgWithProject(s, org);
    const execOnly = await run(p.orgId, "agents-exec", ["--agent", "exec", "--exec", `sh ${script}`], { PATH: `${bin}:${SYSTEM_PATH}` });
    const claudeOnly = await run(p.orgId, "agents-claude", ["--agent", "claude"], { PATH: `${bin}:${SYSTEM_PATH}` });
    await execOnly.proc.waitFor(/connected as/);
    await claudeOnly.proc.waitFor(/connected as/);
    // Each advertises what it runs, with versions.
    const rec = async (id: string) => (await s.api("GET", `/orgs/${p.orgId}/workers/${id}`, { token: p.token })).body;
    expect((await rec(execOnly.workerId)).agents).toEqual([{ name: "exec", version: null, command: "sh" }]);
    expect((await rec(claudeOnly.workerId)).agents).toEqual([{ name: "claude", version: "9.9.9" }]);

    const forClaude = await Promise.all([1, 2, 3].map(() => createTaskApi(s, p, { title: "claude task", agent: "claude" })));
    const forExec = await Promise.all([1, 2, 3].map(() => createTaskApi(s, p, { title: "exec task", agent: "exec" })));
    for (const t of forClaude) expect(await waitStatus(p, t.id, "completed")).toMatchObject({ agent: "claude", workerId: claudeOnly.workerId });
    for (const t of forExec) expect(await waitStatus(p, t.id, "completed")).toMatchObject({ agent: "exec", workerId: execOnly.workerId, summary: null });

    const forCodex = await createTaskApi(s, p, { title: "codex task", agent: "codex" });
    await Bun.sleep(1000);
    expect(await task(p, forCodex.id)).toMatchObject({ status: "queued", attempt: 0, waitingReason: "no online worker has the agent 'codex'" });
    expect((await action(p, forCodex.id, { action: "cancel" })).status).toBe(200);
  }, 60_000);

  test("one worker with several agents (--agent auto) runs each task with the one it names, else the project's preferredAgent", async () => {
    const org = await newOrg(s);
    const p = await orgWithProject(s, org, { preferredAgent: "claude" });
    const { proc, workerId } = await run(p.orgId, "agents-auto", ["--agent", "auto", "--exec", `sh ${script}`], { PATH: `${bin}:${SYSTEM_PATH}` });
    await proc.waitFor(/agent exec, claude/);
    await proc.waitFor(/connected as/);
    const agents = (await s.api("GET", `/orgs/${p.orgId}/workers/${workerId}`, { token: p.token })).body.agents.map((a: any) => a.name);
    expect(agents).toEqual(["exec", "claude"]);
    const preferred = await createTaskApi(s, p, { title: "no agent named" });
    expect(await waitStatus(p, preferred.id, "completed")).toMatchObject({ agent: null, summary: "Fixed: sum() subtracted instead of adding. The test suite passes now." });
    await proc.waitFor(new RegExp(`${preferred.id} runs with claude`));
    const named = await createTaskApi(s, p, { title: "named", agent: "exec" });
    await waitStatus(p, named.id, "completed");
    await proc.waitFor(new RegExp(`${named.id} runs with exec`));
    expect((await events(p, named.id)).some((e) => e.type === "log" && e.data.line === "ran with exec")).toBe(true);
  }, 40_000);

  test("task create: agent must be a known agent name (400 naming it); viewers cannot create (403)", async () => {
    const p = await orgWithProject(s, owner);
    const bad = await s.api("POST", `/orgs/${p.orgId}/tasks`, { token: p.token, body: { projectId: p.projectId, title: "t", prompt: "p", agent: "gpt" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: any) => d.field)).toEqual(["agent"]);
    const viewer = await addMember(s, owner, "viewer");
    const refused = await s.api("POST", `/orgs/${p.orgId}/tasks`, { token: viewer.accessToken, body: { projectId: p.projectId, title: "t", prompt: "p", agent: "exec" } });
    expect(refused.status).toBe(403);
  });
});
