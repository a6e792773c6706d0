// Codex tasks end to end: a real server, a real `ao worker --agent codex` running the real `codex`
// CLI (node_modules/.bin) against the Responses API stand-in, and a person answering through
// the API. The stand-in holds the model's next answer where a test must look at the checkout
// before the attempt ends (a completed attempt removes it).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, newOrg, type Session } from "../helpers/identity";
import { codexHome, startOpenAIStandIn, type OpenAIStandIn } from "../helpers/openai-standin";
import { addRepositoryRow, createTaskApi, orgWithProject, until } from "../workers/helpers";
import { credentialPath } from "../../src/worker/credential";
import { alive, bareFrom, gitRepo, preparedWorker, startWorker, type WorkerProcess } from "../e2e/worker-helpers";
import { processState } from "../helpers/processes";
import { NESTING_REFUSED, oneLevelBwrap, testWithBwrap } from "../helpers/bubblewrap";

/** The Codex binary the npm package's `codex` script starts (Linux x64, as here and in CI). */
const CODEX_NATIVE = join(import.meta.dir, "..", "..", "node_modules", "@openai", "codex-linux-x64", "vendor", "x86_64-unknown-linux-musl", "bin", "codex");

let s: TestServer;
let tmp: string;
let owner: Session;
let standIn: OpenAIStandIn;
let worker: WorkerProcess;
let dataDir: string;
let bare: string;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-codex-worker-"));
  s = await startTestServer({ workerTimeouts: { offerMs: 2000, offlineMs: 3000, heartbeatMs: 300 } });
  owner = await createAdmin(s);
  standIn = startOpenAIStandIn();
  bare = bareFrom(gitRepo(join(tmp, "src"), { "README.md": "# demo\n", "sum.js": "export const sum = (a, b) => a - b;\n" }), join(tmp, "demo.git"));
  dataDir = join(tmp, "worker");
  await preparedWorker(s, owner.orgId, dataDir);
  const { env } = codexHome(join(tmp, "codex-home"), standIn);
  const bin = join(import.meta.dir, "..", "..", "node_modules", ".bin");
  worker = startWorker(s, dataDir, ["--agent", "codex"], { ...env, PATH: `${bin}:${process.env.PATH}` });
  await worker.waitFor(/connected as/, 30_000);
});

