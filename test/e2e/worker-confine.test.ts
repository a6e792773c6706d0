// A real `ao worker` keeps its credential and the other tasks' checkouts from the exec agent's
// commands (src/worker/confine.ts): inside bubblewrap they can neither read nor overwrite the
// credential, and of the worker's runs they see their own attempt's directory alone; with
// --no-confine they run as before, and the worker says which way it runs. The agent's command
// tries each, in the worker's data directory, which the task's prompt names.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, newOrg, type Session } from "../helpers/identity";
import { testWithBwrap } from "../helpers/bubblewrap";
import { createTaskApi, orgWithProject, until } from "../workers/helpers";
import { preparedWorker, startWorker, type WorkerProcess } from "./worker-helpers";

const AGENT = `cat "$AO_TASK_PROMPT/credential.json" || echo "not read"
echo "x" > "$AO_TASK_PROMPT/credential.json" || echo "not written"
ls "$AO_TASK_PROMPT/runs"
cat "$AO_TASK_PROMPT/runs/tsk_other-a1/work/code.txt" || echo "not seen"
echo "::ao::summary tried"
`;

let s: TestServer;
let tmp: string;
let owner: Session;
let script: string;
const workers: WorkerProcess[] = [];

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-worker-confine-"));
  script = join(tmp, "agent.sh");
  writeFileSync(script, AGENT);
  s = await startTestServer({ workerTimeouts: { offerMs: 2000, offlineMs: 3000, heartbeatMs: 300 } });
  owner = await createAdmin(s);
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await s.stop();
  rmSync(tmp, { recursive: true, force: true });
});

/** A paired worker of a new project running the agent script, with `extra` flags; its credential's file and value. */
async function workerWith(name: string, extra: string[], env: Record<string, string> = {}) {
  const p = await orgWithProject(s, owner);
  const dataDir = join(tmp, name);
  await preparedWorker(s, p.orgId, dataDir);
  const proc = startWorker(s, dataDir, ["--exec", `sh ${script}`, ...extra], env);
  workers.push(proc);
  await proc.waitFor(/connected as/);
  const file = join(dataDir, "credential.json");
  // Another task's checkout, as a running attempt of the worker has it.
  mkdirSync(join(dataDir, "runs", "tsk_other-a1", "work"), { recursive: true });
  writeFileSync(join(dataDir, "runs", "tsk_other-a1", "work", "code.txt"), "another task's code\n");
  return { p, proc, dataDir, file, secret: JSON.parse(readFileSync(file, "utf8")).credential as string };
}

/** Runs one task on the worker's data directory; its id and its log lines once it completed. */
async function tryTheDataDir(p: Awaited<ReturnType<typeof orgWithProject>>, dataDir: string): Promise<{ id: string; lines: string[] }> {
  const t = await createTaskApi(s, p, { title: "the data directory", prompt: dataDir });
  await until(async () => (await s.api("GET", `/orgs/${p.orgId}/tasks/${t.id}`, { token: p.token })).body.status === "completed", 15_000, 50);
  const items = (await s.api("GET", `/orgs/${p.orgId}/tasks/${t.id}/events?limit=200`, { token: p.token })).body.items as any[];
  return { id: t.id, lines: items.filter((e) => e.type === "log").map((e) => e.data.line as string) };
}

testWithBwrap("the exec agent's commands run in bubblewrap: they can neither read nor overwrite the worker's credential, nor see other tasks' checkouts", async () => {
  const { p, proc, dataDir, file, secret } = await workerWith("confined", []);
  expect(proc.output).toContain("ao worker: agent commands run in bubblewrap, without the worker's credential or other tasks' checkouts");
  const { id, lines } = await tryTheDataDir(p, dataDir);
  // Of the runs, its own attempt's directory alone.
  expect(lines).toContain(`${id}-a1`);
  expect(lines).not.toContain("tsk_other-a1");
  expect(lines).toContain("not seen");
  expect(lines).not.toContain("another task's code");
  expect(lines).toContain("not read");
  expect(lines).toContain("not written");
  expect(lines.some((l) => l.includes("Permission denied"))).toBe(true);
  expect(JSON.stringify(lines)).not.toContain(secret);
  expect(JSON.parse(readFileSync(file, "utf8")).credential).toBe(secret);
});

test("--no-confine: the worker says its agents' commands can read its credential and other tasks' checkouts, and they can", async () => {
  const { p, proc, dataDir, secret } = await workerWith("unconfined", ["--no-confine"]);
  expect(proc.output).toContain("ao worker: agent commands can read the worker's credential and other tasks' checkouts: --no-confine");
  const { lines } = await tryTheDataDir(p, dataDir);
  expect(lines.some((l) => l.includes(secret))).toBe(true);
  expect(lines).toContain("tsk_other-a1");
  expect(lines).toContain("another task's code");
});

testWithBwrap("--require-confine: where bubblewrap runs, the worker takes tasks as it would without the flag", async () => {
  const { p, proc, dataDir } = await workerWith("required", ["--require-confine"]);
  expect(proc.output).toContain("ao worker: agent commands run in bubblewrap, without the worker's credential or other tasks' checkouts");
  const { lines } = await tryTheDataDir(p, dataDir);
  expect(lines).toContain("not seen");
});

test("--require-confine: where bubblewrap cannot run, the worker says why and exits with status 5, taking no task", async () => {
  // A bwrap first on PATH that refuses, as one without user namespaces does.
  const bin = join(tmp, "refusing-bwrap");
  mkdirSync(bin, { recursive: true });
  writeFileSync(join(bin, "bwrap"), "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n");
  chmodSync(join(bin, "bwrap"), 0o755);
  // An org of its own: no other worker could take its task.
  const p = await orgWithProject(s, await newOrg(s));
  const dataDir = join(tmp, "required-refused");
  await preparedWorker(s, p.orgId, dataDir);
  const proc = startWorker(s, dataDir, ["--exec", `sh ${script}`, "--require-confine"], { PATH: `${bin}:${process.env.PATH}` });
  workers.push(proc);
  // The output is read until its last line ends: the exit may come before the last of the pipe.
  await proc.waitFor(/so this worker takes no tasks\n/);
  expect(await proc.exited).toBe(5);
  expect(proc.output).toContain(
    "ao worker: agent commands can read the worker's credential and other tasks' checkouts: bubblewrap cannot run here (bwrap: No permissions to create new namespace)",
  );
  expect(proc.output).toContain("ao worker: --require-confine: an agent would run outside bubblewrap here, so this worker takes no tasks");
  expect(proc.output).not.toContain("connected as");
  // Its task stays queued.
  const t = await createTaskApi(s, p, { title: "waits" });
  expect((await s.api("GET", `/orgs/${p.orgId}/tasks/${t.id}`, { token: p.token })).body.status).toBe("queued");
});
