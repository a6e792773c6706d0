// `ao worker`: pairs on first start, then runs tasks until stopped (SIGINT/SIGTERM) or revoked.
import { HttpError, WorkerClient } from "./client";
import { loadCredential, pair, credentialPath } from "./credential";
import { parseWorkerOptions, UsageError, type WorkerOptions } from "./options";
import { WorkerRuntime } from "./runtime";
import { execAgent } from "./agents/exec";
import { claudeAgent, CLAUDE_DEFAULT_ARGS } from "./agents/claude";
import { codexAgent, CODEX_DEFAULT_ARGS } from "./agents/codex";
import type { Agent } from "./agents/types";

function makeAgent(name: string, options: WorkerOptions): Agent {
  if (name === "exec") return execAgent(options.exec!);
  if (name === "claude") return claudeAgent(Bun.which("claude") ?? "claude", options.agentArgs ?? CLAUDE_DEFAULT_ARGS);
  return codexAgent(Bun.which("codex") ?? "codex", options.agentArgs ?? CODEX_DEFAULT_ARGS);
}

/**
 * The agents to run, in order of preference: as named by --agent, every one found for auto, or
 * (none named) the first coding agent found on PATH.
 */
export function chooseAgents(options: WorkerOptions): Agent[] {
  const onPath = ["claude", "codex"].filter((n) => Bun.which(n));
  const names =
    options.agents?.[0] === "auto" ? [...(options.exec ? ["exec"] : []), ...onPath] : (options.agents ?? onPath.slice(0, 1));
  if (names.length === 0) throw new UsageError("no coding agent found on PATH (claude, codex): install one, or run a command with --exec 'COMMAND'");
  // Named but missing, it would be advertised and fail every task it took.
  const missing = names.find((n) => n !== "exec" && !onPath.includes(n));
  if (missing) throw new UsageError(`--agent ${missing}: no ${missing} on PATH (install it, or name the agents this machine has)`);
  return names.map((n) => makeAgent(n, options));
}

/** The first agent chooseAgents gives (kept for callers that run one). */
export function chooseAgent(options: WorkerOptions): Agent {
  return chooseAgents(options)[0];
}

export async function worker(args: string[]): Promise<number> {
  let options: WorkerOptions;
  let agents: Agent[];
  try {
    options = parseWorkerOptions(args);
    agents = chooseAgents(options);
  } catch (err) {
    if (err instanceof UsageError) {
      if (err.help) {
        console.log(err.message);
        return 0;
      }
      console.error(err.message);
      return 2;
    }
    throw err;
  }
  const say = (line: string) => console.log(line);
  const client = new WorkerClient(options.servers);
  client.onSwitch = (from, to) => say(`ao worker: moving from ${from} to ${to}`);
  let stored = loadCredential(options.dataDir, options.servers);
  if (!stored) {
    try {
      stored = await pair(client, options, say);
    } catch (err) {
      console.error(`ao worker: ${(err as Error).message}`);
      return 1;
    }
  }
  client.credential = stored.credential;
  try {
    await client.me();
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) {
      console.error(`ao worker: the server refused the credential in ${credentialPath(options.dataDir)} (${err.message}); delete it to pair again`);
      return 3;
    }
    // Unreachable server: the runtime keeps reconnecting.
  }
  const runtime = new WorkerRuntime(options, client, agents, say);
  const shutdown = (signal: string) => void runtime.stop(0, `ao worker: received ${signal}, stopping`);
  process.once("SIGINT", () => shutdown("SIGINT"));
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  return runtime.start();
}