afterAll(async () => {
  await worker?.stop();
  await standIn?.stop();
  await s?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

type Project = Awaited<ReturnType<typeof orgWithProject>>;

async function project(policy: Record<string, unknown> = {}, session = owner): Promise<Project> {
  const p = await orgWithProject(s, session, policy);
  await addRepositoryRow(s, p.orgId, p.projectId, bare);
  return p;
}

const task = async (p: Project, id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}`, { token: p.token })).body;
const events = async (p: Project, id: string) => (await s.api("GET", `/orgs/${p.orgId}/tasks/${id}/events?limit=200`, { token: p.token })).body.items as any[];
const action = (p: Project, id: string, body: Record<string, unknown>) => s.api("POST", `/orgs/${p.orgId}/tasks/${id}/actions`, { token: p.token, body });
const waitStatus = (p: Project, id: string, status: string, ms = 30_000) =>
  until(
    async () => {
      const t = await task(p, id);
      return t.status === status && t;
    },
    ms,
    50,
  );
const workdir = (taskId: string) => join(dataDir, "runs", `${taskId}-a1`, "work");
/** A gate the stand-in holds a response on. */
function gate() {
  let open!: () => void;
  const held = new Promise<void>((r) => (open = r));
  return { held, open };
}

test("approve: the task waits in needs_approval with Codex's command; approving runs it in the checkout and the same turn finishes", async () => {
  const p = await project();
  const g = gate();
  const before = standIn.requests.length;
  standIn.push({ items: [{ message: "I'll add the file." }, { exec: "touch approved.txt", justification: "Create approved.txt at the root?" }] }, { items: [{ message: "approved.txt is there." }], hold: g.held });
  const t = await createTaskApi(s, p, { title: "Add approved.txt", prompt: "Create approved.txt" });
  const waiting = await waitStatus(p, t.id, "needs_approval");
  expect(waiting.needs).toEqual({ kind: "approval", message: "Codex asks to run: touch approved.txt\nCodex's reason: Create approved.txt at the root?" });
  expect(existsSync(join(workdir(t.id), "approved.txt"))).toBe(false);
  expect((await action(p, t.id, { action: "approve" })).status).toBe(200);
  // The command ran and its result went back to the model: the file is in the checkout.
  await standIn.waitForRequest(before + 2);
  expect(existsSync(join(workdir(t.id), "approved.txt"))).toBe(true);
  g.open();
  expect(await waitStatus(p, t.id, "completed")).toMatchObject({ summary: "approved.txt is there.", attempt: 1 });
  const ev = await events(p, t.id);
  expect(ev.filter((e) => e.type === "decision").map((e) => [e.data.decision, e.data.by])).toEqual([
    ["ask", "built-in rules"],
    ["allow", "person"],
  ]);
  expect(ev.find((e) => e.type === "tool" && e.data.status === "completed")?.data).toMatchObject({ name: "shell", input: { command: "touch approved.txt" }, exitCode: 0 });
  expect(ev.filter((e) => e.type === "message").map((e) => e.data.text)).toContain("approved.txt is there.");
});

test("deny with a reason: the command does not run, Codex gets the reason and the task goes on to completion", async () => {
  const p = await project();
  const g = gate();
  const before = standIn.requests.length;
  standIn.push({ items: [{ exec: "touch denied.txt" }] }, { items: [{ message: "OK, no denied.txt." }], hold: g.held });
  const t = await createTaskApi(s, p, { title: "Add denied.txt", prompt: "Create denied.txt" });
  await waitStatus(p, t.id, "needs_approval");
  expect((await action(p, t.id, { action: "deny", reason: "we do not want that file" })).status).toBe(200);
  const next = await standIn.waitForRequest(before + 2);
  expect(standIn.userTexts(next).at(-1)).toBe("The person reviewing this task denied it: we do not want that file");
  expect(JSON.stringify(next.body.input)).toContain("rejected by user");
  expect(existsSync(join(workdir(t.id), "denied.txt"))).toBe(false);
  g.open();
  expect(await waitStatus(p, t.id, "completed")).toMatchObject({ summary: "OK, no denied.txt." });
  const ev = await events(p, t.id);
  expect(ev.find((e) => e.type === "decision" && e.data.by === "person")?.data).toMatchObject({ decision: "deny", reason: "we do not want that file" });
  expect(ev.find((e) => e.type === "tool" && e.data.status === "declined")).toBeDefined();
});

test("apply_patch under a policy that asks for edits: approve applies the patch; the edit is on the timeline with its diff", async () => {
  const p = await project({ agent: { ask: ["edit"] } });
  const g = gate();
  const before = standIn.requests.length;
  standIn.push(
    { items: [{ patch: "*** Begin Patch\n*** Update File: sum.js\n@@\n-export const sum = (a, b) => a - b;\n+export const sum = (a, b) => a + b;\n*** End Patch\n" }] },
    { items: [{ message: "Fixed sum()." }], hold: g.held },
  );
  const t = await createTaskApi(s, p, { title: "Fix sum", prompt: "sum() subtracts" });
  const waiting = await waitStatus(p, t.id, "needs_approval");
  expect(waiting.needs.message).toBe("Codex asks to edit sum.js (update)");
  expect((await action(p, t.id, { action: "approve" })).status).toBe(200);
  await standIn.waitForRequest(before + 2);
  expect(readFileSync(join(workdir(t.id), "sum.js"), "utf8")).toBe("export const sum = (a, b) => a + b;\n");
  g.open();
  await waitStatus(p, t.id, "completed");
  const edit = (await events(p, t.id)).find((e) => e.type === "edit")!.data;
  expect(edit.files).toEqual([{ path: "sum.js", kind: "update" }]);
  expect(edit.diff).toContain("+export const sum = (a, b) => a + b;");
});

test("the project policy allows a command: it runs without asking anyone, and the decision names the rule", async () => {
  const p = await project({ agent: { allow: ["shell:touch *"] } });
  const g = gate();
  const before = standIn.requests.length;
  standIn.push({ items: [{ exec: "touch allowed.txt" }] }, { items: [{ message: "Done." }], hold: g.held });
  const t = await createTaskApi(s, p, { title: "Allowed", prompt: "Create allowed.txt" });
  await standIn.waitForRequest(before + 2);
  expect(existsSync(join(workdir(t.id), "allowed.txt"))).toBe(true);
  g.open();
  await waitStatus(p, t.id, "completed");
  const ev = await events(p, t.id);
  expect(ev.filter((e) => e.type === "decision").map((e) => e.data)).toEqual([
    { tool: "exec_command", kind: "shell", subject: "touch allowed.txt", decision: "allow", by: "policy", rule: "shell:touch *" },
  ]);
  expect(ev.some((e) => e.type === "status" && e.data?.to === "needs_approval")).toBe(false);
});

/** Another task's checkout in a worker's runs, as a running attempt of it has one; the file's path. */
function otherCheckout(workerDataDir: string): string {
  const file = join(workerDataDir, "runs", "tsk_other-a1", "work", "code.txt");
  mkdirSync(join(file, ".."), { recursive: true });
  writeFileSync(file, "another task's code\n");
  return file;
}

/** A task whose one command tries the credential and another task's checkout; what it found, read before the attempt ends. */
async function tryTheDataDir(workerDataDir: string, session = owner) {
  const p = await project({ agent: { allow: ["shell"] } }, session);
  const g = gate();
  const before = standIn.requests.length;
  const credential = credentialPath(workerDataDir);
  expect(readFileSync(credential, "utf8")).toContain("aow_");
  const other = otherCheckout(workerDataDir);
  const exec = `cat ${credential} > leaked.txt; ls ${join(workerDataDir, "runs")} > runs.txt; cat ${other} > other.txt; echo ran > ran.txt`;
  standIn.push({ items: [{ exec }] }, { items: [{ message: "Done." }], hold: g.held });
  const t = await createTaskApi(s, p, { title: "Read the credential", prompt: "Copy the worker's credential and another task's code" });
  await standIn.waitForRequest(before + 2);
  const found = (name: string) => readFileSync(join(workerDataDir, "runs", `${t.id}-a1`, "work", name), "utf8");
  const seen = { ran: found("ran.txt"), leaked: found("leaked.txt"), runs: found("runs.txt").split("\n").filter(Boolean), other: found("other.txt"), id: t.id };
  g.open();
  await waitStatus(p, t.id, "completed");
  return seen;
}

test("a command cannot read the worker's credential, though it runs as the worker's user", async () => {
  const seen = await tryTheDataDir(dataDir);
  expect(seen.ran).toBe("ran\n");
  expect(seen.leaked).not.toContain("aow_");
});

testWithBwrap("Codex runs in the worker's bubblewrap, its sandbox inside: a command sees of the worker's runs its own attempt's directory alone", async () => {
  expect(worker.output).toContain("ao worker: agent commands run in bubblewrap, without the worker's credential or other tasks' checkouts");
  const seen = await tryTheDataDir(dataDir);
  expect(seen.ran).toBe("ran\n");
  expect(seen.runs).toEqual([`${seen.id}-a1`]);
  expect(seen.other).toBe("");
});

testWithBwrap("where a bubblewrap cannot run inside the worker's, Codex runs outside it and the worker says so: its sandbox still denies the credential", async () => {
  // A bwrap first on the worker's PATH that runs the real one, but refuses to run inside itself
  // (as a machine that allows one level of user namespaces would). Codex's own sandbox uses /usr/bin/bwrap.
  const bin = dirname(oneLevelBwrap(join(tmp, "one-level-bwrap", "bwrap")));
  // In an org of its own, so that it alone takes the task.
  const otherOrg = await newOrg(s);
  const otherDataDir = join(tmp, "worker-one-level");
  await preparedWorker(s, otherOrg.orgId, otherDataDir);
  const { env } = codexHome(join(tmp, "codex-home-one-level"), standIn);
  const nodeBin = join(import.meta.dir, "..", "..", "node_modules", ".bin");
  const second = startWorker(s, otherDataDir, ["--agent", "codex"], { ...env, PATH: `${bin}:${nodeBin}:${process.env.PATH}` });
  try {
    await second.waitFor(/connected as/, 30_000);
    expect(second.output).toContain("ao worker: agent commands run in bubblewrap, without the worker's credential or other tasks' checkouts");
    expect(second.output).toContain(
      `ao worker: codex runs outside bubblewrap, as its own sandbox cannot run inside it here (${NESTING_REFUSED}): its commands can read other tasks' checkouts`,
    );
    const seen = await tryTheDataDir(otherDataDir, otherOrg);
    expect(seen.ran).toBe("ran\n");
    expect(seen.leaked).not.toContain("aow_");
    expect(seen.runs).toContain("tsk_other-a1");
    expect(seen.other).toBe("another task's code\n");
  } finally {
    await second.stop();
  }
});

