// Real `ao worker` processes against a real server: pairing read off the worker's own output,
// full tasks through the exec adapter (logs, summary, artifacts, plan), needs-input and
// needs-approval round trips, cancel of a running agent's whole process group, kill -9 of the
// worker mid-task, revocation and the approval gate.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, newOrg, type Session } from "../helpers/identity";
import { addRepositoryRow, createTaskApi, orgWithProject, until } from "../workers/helpers";
import { presenceOf } from "../../src/modules/workers/presence";
import { all } from "../../src/db/query";
import { alive, bareFrom, gitRepo, preparedWorker, sh, startWorker, type WorkerProcess } from "./worker-helpers";
import { processState } from "../helpers/processes";

const TIMEOUTS = { offerMs: 2000, offlineMs: 1500, heartbeatMs: 300 };

let s: TestServer;
let tmp: string;
let owner: Session;
const workers: WorkerProcess[] = [];

// One script plays every agent: what it does depends on the task's title.
const AGENT = `
case "$AO_TASK_TITLE" in
  full)
    echo "hello from $AO_TASK_ID ($AO_TASK_KIND)"
    echo "prompt: $AO_TASK_PROMPT"
    echo "commit: $(git log -1 --format=%s 2>/dev/null || echo none)"
    echo "oops" >&2
    printf '# Report\\n' > "$AO_ARTIFACTS_DIR/report.md"
    mkdir -p "$AO_ARTIFACTS_DIR/shots" && printf 'PNG' > "$AO_ARTIFACTS_DIR/shots/one.png"
    echo "::ao::summary all done"
    ;;
  ask)
    echo "::ao::needs-input What color?"
    read answer
    echo "got $answer"
    echo "::ao::summary color=$answer"
    ;;
  approval)
    echo "::ao::needs-approval Deploy to production?"
    read decision
    echo "decision: $decision"
    [ "$decision" = "approve" ] || { echo "::ao::summary $decision"; exit 1; }
    echo "::ao::summary deployed"
    ;;
  sleep)
    sh -c 'trap "" TERM; sleep 300' &
    echo $! > "$PIDS/$AO_TASK_ID.child"
    echo $$ > "$PIDS/$AO_TASK_ID.main"
    echo started
    wait
    ;;
  crash)
    if [ "$AO_TASK_ATTEMPT" = "1" ]; then echo $$ > "$PIDS/$AO_TASK_ID.main"; echo started; sleep 300; fi
    echo "::ao::summary attempt $AO_TASK_ATTEMPT finished"
    ;;
  plan)
    echo '{"tasks":[{"title":"step one","prompt":"do one"},{"title":"step two","prompt":"do two","priority":"HIGH"}]}' > "$AO_ARTIFACTS_DIR/plan.json"
    ;;
  flood)
    i=0; while [ $i -lt 600 ]; do printf '%s %03000d\\n' "$i" 0; i=$((i+1)); done
    head -c 1000000 /dev/zero | tr '\\0' 'x'; echo
    echo "::ao::summary $(head -c 30000 /dev/zero | tr '\\0' 's')"
    ;;
  badplan)
    echo '{"tasks":[{"title":"look","prompt":"review it","kind":"review"}]}' > "$AO_ARTIFACTS_DIR/plan.json"
    ;;
  review)
    echo "head=$(git rev-parse HEAD) base=$AO_REVIEW_BASE_SHA"
    echo "::ao::summary reviewed $(git diff --name-only refs/ao/base...HEAD)"
    ;;
  fail)
    echo "about to fail"
    exit 3
    ;;
esac
`;

let script: string;
let pids: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-worker-e2e-"));
  script = join(tmp, "agent.sh");
  writeFileSync(script, AGENT);
  pids = join(tmp, "pids");
  sh(tmp, "mkdir", "-p", pids);
  s = await startTestServer({ workerTimeouts: TIMEOUTS });
  owner = await createAdmin(s);
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await s.stop();
  rmSync(tmp, { recursive: true, force: true });
});

function run(dataDir: string, extra: string[] = [], env: Record<string, string> = {}) {
  const w = startWorker(s, dataDir, ["--exec", `sh ${script}`, ...extra], { PIDS: pids, ...env });
  workers.push(w);
  return w;
}

