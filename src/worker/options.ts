// `ao worker` flags (SPEC §7). Each flag also has an environment variable for service managers.
import { parseArgs } from "node:util";
import { homedir, hostname } from "node:os";
import { join, resolve } from "node:path";
import { AGENT_NAMES } from "../protocol/requests";

export interface WorkerOptions {
  /** Servers of one ao service (one database), in order: the worker uses one and moves to the next when it stops answering. */
  servers: string[];
  name: string;
  labels: string[];
  dataDir: string;
  workspace: string;
  capacity: number;
  /** As given: exec, claude, codex, several of them (claude,codex) or auto; null: exec when --exec is given, else the first agent found on PATH. */
  agent: string | null;
  /** The agents named by --agent, in order; ["auto"] for every agent found; null when none was named. */
  agents: string[] | null;
  exec: string | null;
  /** Replaces the agent's default extra arguments (e.g. a permission mode). */
  agentArgs: string[] | null;
  /** How long a cancelled agent gets between SIGTERM and SIGKILL. */
  killGraceMs: number;
  /** Start agents inside bubblewrap, without the credential or other tasks' checkouts (confine.ts); false: --no-confine. */
  confine: boolean;
  /** --require-confine: exit (status 5) rather than run any agent outside that bubblewrap. */
  requireConfine: boolean;
}

export const USAGE = `usage: ao worker --server URL[,URL...] [--name N] [--labels a,b] [--data-dir D]
                 [--workspace DIR] [--capacity N] [--agent NAME[,NAME...]|auto] [--exec 'COMMAND']
                 [--agent-args 'ARGS'] [--kill-grace-ms MS] [--no-confine | --require-confine]

Pairs with the server on first start (prints a code to approve in the web app), then takes tasks.
Several servers of one ao service (one database): repeat --server or separate the URLs with
commas (AO_SERVER too); the worker uses the first that answers and moves on to the next when the
one it uses stops answering.
Agents: exec, claude, codex; several separated by commas, or auto for every one found (exec when
--exec is given, claude and codex when on PATH). Each task runs with the agent it names, else the
project's preferredAgent, else the first one listed. --agent-args goes with one coding agent.
Agents run inside bubblewrap, which keeps the worker's credential and other tasks' checkouts
from their commands, when it is installed; --no-confine runs them without it (their commands may
then use sudo, which bubblewrap's no-new-privileges rule stops, and may read those; Codex's own
sandbox still denies the credential). --require-confine exits with status 5 instead where an
agent would run without it.
Environment: AO_SERVER, AO_WORKER_NAME, AO_WORKER_LABELS, AO_WORKER_DATA_DIR, AO_WORKER_WORKSPACE,
AO_WORKER_CAPACITY, AO_WORKER_AGENT, AO_WORKER_EXEC, AO_WORKER_AGENT_ARGS, AO_WORKER_NO_CONFINE=1,
AO_WORKER_REQUIRE_CONFINE=1.`;

export class UsageError extends Error {
  constructor(
    message: string,
    /** Asked for with --help: printed to stdout, exit 0. */
    readonly help = false,
  ) {
    super(message);
  }
}