testWithBwrap("with the system's bubblewrap (Debian's, which Codex prefers to its own): the thread starts and the command runs confined", async () => {
  // Codex then starts its sandbox helper by name from a PATH without it: the adapter links it
  // beside the checkout (codex-helper.ts). Without the link no thread starts: "bwrap: execvp
  // codex-linux-sandbox: No such file or directory".
  const p = await project({ agent: { allow: ["shell"] } });
  const g = gate();
  const before = standIn.requests.length;
  const outside = join(tmp, "outside.txt");
  standIn.push({ items: [{ exec: `echo inside > inside.txt; echo x > ${outside}` }] }, { items: [{ message: "Done." }], hold: g.held });
  const t = await createTaskApi(s, p, { title: "Inside and out", prompt: "Write two files" });
  await standIn.waitForRequest(before + 2);
  expect(readFileSync(join(workdir(t.id), "inside.txt"), "utf8")).toBe("inside\n");
  expect(existsSync(outside)).toBe(false);
  expect(realpathSync(join(workdir(t.id), "..", "codex-helper", "codex-linux-sandbox"))).toBe(realpathSync(CODEX_NATIVE));
  g.open();
  await waitStatus(p, t.id, "completed");
});

test("the model API failing: the attempt fails with Codex's account of it, once, and a retry after the failure completes", async () => {
  const p = await project();
  standIn.push({ items: [], error: { status: 500, type: "server_error", code: null, message: "The server had an error while processing your request." } });
  const t = await createTaskApi(s, p, { title: "API error", prompt: "Improve sum.js" });
  await waitStatus(p, t.id, "failed");
  const ev = await events(p, t.id);
  // One reason, Codex's, then the status: no "exited with code 1" from an app-server that never exited.
  expect(ev.filter((e) => e.type === "error")).toHaveLength(1);
  expect(ev.at(-2)).toMatchObject({ type: "error" });
  expect(ev.at(-1)).toMatchObject({ type: "status", data: { from: "running", to: "failed" } });
  expect(ev.map((e) => e.seq)).toEqual(ev.map((_, i) => i + 1));

  standIn.push({ items: [{ message: "Recovered." }] });
  expect((await action(p, t.id, { action: "retry" })).status).toBe(200);
  expect(await waitStatus(p, t.id, "completed")).toMatchObject({ attempt: 2, summary: "Recovered." });
});

