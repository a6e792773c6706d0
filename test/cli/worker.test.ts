// The command line as a person uses it with a real `ao worker --exec` doing the work:
// --wait exits 0 (completed), 3 (needs input, answered with `ao task input`), 1 (failed).
// `ao worker` itself refuses a bad list of servers with exit 2 and documents several in --help.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, login } from "../helpers/identity";
import { orgWithProject, until } from "../workers/helpers";
import { preparedWorker, startWorker, WorkerProcess } from "../e2e/worker-helpers";
import { newConfigDir, runCli, seedSession } from "./helpers";

const AGENT = `
case "$AO_TASK_TITLE" in
  build)
    echo "building $AO_TASK_ID"
    echo "::ao::summary built it"
    ;;
  ask)
    echo "::ao::needs-input Which colour?"
    read answer
    echo "got $answer"
    echo "::ao::summary colour=$answer"
    ;;
  broken)
    echo "about to fail"
    exit 3
    ;;
  flaky)
    # Each attempt fails its own way: exit 3, then 4, ...
    n=$(($(cat "@COUNTS@/$AO_TASK_ID" 2>/dev/null || echo 2) + 1))
    echo $n > "@COUNTS@/$AO_TASK_ID"
    exit $n
    ;;
esac
`;

let s: TestServer;
let tmp: string;
let worker: WorkerProcess;
let env: Record<string, string>;
let projectId: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-cli-worker-"));
  writeFileSync(join(tmp, "agent.sh"), AGENT.replaceAll("@COUNTS@", tmp));
  s = await startTestServer({ workerTimeouts: { offerMs: 2000, offlineMs: 1500, heartbeatMs: 300 } });
  const owner = await createAdmin(s);
  const p = await orgWithProject(s, owner);
  projectId = p.projectId;
  const dir = newConfigDir();
  seedSession(dir, s.url, { ...(await login(s, owner.email)), email: owner.email, orgId: owner.orgId });
  env = { AO_CONFIG_DIR: dir };
  await preparedWorker(s, p.orgId, join(tmp, "worker"));
  worker = startWorker(s, join(tmp, "worker"), ["--exec", `sh ${join(tmp, "agent.sh")}`]);
  // A worker process probes its tools before it connects: seconds on a busy machine.
  await worker.waitFor(/connected as/, 30_000);
}, 60_000);

afterAll(async () => {
  await worker?.stop();
  await s?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

const create = (title: string, ...extra: string[]) => runCli(["task", "create", "--project", projectId, "--title", title, "--prompt", "p", "--wait", ...extra], env);

describe("ao task create --wait with a real worker", () => {
  test("completed: exit 0, the worker's log lines in the timeline, the summary last", async () => {
    const r = await create("build");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const id = r.stdout.match(/^Created task (tsk_\w+): build$/m)![1];
    expect(r.stdout).toMatch(new RegExp(`^#\\d+ \\d\\d:\\d\\d:\\d\\d log building ${id}$`, "m"));
    expect(r.stdout).toMatch(/ status queued -> running by worker w\n/);
    expect(r.stdout).toEndWith(`task ${id} completed: built it\n`);
  }, 30_000);

  test("needs input: exit 3; `ao task input` answers; `events --follow` sees it through", async () => {
    const r = await create("ask");
    expect(r.code).toBe(3);
    const id = r.stdout.match(/^Created task (tsk_\w+): ask$/m)![1]!;
    expect(r.stdout).toEndWith(`task ${id} needs input: Which colour?\n  answer with: ao task input ${id} --input TEXT\n`);

    const answered = await runCli(["task", "input", id, "--input", "blue"], env);
    expect(answered).toMatchObject({ code: 0, stdout: `input: task ${id} is now running\n` });
    const followed = await runCli(["task", "events", id, "--follow"], env);
    expect(followed.code).toBe(0);
    expect(followed.stdout).toMatch(/ action input by Admin \(input: blue\)\n/);
    expect(followed.stdout).toMatch(/ log got blue\n/);
    expect(followed.stdout).toMatch(/ -> completed by worker w: colour=blue\n$/);
    const shown = JSON.parse((await runCli(["task", "show", id, "--json"], env)).stdout);
    expect(shown).toMatchObject({ status: "completed", summary: "colour=blue" });
  }, 30_000);

  test("failed: exit 1, --json gives the final task", async () => {
    const r = await create("broken", "--json");
    expect(r.code).toBe(1);
    expect(JSON.parse(r.stdout)).toMatchObject({ title: "broken", status: "failed", failureReason: "the agent exited with code 3" });
  }, 30_000);

  test("a failed task says why in `ao task show`: its last attempt's error, not an earlier attempt's", async () => {
    const first = await create("flaky", "--json");
    expect(first.code).toBe(1);
    const id = JSON.parse(first.stdout).id as string;
    expect((await runCli(["task", "show", id], env)).stdout).toMatch(/^status +failed \(attempt 1\)\nreason +the agent exited with code 3\n/m);

    const retried = JSON.parse((await runCli(["task", "retry", id, "--json"], env)).stdout);
    // Queued again: it has not failed, so there is no reason, though the timeline keeps the old error.
    expect(retried).toMatchObject({ status: "queued", failureReason: null });
    await until(async () => JSON.parse((await runCli(["task", "show", id, "--json"], env)).stdout).status === "failed", 20_000, 100);
    const shown = (await runCli(["task", "show", id], env)).stdout;
    expect(shown).toMatch(/^status +failed \(attempt 2\)\nreason +the agent exited with code 4\n/m);
    expect(shown).not.toContain("code 3");
  }, 40_000);
});

describe("ao worker --server", () => {
  test.each([
    ["the same server twice", ["--server", "http://ao1:7070", "--server", "http://ao1:7070/"], "--server http://ao1:7070 is given twice"],
    ["one of them not http", ["--server", "http://ao1:7070,ao2:7070"], "--server ao2:7070 is not an http:// or https:// URL"],
  ])("%s: exit 2 and why", async (_name, args, message) => {
    const w = new WorkerProcess([...args, "--exec", "true", "--data-dir", join(tmp, "refused")]);
    // The output is read until its line ends: the exit may come before the last of the pipe.
    await w.waitFor(/\n/);
    expect(await w.exited).toBe(2);
    expect(w.output).toBe(`${message}\n`);
  });

  test("--help shows several servers, --no-confine and --require-confine", async () => {
    const w = new WorkerProcess(["--help"]);
    await w.waitFor(/AO_WORKER_REQUIRE_CONFINE=1\.\n/);
    expect(await w.exited).toBe(0);
    expect(w.output).toStartWith("usage: ao worker --server URL[,URL...] ");
    expect(w.output).toContain("repeat --server or separate the URLs with\ncommas (AO_SERVER too)");
    expect(w.output).toContain("[--no-confine | --require-confine]");
    expect(w.output).toContain("--require-confine exits with status 5");
  });
});
