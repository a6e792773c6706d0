// End to end: a CI pipeline's signed delivery makes a task, a real `ao worker --exec` (paired
// through the device-code flow) runs it, and the signed callback reports its completion, with
// the summary the command printed, to a receiver on loopback.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { startTestServer, type TestServer } from "../helpers/server";
import { deliver, eventually, makeIntegration, makeWorld, Receiver, svcSignature, type World } from "./fixtures";

const ROOT = join(import.meta.dir, "..", "..");
let s: TestServer;
let w: World;
let rx: Receiver;
let worker: Subprocess<"ignore", "pipe", "pipe"> | null = null;
const dir = mkdtempSync(join(tmpdir(), "ao-int-worker-"));

beforeAll(async () => {
  s = await startTestServer({ allowPrivateCallbacks: true });
  w = await makeWorld(s);
  rx = new Receiver();
});
afterAll(async () => {
  if (worker) {
    worker.kill("SIGTERM");
    await Promise.race([worker.exited, new Promise((r) => setTimeout(r, 3000))]);
    worker.kill("SIGKILL");
  }
  await rx.stop();
  await s.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("signed delivery -> task -> ao worker --exec completes it -> signed callback with the summary", async () => {
  const ci = await makeIntegration(s, w.owner, { kind: "signed_json", name: "CI", projectId: w.projectId, callbackUrl: rx.url() });
  const body = JSON.stringify({ title: "Say hello", prompt: "Print a greeting", ref: "pipeline-99" });
  const created = await deliver(s, ci.id, body, { "x-svc-signature": svcSignature(ci.secret, body), "x-svc-delivery": "pipeline-99" });
  expect(created.status).toBe(201);
  const taskId = created.body.taskId as string;

  worker = Bun.spawn(
    [
      process.execPath,
      join(ROOT, "src/main.ts"),
      "worker",
      "--server",
      s.url,
      "--name",
      "e2e",
      "--data-dir",
      join(dir, "worker"),
      "--workspace",
      join(dir, "workspace"),
      "--exec",
      `echo "working on $AO_TASK_TITLE"; echo "::ao::summary Greeted for $AO_TASK_ID"`,
    ],
    { cwd: dir, env: { PATH: process.env.PATH!, HOME: dir }, stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );

  // Pair it the way a person does: read the user code it prints, approve it in our org.
  let output = "";
  const reader = worker.stdout.getReader();
  const userCode = await eventually(async () => {
    const { value, done } = await reader.read();
    if (value) output += new TextDecoder().decode(value);
    if (done) throw new Error(`the worker exited: ${output}`);
    return /\b([BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4})\b/.exec(output)?.[1];
  }, 15_000);
  const approved = await s.api("POST", "/pairing/approve", { token: w.owner.accessToken, body: { userCode, orgId: w.owner.orgId } });
  expect(approved.status).toBeLessThan(300);
  void (async () => {
    for (;;) if ((await reader.read()).done) break;
  })();

  await rx.waitFor(1, 30_000);
  const req = rx.requests[0];
  const payload = JSON.parse(req.body);
  expect(payload).toEqual({
    taskId,
    status: "completed",
    title: "Say hello",
    summary: `Greeted for ${taskId}`,
    url: `${s.core.config.publicUrl}/tasks/${taskId}`,
    ref: "pipeline-99",
    event: "completed",
  });
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(req.headers["x-svc-signature"])!;
  expect(createHmac("sha256", ci.secret).update(`${m[1]}.${req.body}`).digest("hex")).toBe(m[2]);

  const task = await s.api("GET", `/orgs/${w.owner.orgId}/tasks/${taskId}`, { token: w.owner.accessToken });
  expect(task.body.status).toBe("completed");
  // The callback left right after the task finished.
  expect(req.at - Date.parse(task.body.finishedAt)).toBeLessThan(1000);
}, 60_000);