test("input on a running task is a follow-up Codex reads in the same turn", async () => {
  const p = await project();
  const g = gate();
  const before = standIn.requests.length;
  standIn.push({ items: [{ message: "Reading the code." }], hold: g.held }, { items: [{ message: "Done, and I added tests as asked." }] });
  const t = await createTaskApi(s, p, { title: "Follow-up", prompt: "Improve sum.js" });
  await standIn.waitForRequest(before + 1);
  await waitStatus(p, t.id, "running");
  expect((await action(p, t.id, { action: "input", input: "Please add tests too." })).status).toBe(200);
  await Bun.sleep(500); // the control message reaches the worker, which steers the turn
  g.open();
  const next = await standIn.waitForRequest(before + 2);
  expect(standIn.userTexts(next)).toContain("Please add tests too.");
  expect(next.headers["session-id"]).toBe(standIn.requests[before].headers["session-id"]);
  expect(await waitStatus(p, t.id, "completed")).toMatchObject({ summary: "Done, and I added tests as asked." });
});

test("pause and resume stop and continue the real codex process group; cancel ends it", async () => {
  const p = await project();
  const g = gate();
  const before = standIn.requests.length;
  standIn.push({ items: [{ message: "Thinking hard." }], hold: g.held });
  const t = await createTaskApi(s, p, { title: "Long", prompt: "Think" });
  await standIn.waitForRequest(before + 1);
  const pid = JSON.parse(readFileSync(join(dataDir, "runs", `${t.id}-a1`, "agent.pid"), "utf8")).pid as number;
  expect(alive(pid)).toBe(true);
  expect((await action(p, t.id, { action: "pause" })).status).toBe(200);
  await until(() => processState(pid) === "T", 5000, 20);
  expect((await action(p, t.id, { action: "resume" })).status).toBe(200);
  await until(() => processState(pid) !== "T", 5000, 20);
  expect((await action(p, t.id, { action: "cancel", reason: "enough" })).status).toBe(200);
  await until(() => !alive(pid), 5000, 20);
  expect((await task(p, t.id)).status).toBe("cancelled");
  g.open();
});