const task = async (p: { orgId: string; token: string }, id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}`, { token: p.token })).body;
const events = async (p: { orgId: string; token: string }, id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}/events?limit=200`, { token: p.token })).body.items as any[];
const action = (p: { orgId: string; token: string }, id: string, body: Record<string, unknown>) =>
  s.api("POST", `/orgs/${p.orgId}/tasks/${id}/actions`, { token: p.token, body });
/** Every row of every table, as one string (to look for what must never be stored). */
const dumpDb = async () => {
  const tables = await s.core.store.read(all<{ name: string }>(
    s.core.store.dialect === "postgres"
      ? "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'"
      : "SELECT name FROM sqlite_master WHERE type = 'table'",
  ));
  const dumps = [];
  for (const t of tables) dumps.push(JSON.stringify(await s.core.store.read(all(`SELECT * FROM "${t.name}"`))));
  return dumps.join("\n");
};
// Provider keys the worker has in its environment: their names are reported, their values never.
const SECRETS = { ANTHROPIC_API_KEY: "sk-ant-e2e-SECRET-4f9a1c", OPENAI_API_KEY: "sk-openai-e2e-SECRET-77b2" };
const waitStatus = (p: { orgId: string; token: string }, id: string, status: string, ms = 15_000) =>
  until(async () => {
    const t = await task(p, id);
    return t.status === status && t;
  }, ms, 50);

