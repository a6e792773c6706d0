// End to end, the ways an attempt ends with a tool call running and no person stopping it: the
// agent dies, its worker is lost, its worker is revoked. A real server, real `ao worker --agent
// claude` processes running the real `claude` CLI against the Messages API stand-in; the call is a
// shell command that waits a minute. Each way closes the call on the timeline, once, as a cancel
// does (claude-e2e.test.ts), and the timeline stays gap-free.
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { until } from "../workers/helpers";
import { alive } from "../e2e/worker-helpers";
import { statFields } from "../../src/worker/orphans";
import type { ScriptTurn } from "../helpers/anthropic-standin";
import { claudeRun } from "./claude-run";

setDefaultTimeout(120_000);

/** Every scenario starts a shell call that waits (its pid in marks/<scenario>.pid), then finishes. */
function script(body: any): ScriptTurn {
  const scenario = /SCENARIO:([a-z-]+)/.exec(JSON.stringify(body.messages))?.[1] ?? "none";
  const turn = body.messages.filter((m: any) => m.role === "assistant").length;
  if (turn > 0) return { content: [{ type: "text", text: `${scenario}: finished` }] };
  return { content: [{ type: "tool_use", name: "Bash", input: { command: `sleep 60 & echo $! > ${run.marker(`${scenario}.pid`)}; wait`, description: "Wait a while" } }] };
}

const run = claudeRun("ao-claude-interrupted-", script);
const POLICY = { agent: { allow: ["shell:sleep*"] } };
type Api = Pick<typeof run, "newTask" | "events" | "action" | "waitStatus">;

/** What a scenario left running (pids, process groups as -pid): ended after it, passed or not. */
const leftovers: number[] = [];
afterEach(() => {
  for (const target of leftovers.splice(0)) {
    try {
      process.kill(target, "SIGKILL");
    } catch {
      // Gone already.
    }
  }
});

/** A task of `scenario` whose shell call runs: the sleeper's pid, and the call as the timeline has it. */
async function running(api: Api, scenario: string) {
  const t = await api.newTask(scenario, POLICY);
  const pidFile = run.marker(`${scenario}.pid`);
  await until(() => existsSync(pidFile) && readFileSync(pidFile, "utf8").trim() !== "", 60_000, 100);
  const sleeper = Number(readFileSync(pidFile, "utf8").trim());
  // The shell command's process group (Claude Code starts each in one of its own).
  leftovers.push(-Number(statFields(sleeper)[2]));
  const call = await until(async () => (await api.events(t.id)).find((e) => e.type === "tool" && e.data.name === "Bash" && e.data.status === "started"), 15_000, 100);
  return { t, sleeper, call };
}

/** The events that close `call` (checked to be one, before the status event `to`), the timeline checked gap-free. */
async function closedOnce(api: Api, taskId: string, call: any, to: string) {
  const ev = await api.events(taskId);
  expect(ev.map((e) => e.seq)).toEqual(ev.map((_, i) => i + 1));
  const closing = ev.filter((e) => e.type === "tool" && e.data.id === call.data.id && e.seq > call.seq);
  expect(closing).toHaveLength(1);
  const status = ev.find((e) => e.type === "status" && e.data.to === to && e.seq > call.seq)!;
  expect(closing[0].seq).toBeLessThan(status.seq);
  return closing[0].data;
}

describe("a running tool call whose attempt ends without a person", () => {
  test("the agent dies mid-call: the attempt fails and the call is closed before the failure", async () => {
    const { t, call } = await running(run, "dies");
    // The agent's process group (the CLI, in its bubblewrap where the worker has one): not the
    // shell command, which Claude Code starts in a group of its own.
    process.kill(-run.findAgentPid(t.id), "SIGKILL");
    await run.waitStatus(t.id, "failed");
    expect(await closedOnce(run, t.id, call, "failed")).toEqual({ id: call.data.id, name: "Bash", input: call.data.input, output: "stopped: the attempt failed", status: "interrupted" });
    const ev = await run.events(t.id);
    // The SDK says how the CLI ended: the attempt's one error.
    expect(ev.filter((e) => e.type === "error").map((e) => e.data.message)).toEqual(["claude: Claude Code process terminated by signal SIGKILL"]);
  });

  test("the worker is lost mid-call (kill -9): the server gives the attempt up and closes the call with the loss", async () => {
    const own = await run.ownWorker("lost-worker");
    const { t, call } = await running(own, "lost");
    // The agent outlives its worker: it goes with the test.
    leftovers.push(-run.findAgentPid(t.id, own.dataDir));
    own.worker.proc.kill("SIGKILL");
    await own.worker.exited;
    // The offline timeout (5 s) after the socket closed, then the monitor's next tick.
    await own.waitStatus(t.id, "queued", 30_000);
    const lost = "attempt 1 was lost: the worker was offline for more than 5 s";
    expect(await closedOnce(own, t.id, call, "queued")).toEqual({ id: call.data.id, name: "Bash", input: call.data.input, output: `stopped: ${lost}`, status: "interrupted" });
    // A cancel now (the attempt has no lease) closes nothing again.
    expect((await own.action(t.id, { action: "cancel" })).status).toBe(200);
    await own.waitStatus(t.id, "cancelled");
    await closedOnce(own, t.id, call, "cancelled");
  });

  test("the worker is revoked mid-call: the call is closed with the revocation; what the stopping worker sends after is refused", async () => {
    const own = await run.ownWorker("revoked-worker");
    const { t, sleeper, call } = await running(own, "revoked");
    expect((await run.s.api("DELETE", `/orgs/${own.orgId}/workers/${own.workerId}`, { token: own.token })).status).toBe(200);
    expect(await own.worker.exited).toBe(3);
    await until(() => !alive(sleeper), 15_000, 100);
    expect((await own.task(t.id)).status).toBe("queued");
    expect(await closedOnce(own, t.id, call, "queued")).toEqual({
      id: call.data.id,
      name: "Bash",
      input: call.data.input,
      output: "stopped: attempt 1 was lost: the worker was revoked",
      status: "interrupted",
    });
    const ev = await own.events(t.id);
    expect(ev.at(-1)).toMatchObject({ type: "status", data: { from: "running", to: "queued" } });
  });
});
