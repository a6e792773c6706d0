// The setup of the end-to-end runs with the real Claude Code CLI: a real server, the Messages API
// stand-in answering as `script` says, and a real `ao worker --agent claude` running the real
// `claude` (node_modules/.bin on its PATH) in an organization of its own; and the API calls the
// tests make on that organization's tasks. Each task's prompt names its scenario (SCENARIO:name).
import { afterAll, beforeAll, expect } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { newOrg } from "../helpers/identity";
import { createTaskApi, until } from "../workers/helpers";
import { preparedWorker, startWorker, type WorkerProcess } from "../e2e/worker-helpers";
import { claudeEnv, startAnthropicStandin, type AnthropicStandin, type ScriptTurn } from "../helpers/anthropic-standin";

export const BIN = join(import.meta.dir, "..", "..", "node_modules", ".bin");

/** What the run started, filled in before the file's tests. */
export interface ClaudeRun {
  s: TestServer;
  /** The run's directory: marks/ for the scenarios' files, home/ for Claude's, worker/ for the worker's. */
  tmp: string;
  standin: AnthropicStandin;
  worker: WorkerProcess;
  dataDir: string;
  orgId: string;
  token: string;
}

/**
 * Starts the run before the file's tests (in a new directory named from `prefix`) and stops it
 * after them; `beforeStop` runs first then (to release a stand-in answer still held, say).
 */
export function claudeRun(prefix: string, script: (body: any) => ScriptTurn, options: { beforeStop?: () => void } = {}) {
  const run = {} as ClaudeRun;
  /** Workers started beside the run's own (stopped with it). */
  const others: WorkerProcess[] = [];
  /** `ao worker --agent claude` on `dataDir` (a prepared worker's), connected to the run's server and stand-in. */
  const startClaudeWorker = async (dataDir: string) => {
    // One retry of a failed model request, not ten with backoff: a scenario of API errors ends soon.
    const env = { PATH: `${BIN}:${process.env.PATH}`, ...claudeEnv(run.standin, join(run.tmp, "home")), CLAUDE_CODE_MAX_RETRIES: "1" };
    const worker = startWorker(run.s, dataDir, ["--agent", "claude", "--capacity", "4"], env);
    // Generous: the worker starts from source on a machine other tests load too.
    await worker.waitFor(/agent claude/, 60_000);
    await worker.waitFor(/connected as/, 60_000);
    return worker;
  };
  beforeAll(async () => {
    run.tmp = mkdtempSync(join(tmpdir(), prefix));
    mkdirSync(join(run.tmp, "marks"));
    mkdirSync(join(run.tmp, "home"));
    run.standin = startAnthropicStandin((body) => script(body));
    run.s = await startTestServer({ workerTimeouts: { offerMs: 2000, offlineMs: 5000, heartbeatMs: 300 } });
    const org = await newOrg(run.s);
    run.dataDir = join(run.tmp, "worker");
    await preparedWorker(run.s, org.orgId, run.dataDir);
    run.worker = await startClaudeWorker(run.dataDir);
    run.orgId = org.orgId;
    run.token = org.accessToken;
  }, 150_000);
  afterAll(async () => {
    options.beforeStop?.();
    await Promise.all([run.worker, ...others].map((w) => w?.stop()));
    await run.s?.stop();
    await run.standin?.stop();
    if (run.tmp) rmSync(run.tmp, { recursive: true, force: true });
  });

  return Object.assign(run, orgApi(run, run), {
    /** A file of the scenarios' marks/ directory. */
    marker: (name: string) => join(run.tmp, "marks", name),
    /** The agent's pid the worker (in `root`) recorded for the task's attempt (RUNS/<task>-a<N>/agent.pid). */
    findAgentPid: (taskId: string, root = run.dataDir) => findAgentPid(taskId, root),
    /**
     * A worker like the run's in an organization of its own, with that organization's API calls:
     * for a test that ends its worker. `start` starts it again on the same data directory.
     */
    async ownWorker(name: string) {
      const org = await newOrg(run.s);
      const dataDir = join(run.tmp, name);
      const made = await preparedWorker(run.s, org.orgId, dataDir);
      const start = async () => {
        const worker = await startClaudeWorker(dataDir);
        others.push(worker);
        return worker;
      };
      return { ...orgApi(run, { orgId: org.orgId, token: org.accessToken }), orgId: org.orgId, token: org.accessToken, workerId: made.workerId, dataDir, worker: await start(), start };
    },
  });
}

/** The API calls the tests make on an organization's tasks (`org` read at each call: the run's is filled in before the tests). */
function orgApi(run: ClaudeRun, org: { orgId: string; token: string }) {
  const task = async (id: string) => (await run.s.api("GET", `/orgs/${org.orgId}/tasks/${id}`, { token: org.token })).body;
  return {
    /** A task of a new project (with `policy`) whose prompt names `scenario`. */
    async newTask(scenario: string, policy: Record<string, unknown> = {}) {
      const r = await run.s.api("POST", `/orgs/${org.orgId}/projects`, { token: org.token, body: { name: `p-${scenario}`, policy } });
      expect(r.status).toBe(201);
      const p = { orgId: org.orgId, projectId: r.body.id as string, token: org.token };
      return { projectId: p.projectId, ...(await createTaskApi(run.s, p, { title: `Claude ${scenario}`, prompt: `SCENARIO:${scenario} please do the thing` })) };
    },
    task,
    events: async (id: string) => (await run.s.api("GET", `/orgs/${org.orgId}/tasks/${id}/events?limit=200`, { token: org.token })).body.items as any[],
    action: (id: string, body: Record<string, unknown>) => run.s.api("POST", `/orgs/${org.orgId}/tasks/${id}/actions`, { token: org.token, body }),
    waitStatus: (id: string, status: string, ms = 60_000) =>
      until(async () => {
        const t = await task(id);
        return t.status === status && t;
      }, ms, 100),
  };
}

function findAgentPid(taskId: string, root: string): number {
  const walk = (dir: string): string | null => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory() && e.name.startsWith(`${taskId}-a`) && existsSync(join(path, "agent.pid"))) return join(path, "agent.pid");
      if (e.isDirectory() && e.name !== "work") {
        const found = walk(path);
        if (found) return found;
      }
    }
    return null;
  };
  const file = walk(root);
  if (!file) throw new Error("no agent.pid recorded");
  return JSON.parse(readFileSync(file, "utf8")).pid;
}