describe("a paired worker runs tasks", () => {
  let p: Awaited<ReturnType<typeof orgWithProject>>;
  let dataDir: string;
  let worker: WorkerProcess;

  test("pairing: the code from the worker's output, approved by a person; credential kept with mode 0600", async () => {
    p = await orgWithProject(s, owner);
    dataDir = join(tmp, "paired");
    worker = run(dataDir, ["--name", "e2e-box", "--labels", "linux,e2e", "--capacity", "2"], SECRETS);
    const [, code] = await worker.waitFor(/code: ([A-Z]{4}-[A-Z]{4})/);
    const [, link] = await worker.waitFor(/open: (\S+)/);
    expect(link).toEndWith(`/pair?code=${code}`);
    const described = await s.api("GET", `/pairing/${code}`, { token: owner.accessToken });
    expect(described.body).toMatchObject({ name: "e2e-box", labels: ["linux", "e2e"], status: "pending" });
    expect((await s.api("POST", "/pairing/approve", { token: owner.accessToken, body: { userCode: code, orgId: owner.orgId } })).status).toBe(200);
    const [, workerId] = await worker.waitFor(/connected as (wkr_\w+)/, 20_000);
    const file = join(dataDir, "credential.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, "utf8"));
    expect(stored).toMatchObject({ workerId, orgId: owner.orgId });
    expect(stored.credential).toStartWith("aow_");
    const rec = (await s.api("GET", `/orgs/${owner.orgId}/workers/${workerId}`, { token: owner.accessToken })).body;
    expect(rec).toMatchObject({ status: "online", name: "e2e-box", capacity: 2 });
    expect(rec.tools.map((t: any) => t.name)).toContain("git");
    expect(rec.providers).toEqual(expect.arrayContaining(["ANTHROPIC_API_KEY", "OPENAI_API_KEY"]));
    expect(rec.providers.every((v: string) => /^[A-Z_]+$/.test(v))).toBe(true);
    const db = await dumpDb();
    expect(db).toContain("ANTHROPIC_API_KEY");
    for (const value of Object.values(SECRETS)) expect(db).not.toContain(value);
  }, 40_000);

  test("a full task: checkout of the primary repository, logs, summary, artifacts", async () => {
    const source = gitRepo(join(tmp, "src-full"), { "README.md": "# demo\n" }, { message: "the first commit" });
    const bare = bareFrom(source, join(tmp, "full.git"));
    await addRepositoryRow(s, p.orgId, p.projectId, `file://${bare}`);
    const onSocket = async (op: string) => (await s.core.metrics.socketRequests.get()).values.filter((v) => v.labels.op === op && v.labels.status === 200).reduce((n, v) => n + v.value, 0);
    const overHttp = async () => (await s.core.metrics.requests.get()).values.filter((v) => /worker\/tasks\/:taskId\/(claim|events|transition)$/.test(String(v.labels.route))).reduce((n, v) => n + v.value, 0);
    const before = { claims: await onSocket("claim"), transitions: await onSocket("transition"), events: await onSocket("events"), http: await overHttp() };
    const t = await createTaskApi(s, p, { title: "full", prompt: "say hello" });
    const done = await waitStatus(p, t.id, "completed");
    expect(done).toMatchObject({ summary: "all done", attempt: 1 });
    // The worker claimed, reported and finished on its socket, not over HTTP.
    expect(await overHttp()).toBe(before.http);
    expect(await onSocket("claim")).toBe(before.claims + 1);
    expect(await onSocket("transition")).toBe(before.transitions + 1);
    expect(await onSocket("events")).toBeGreaterThan(before.events);
    expect(done.artifacts.map((a: any) => a.name).sort()).toEqual(["report.md", "shots_one.png"]);
    const evs = await events(p, t.id);
    const lines = evs.filter((e) => e.type === "log").map((e) => e.data.line);
    expect(lines).toContain(`hello from ${t.id} (task)`);
    expect(lines).toContain("prompt: say hello");
    expect(lines).toContain("commit: the first commit");
    expect(evs.find((e) => e.type === "log" && e.data.stream === "stderr")?.data.line).toBe("oops");
    expect(lines.some((l: string) => l.startsWith("::ao::"))).toBe(false);
    const dl = await fetch(`${s.url}/api/v1/orgs/${p.orgId}/tasks/${t.id}/artifacts/report.md`, { headers: { authorization: `Bearer ${p.token}` } });
    expect(await dl.text()).toBe("# Report\n");
    // Nothing of a completed attempt is left on the worker.
    await until(() => !existsSync(join(dataDir, "runs", `${t.id}-a1`)));
  });

  test("a flood of output: 1.8 MB of lines, a 1 MB line and an over-long summary all reach the server (cut where too big)", async () => {
    const t = await createTaskApi(s, p, { title: "flood" });
    const done = await waitStatus(p, t.id, "completed", 30_000);
    expect(done.summary.length).toBeLessThanOrEqual(20_000);
    expect(done.summary).toEndWith("more characters)");
    const all: any[] = [];
    for (let after = 0; ; ) {
      const page = (await s.api("GET", `/orgs/${p.orgId}/tasks/${t.id}/events?limit=200&after=${after}`, { token: p.token })).body;
      all.push(...page.items);
      if (!page.nextCursor) break;
      after = page.items.at(-1).seq;
    }
    const lines = all.filter((e) => e.type === "log" && e.data.stream === "stdout");
    expect(lines).toHaveLength(601);
    expect(lines.slice(0, 600).map((e) => Number(e.data.line.split(" ")[0]))).toEqual(Array.from({ length: 600 }, (_, i) => i));
    expect(lines[600].data.truncated).toBe(true);
    expect(lines[600].data.line).toStartWith("xxxx");
  }, 40_000);

  test("needs-input and needs-approval round trips (answer on stdin)", async () => {
    const ask = await createTaskApi(s, p, { title: "ask" });
    const appr = await createTaskApi(s, p, { title: "approval" });
    const asking = await waitStatus(p, ask.id, "needs_input");
    expect(asking.needs).toEqual({ kind: "input", message: "What color?" });
    const approving = await waitStatus(p, appr.id, "needs_approval");
    expect(approving.needs).toEqual({ kind: "approval", message: "Deploy to production?" });
    // Both slots of --capacity 2 are taken: a third task waits in the queue.
    const third = await createTaskApi(s, p, { title: "full" });
    await Bun.sleep(600);
    expect(await task(p, third.id)).toMatchObject({ status: "queued", attempt: 0 });
    expect((await action(p, ask.id, { action: "input", input: "blue" })).status).toBe(200);
    expect((await action(p, appr.id, { action: "deny", reason: "not on a Friday" })).status).toBe(200);
    expect(await waitStatus(p, ask.id, "completed")).toMatchObject({ summary: "color=blue" });
    const denied = await waitStatus(p, appr.id, "failed");
    expect(denied.summary).toBe("deny not on a Friday");
    expect((await events(p, appr.id)).some((e) => e.type === "error" && /exited with code 1/.test(e.data.message))).toBe(true);
    const again = await createTaskApi(s, p, { title: "approval" });
    await waitStatus(p, again.id, "needs_approval");
    await action(p, again.id, { action: "approve" });
    expect(await waitStatus(p, again.id, "completed")).toMatchObject({ summary: "deployed" });
    expect(await waitStatus(p, third.id, "completed")).toMatchObject({ summary: "all done" });
  });

  test("a dropped connection: the worker reconnects after a jittered wait and keeps the attempt it runs", async () => {
    const t = await createTaskApi(s, p, { title: "ask" });
    await waitStatus(p, t.id, "needs_input");
    const workerId = (await task(p, t.id)).workerId;
    const from = worker.output.length;
    presenceOf(s.core).dispatcher.conns.get(workerId)!.ws.close(1012, "test drops the connection");
    const [, wait] = await worker.waitFor(/disconnected; reconnecting in (\d+\.\d) s/, 5000, from);
    expect(Number(wait)).toBeLessThanOrEqual(0.5); // full jitter: a random wait up to 0.5 s * 2^failures (none yet)
    await worker.waitFor(/connected as/, 5000, from);
    expect(await task(p, t.id)).toMatchObject({ status: "needs_input", attempt: 1, workerId });
    expect((await action(p, t.id, { action: "input", input: "green" })).status).toBe(200);
    expect(await waitStatus(p, t.id, "completed")).toMatchObject({ summary: "color=green", attempt: 1 });
  });

  test("pause stops and resume continues the agent's process group; cancel kills it (SIGTERM, then SIGKILL for what ignores it)", async () => {
    const t = await createTaskApi(s, p, { title: "sleep" });
    await until(async () => (await events(p, t.id)).some((e) => e.type === "log" && e.data.line === "started"), 15_000, 30);
    const main = Number(readFileSync(join(pids, `${t.id}.main`), "utf8"));
    const child = Number(readFileSync(join(pids, `${t.id}.child`), "utf8"));
    expect(alive(main) && alive(child)).toBe(true);
    // Pause stops the whole group (SIGSTOP), resume continues it.
    // The signals themselves are at once; the wait is for the control's way through the server
    // and the worker, which a loaded CI machine once stretched past 3 s.
    expect((await action(p, t.id, { action: "pause" })).status).toBe(200);
    await until(() => processState(main) === "T" && processState(child) === "T", 10_000, 10);
    expect((await action(p, t.id, { action: "resume" })).status).toBe(200);
    await until(() => processState(main) !== "T" && processState(child) !== "T", 10_000, 10);
    const started = Date.now();
    expect((await action(p, t.id, { action: "cancel", reason: "enough" })).status).toBe(200);
    await until(() => !alive(main), 3000, 10);
    const mainGone = Date.now() - started;
    await until(() => !alive(child), 3000, 10);
    expect(mainGone).toBeLessThan(1000);
    expect((await task(p, t.id)).status).toBe("cancelled");
  });

  test("plan tasks report plan.json; failing agents fail the task; reviews check out head with base", async () => {
    const plan = await createTaskApi(s, p, { title: "plan", kind: "plan" });
    const planned = await waitStatus(p, plan.id, "completed");
    expect(planned.plan.tasks.map((x: any) => x.title)).toEqual(["step one", "step two"]);
    // A plan the server cannot apply fails the task with the reason (not a task stuck running): the
    // worker checks plan.json with the server's own check, so it names the fault itself.
    const bad = await createTaskApi(s, p, { title: "badplan", kind: "plan" });
    expect(await waitStatus(p, bad.id, "failed")).toMatchObject({ plan: null });
    const refusal = (await events(p, bad.id)).find((e) => e.type === "error")?.data.message;
    expect(refusal).toContain("plan.json");
    expect(refusal).toContain("tasks.0.review: is required with kind review");
    // A failed attempt keeps its checkout for a retry that continues; at most 20 are kept, the oldest go.
    const keptRoot = join(dataDir, "runs", "kept");
    mkdirSync(keptRoot, { recursive: true });
    const long = new Date(Date.now() - 86_400_000);
    for (let i = 0; i < 25; i++) {
      mkdirSync(join(keptRoot, `tsk_old${i}`));
      utimesSync(join(keptRoot, `tsk_old${i}`), long, long);
    }
    const fail = await createTaskApi(s, p, { title: "fail" });
    await waitStatus(p, fail.id, "failed");
    expect((await events(p, fail.id)).some((e) => e.type === "error" && e.data.message === "the agent exited with code 3")).toBe(true);
    const kept = await until(() => {
      const k = readdirSync(keptRoot);
      return k.length <= 20 && k;
    });
    expect(kept).toHaveLength(20);
    expect(kept).toContain(fail.id);
    // A review: feature branch on the remote; the agent sees head checked out and base named.
    const source = join(tmp, "src-full");
    sh(source, "git", "checkout", "-q", "-b", "feature");
    writeFileSync(join(source, "feature.txt"), "new\n");
    sh(source, "git", "add", "-A");
    sh(source, "git", "commit", "-q", "-m", "feature work");
    sh(source, "git", "push", "-q", join(tmp, "full.git"), "feature");
    const head = sh(source, "git", "rev-parse", "HEAD");
    const base = sh(source, "git", "rev-parse", "main");
    const review = await createTaskApi(s, p, { title: "review", kind: "review", review: { base: "main", head: "feature" } });
    const reviewed = await waitStatus(p, review.id, "completed");
    expect(reviewed.summary).toBe("reviewed feature.txt");
    expect((await events(p, review.id)).some((e) => e.type === "log" && e.data.line === `head=${head} base=${base}`)).toBe(true);
  });

  test("revoke: the worker is told at once, stops, and its running task goes back to the queue", async () => {
    const t = await createTaskApi(s, p, { title: "sleep" });
    await waitStatus(p, t.id, "running");
    const rec = (await s.api("GET", `/orgs/${p.orgId}/workers?limit=1`, { token: p.token })).body.items[0];
    expect((await s.api("DELETE", `/orgs/${p.orgId}/workers/${rec.id}`, { token: p.token })).status).toBe(200);
    await worker.waitFor(/credential was revoked/, 5000);
    expect(await worker.exited).toBe(3);
    const back = await task(p, t.id);
    expect(back).toMatchObject({ status: "queued", workerId: null, attempt: 1 });
    await action(p, t.id, { action: "cancel" });
    // The same credential is refused from now on.
    const again = run(dataDir);
    expect(await again.exited).toBe(3);
    expect(again.output).toContain("refused the credential");
    // After all those tasks, the provider keys' values are still nowhere in the database.
    const stored = await dumpDb();
    for (const value of Object.values(SECRETS)) expect(stored).not.toContain(value);
  }, 20_000);
});

describe("faults and gates", () => {
  test("kill -9 mid-task: the task requeues and finishes on the same worker after it returns, without pairing again", async () => {
    const org = await newOrg(s);
    const p = await orgWithProject(s, org);
    const dataDir = join(tmp, "crashy");
    await preparedWorker(s, p.orgId, dataDir);
    const first = run(dataDir);
    await first.waitFor(/connected as/);
    const t = await createTaskApi(s, p, { title: "crash" });
    await until(async () => (await events(p, t.id)).some((e) => e.type === "log" && e.data.line === "started"), 15_000, 30);
    const orphan = Number(readFileSync(join(pids, `${t.id}.main`), "utf8"));
    first.proc.kill("SIGKILL");
    await first.exited;
    expect(alive(orphan)).toBe(true); // the agent outlives its worker...
    const second = run(dataDir);
    await second.waitFor(/connected as/);
    expect(second.output).not.toContain("code:");
    await until(() => !alive(orphan), 5000); // ...until the worker comes back and ends it
    const done = await waitStatus(p, t.id, "completed", 20_000);
    expect(done).toMatchObject({ attempt: 2, summary: "attempt 2 finished" });
    expect((await events(p, t.id)).some((e) => e.type === "error" && /attempt 1 was lost/.test(e.data.message))).toBe(true);
    await second.stop();
  }, 40_000);

  test("approval gate: a pending worker connects but runs nothing until approved", async () => {
    const org = await newOrg(s);
    const p = await orgWithProject(s, org);
    const dataDir = join(tmp, "pending");
    const w = await preparedWorker(s, p.orgId, dataDir, { approved: false });
    const proc = run(dataDir);
    await proc.waitFor(/waiting for approval/);
    const t = await createTaskApi(s, p, { title: "full" });
    await Bun.sleep(500);
    expect((await task(p, t.id)).status).toBe("queued");
    expect((await s.api("POST", `/orgs/${p.orgId}/workers/${w.workerId}/approve`, { token: p.token })).status).toBe(200);
    expect(await waitStatus(p, t.id, "completed")).toMatchObject({ summary: "all done" });
    await proc.stop();
  });
});
