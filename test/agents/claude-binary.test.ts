// The Agent SDK inside the compiled executable: `ao worker --agent claude` built by scripts/build.ts
// runs the real CLI, asks for approval and goes on after the answer, as the source does.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { newOrg } from "../helpers/identity";
import { createTaskApi, until } from "../workers/helpers";
import { preparedWorker } from "../e2e/worker-helpers";
import { claudeEnv, startAnthropicStandin, type AnthropicStandin } from "../helpers/anthropic-standin";
import { inheritedEnv } from "../helpers/processes";

setDefaultTimeout(180_000);

const root = join(import.meta.dir, "..", "..");
let tmp: string;
let ao: string;
let s: TestServer;
let standin: AnthropicStandin;
let worker: Bun.Subprocess | null = null;
let output = "";

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-claude-bin-"));
  ao = join(tmp, "bin", "ao");
  const build = Bun.spawn([process.execPath, join(root, "scripts", "build.ts"), ao], { cwd: root, stdout: "pipe", stderr: "pipe" });
  const [code, err] = await Promise.all([build.exited, new Response(build.stderr).text()]);
  if (code !== 0) throw new Error(`scripts/build.ts failed (exit ${code}):\n${err}`);
}, 300_000);

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    worker.kill("SIGTERM");
    await Promise.race([worker.exited, Bun.sleep(5000)]);
    if (worker.exitCode === null) worker.kill("SIGKILL");
  }
  await s?.stop();
  await standin?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

test("the compiled ao worker runs Claude Code through the SDK: approval asked, approved, run completed", async () => {
  const mark = join(tmp, "made-by-claude.txt");
  standin = startAnthropicStandin([{ content: [{ type: "tool_use", name: "Bash", input: { command: `touch ${mark}`, description: "Leave a mark" } }] }, { content: [{ type: "text", text: "marked" }] }]);
  s = await startTestServer({ workerTimeouts: { offerMs: 2000, offlineMs: 5000, heartbeatMs: 300 } });
  const org = await newOrg(s);
  const dataDir = join(tmp, "worker");
  await preparedWorker(s, org.orgId, dataDir);
  mkdirSync(join(tmp, "home"));
  const env = inheritedEnv();
  worker = Bun.spawn([ao, "worker", "--server", s.url, "--data-dir", dataDir, "--agent", "claude", "--kill-grace-ms", "500"], {
    env: { ...env, PATH: `${join(root, "node_modules", ".bin")}:${process.env.PATH}`, ...claudeEnv(standin, join(tmp, "home")) },
    stdout: "pipe",
    stderr: "pipe",
  });
  for (const stream of [worker.stdout, worker.stderr] as ReadableStream<Uint8Array>[]) void (async () => { for await (const c of stream) output += new TextDecoder().decode(c); })();
  const r = await s.api("POST", `/orgs/${org.orgId}/projects`, { token: org.accessToken, body: { name: "bin" } });
  const p = { orgId: org.orgId, projectId: r.body.id as string, token: org.accessToken };
  const t = await createTaskApi(s, p, { title: "Mark", prompt: "Leave a mark" });
  const get = async () => (await s.api("GET", `/orgs/${p.orgId}/tasks/${t.id}`, { token: p.token })).body;
  const asking = await until(async () => {
    const x = await get();
    if (["failed", "completed"].includes(x.status)) throw new Error(`ended early: ${JSON.stringify(x)}\n${output}`);
    return x.status === "needs_approval" && x;
  }, 90_000, 100);
  expect(asking.needs.message).toContain(`touch ${mark}`);
  expect((await s.api("POST", `/orgs/${p.orgId}/tasks/${t.id}/actions`, { token: p.token, body: { action: "approve" } })).status).toBe(200);
  const done = await until(async () => {
    const x = await get();
    return ["failed", "completed"].includes(x.status) && x;
  }, 60_000, 100);
  expect(done).toMatchObject({ status: "completed", summary: "marked" });
  expect(existsSync(mark)).toBe(true);
});
