// The Claude Code adapter inside a real `ao worker`: stand-in `claude` and `codex` executables on
// PATH check the command line they are given and replay recorded output. (Codex, driven through
// its app-server, is tested with the real CLI in test/agents/codex-*.test.ts.)
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { newOrg } from "../helpers/identity";
import { createTaskApi, orgWithProject, until } from "../workers/helpers";
import { preparedWorker, startWorker, type WorkerProcess } from "./worker-helpers";

let s: TestServer;
let tmp: string;
let bin: string;
const workers: WorkerProcess[] = [];
const fixtures = join(import.meta.dir, "..", "workers", "fixtures");

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-worker-agents-"));
  bin = join(tmp, "bin");
  mkdirSync(bin);
  // Each stand-in records its arguments (one per line) and prints the recording.
  for (const [name, fixture] of [["claude", "claude-stream.jsonl"], ["codex", "codex-exec.jsonl"]]) {
    const path = join(bin, name);
    writeFileSync(path, `#!/bin/sh\nif [ "$1" = "--version" ]; then echo "9.9.9 (stand-in)"; exit 0; fi\nprintf '%s\\n' "$@" > "${tmp}/${name}.args"\npwd > "${tmp}/${name}.cwd"\ncat "${join(fixtures, fixture)}"\n`);
    chmodSync(path, 0o755);
  }
  s = await startTestServer({ workerTimeouts: { offerMs: 2000, offlineMs: 3000, heartbeatMs: 300 } });
});

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop()));
  await s.stop();
  rmSync(tmp, { recursive: true, force: true });
});

async function runWith(agent: string) {
  const org = await newOrg(s);
  const p = await orgWithProject(s, org);
  const dataDir = join(tmp, agent);
  const w = await preparedWorker(s, p.orgId, dataDir);
  const proc = startWorker(s, dataDir, ["--agent", agent], { PATH: `${bin}:${process.env.PATH}` });
  workers.push(proc);
  await proc.waitFor(new RegExp(`agent ${agent}`));
  await proc.waitFor(/connected as/);
  const rec = (await s.api("GET", `/orgs/${p.orgId}/workers/${w.workerId}`, { token: p.token })).body;
  expect(rec.agents).toContainEqual({ name: agent, version: "9.9.9" });
  const t = await createTaskApi(s, p, { title: "Fix sum", prompt: "sum() is wrong" });
  const done = await until(async () => {
    const r = (await s.api("GET", `/orgs/${p.orgId}/tasks/${t.id}`, { token: p.token })).body;
    return ["completed", "failed"].includes(r.status) && r;
  }, 15_000);
  const events = (await s.api("GET", `/orgs/${p.orgId}/tasks/${t.id}/events?limit=200`, { token: p.token })).body.items;
  const args = readFileSync(join(tmp, `${agent}.args`), "utf8").trimEnd().split("\n");
  await proc.stop();
  return { done, events, args };
}

test("claude: the CLI driven through the Agent SDK's stream-json control protocol, its recorded output mapped to message, tool and log events", async () => {
  const { done, events, args } = await runWith("claude");
  // The prompt goes on stdin as a stream-json user message; permissions come back over stdio.
  expect(args.slice(0, 5)).toEqual(["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"]);
  expect(args).toContain("--permission-prompt-tool=stdio");
  expect(args).toContain("--permission-mode=default");
  expect(args).toContain("--replay-user-messages");
  expect(args).not.toContain("sum() is wrong");
  expect(done).toMatchObject({ status: "completed", summary: "Fixed: sum() subtracted instead of adding. The test suite passes now." });
  const types = events.map((e: any) => e.type);
  expect(types.filter((t: string) => t === "tool")).toHaveLength(4);
  expect(types.filter((t: string) => t === "edit")).toHaveLength(1);
  expect(events.filter((e: any) => e.type === "message").map((e: any) => e.data.text)).toEqual([
    "I'll run the tests first.",
    "Fixed: sum() subtracted instead of adding. The test suite passes now.",
  ]);
});

test("a worker lists the agents it runs: exec (its program's name, not its arguments), and with --agent auto the coding agents on its PATH", async () => {
  const org = await newOrg(s);
  // Only exec: claude and codex on PATH are not advertised (a task naming them must not be offered to it).
  const onlyDir = join(tmp, "exec-only");
  const only = await preparedWorker(s, org.orgId, onlyDir);
  const first = startWorker(s, onlyDir, ["--agent", "exec", "--exec", "./agent.sh"], { PATH: `${bin}:${process.env.PATH}` });
  workers.push(first);
  await first.waitFor(/connected as/);
  expect((await s.api("GET", `/orgs/${org.orgId}/workers/${only.workerId}`, { token: org.accessToken })).body.agents).toEqual([{ name: "exec", version: null, command: "agent.sh" }]);
  await first.stop();
  const dataDir = join(tmp, "exec-inventory");
  const w = await preparedWorker(s, org.orgId, dataDir);
  const proc = startWorker(s, dataDir, ["--agent", "auto", "--exec", "API_TOKEN=s3cr3t ./scripts/agent.sh --key s3cr3t"], { PATH: `${bin}:${process.env.PATH}` });
  workers.push(proc);
  await proc.waitFor(/connected as/);
  const rec = (await s.api("GET", `/orgs/${org.orgId}/workers/${w.workerId}`, { token: org.accessToken })).body;
  expect(rec.agents).toEqual([
    { name: "exec", version: null, command: "agent.sh" },
    { name: "claude", version: "9.9.9" },
    { name: "codex", version: "9.9.9" },
  ]);
  expect(JSON.stringify(rec)).not.toContain("s3cr3t");
  const listed = (await s.api("GET", `/orgs/${org.orgId}/workers`, { token: org.accessToken })).body.items[0];
  expect(listed.agents).toEqual(rec.agents);
  await proc.stop();
});