export function parseWorkerOptions(args: string[], env: Record<string, string | undefined> = process.env): WorkerOptions {
  const { values } = parseArgs({
    args,
    options: {
      server: { type: "string", multiple: true },
      name: { type: "string" },
      labels: { type: "string" },
      "data-dir": { type: "string" },
      workspace: { type: "string" },
      capacity: { type: "string" },
      agent: { type: "string" },
      exec: { type: "string" },
      "agent-args": { type: "string" },
      "kill-grace-ms": { type: "string" },
      "no-confine": { type: "boolean" },
      "require-confine": { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) throw new UsageError(USAGE, true);
  const servers = parseServers(values.server ?? (env.AO_SERVER ? [env.AO_SERVER] : []));
  const dataDir = resolve(values["data-dir"] ?? env.AO_WORKER_DATA_DIR ?? join(homedir(), ".local", "share", "ao-worker"));
  const capacity = Number(values.capacity ?? env.AO_WORKER_CAPACITY ?? "1");
  if (!Number.isInteger(capacity) || capacity < 1 || capacity > 64) throw new UsageError("--capacity must be an integer from 1 to 64");
  const labels = (values.labels ?? env.AO_WORKER_LABELS ?? "")
    .split(",")
    .map((l) => l.trim().toLowerCase())
    .filter(Boolean);
  for (const l of labels) if (!/^[a-z0-9][a-z0-9._:-]{0,49}$/.test(l)) throw new UsageError(`label '${l}' is not valid (a-z 0-9 . _ : -, up to 50)`);
  const exec = values.exec ?? env.AO_WORKER_EXEC ?? null;
  const agent = values.agent ?? env.AO_WORKER_AGENT ?? (exec ? "exec" : null);
  const agents = agent === null ? null : [...new Set(agent.split(",").map((a) => a.trim()).filter(Boolean))];
  if (agents) {
    if (agents.length === 0) throw new UsageError("--agent names no agent (exec, claude, codex or auto)");
    for (const a of agents) {
      if (a === "auto" && agents.length > 1) throw new UsageError("--agent auto stands alone (it means every agent found)");
      if (![...AGENT_NAMES, "auto"].includes(a as "auto")) throw new UsageError(`unknown agent '${a}' (exec, claude, codex, several separated by commas, or auto)`);
    }
    if (agents.includes("exec") && !exec) throw new UsageError("--agent exec needs --exec 'COMMAND'");
  }
  const rawArgs = values["agent-args"] ?? env.AO_WORKER_AGENT_ARGS;
  if (rawArgs !== undefined && agents && (agents[0] === "auto" || agents.filter((a) => a !== "exec").length > 1)) {
    throw new UsageError("--agent-args goes with one coding agent (its arguments would not suit another)");
  }
  // Both variables are checked even where a flag decides.
  const [noConfineEnv, requireConfineEnv] = [flagFromEnv(env, "AO_WORKER_NO_CONFINE"), flagFromEnv(env, "AO_WORKER_REQUIRE_CONFINE")];
  const confine = !(values["no-confine"] || noConfineEnv);
  const requireConfine = !!values["require-confine"] || requireConfineEnv;
  if (!confine && requireConfine) throw new UsageError("--no-confine and --require-confine contradict each other");
  const killGraceMs = Number(values["kill-grace-ms"] ?? "5000");
  if (!Number.isFinite(killGraceMs) || killGraceMs < 0) throw new UsageError("--kill-grace-ms must be a number of milliseconds");
  return {
    servers,
    name: (values.name ?? env.AO_WORKER_NAME ?? hostname()).slice(0, 100),
    labels,
    dataDir,
    workspace: resolve(values.workspace ?? env.AO_WORKER_WORKSPACE ?? join(dataDir, "workspace")),
    capacity,
    agent,
    agents,
    exec,
    agentArgs: rawArgs === undefined ? null : rawArgs.split(/\s+/).filter(Boolean),
    killGraceMs,
    confine,
    requireConfine,
  };
}

/** A yes/no environment variable: 1 is yes; 0 or empty, no; anything else a usage error. */
function flagFromEnv(env: Record<string, string | undefined>, name: string): boolean {
  const value = env[name];
  if (value !== undefined && value !== "" && value !== "0" && value !== "1") throw new UsageError(`${name} must be 1 (or 0)`);
  return value === "1";
}

/** Every --server value, split at commas; each an http(s) URL without its trailing slashes, none twice. */
function parseServers(values: string[]): string[] {
  const servers = values.flatMap((v) => v.split(",")).map((v) => v.trim().replace(/\/+$/, "")).filter(Boolean);
  if (servers.length === 0) throw new UsageError(`--server URL is required (http:// or https://)\n\n${USAGE}`);
  for (const s of servers) if (!/^https?:\/\/[^/]+/.test(s)) throw new UsageError(`--server ${s} is not an http:// or https:// URL`);
  const twice = servers.find((s, i) => servers.indexOf(s) !== i);
  if (twice) throw new UsageError(`--server ${twice} is given twice`);
  return servers;
}