test("a plan task: Codex's question waits in needs_input, the person's input answers it, and the plan it writes is applied", async () => {
  const p = await project({ agent: { allow: ["shell:echo *"] } });
  standIn.push(
    { items: [{ ask: [{ id: "scope", header: "Scope", question: "Split by file or by feature?", options: [{ label: "file", description: "one task a file" }, { label: "feature", description: "one task a feature" }] }] }] },
    { items: [{ exec: `echo '{"tasks":[{"title":"Fix sum.js","prompt":"a + b"},{"title":"Test sum.js","prompt":"add tests"}]}' > "$AO_ARTIFACTS_DIR/plan.json"` }] },
    { items: [{ message: "Two tasks, one a file." }] },
  );
  const t = await createTaskApi(s, p, { title: "Plan the fix", prompt: "Plan it", kind: "plan" });
  const waiting = await waitStatus(p, t.id, "needs_input");
  expect(waiting.needs).toEqual({ kind: "input", message: "Scope: Split by file or by feature? [file | feature]" });
  expect((await action(p, t.id, { action: "input", input: "by file" })).status).toBe(200);
  const done = await waitStatus(p, t.id, "completed");
  expect(done.plan.tasks.map((x: any) => x.title)).toEqual(["Fix sum.js", "Test sum.js"]);
  // The answer went back as the output of Codex's own request_user_input call.
  const asked = standIn.requests.flatMap((r) => r.body.input as any[]).find((i) => i.type === "function_call" && i.name === "request_user_input");
  expect(JSON.parse(standIn.toolOutput(asked.call_id)!)).toEqual({ answers: { scope: { answers: ["by file"] } } });
});
