// What an agent adapter is: something that starts a coding agent on one attempt and reports what
// it does through the context. The runtime owns the task's state; adapters only translate.
import type { AgentInfo } from "../../protocol/messages";
import type { ClaimResult, WorkerEventType } from "../../protocol/requests";
import type { ToolCall, ToolDecision } from "../policy";
import type { Confine } from "../confine";

/** A person's answer to what the agent asked, or a follow-up message (`input` on a running task). */
export type Answer = { kind: "approve" } | { kind: "deny"; reason: string } | { kind: "input"; text: string };

/** What an attempt has used so far, as the agent reports it: cumulative over the attempt, never a delta. */
export interface AgentUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  costUsd: number;
  model: string | null;
}

export interface AgentContext {
  claim: ClaimResult;
  /** The checkout the agent works in. */
  workdir: string;
  /** Files left here are uploaded as artifacts; a plan task writes plan.json here. */
  artifactsDir: string;
  /**
   * Files the agent must not read: the worker's credential. The worker's decider refuses file
   * tools on them (policy.ts decideTool) and Codex's sandbox denies them to commands; every agent
   * starts its process through `confine`, which covers them where bubblewrap runs (README, "Agents
   * and the worker's own files").
   */
  unreadable: string[];
  /**
   * How to start the agent's process: inside bubblewrap, without the unreadable files, and seeing
   * of the worker's runs its own attempt's directory alone (confine.ts).
   */
  confine: Confine;
  /** The environment for the agent process (the worker's own, plus AO_* variables). */
  env: Record<string, string>;
  /** The full instructions: title, prompt, project knowledge, review refs. */
  instructions: string;
  emit(type: WorkerEventType, data: unknown): void;
  summary(text: string): void;
  /** Asks the person (needs_input / needs_approval); the answer arrives through AgentRun.answer. */
  ask(kind: "input" | "approval", message: string): void;
  /** The project's agent policy applied to one tool call the agent wants to make (src/worker/policy.ts). */
  decide(call: ToolCall): ToolDecision;
  /** Reports the attempt's usage so far (cumulative); the runtime records it and enforces budgets. */
  usage(u: AgentUsage): void;
}

/** How an agent's run ended: code 0 completes the task, anything else fails it. */
export interface AgentExit {
  code: number | null;
  signal: string | null;
  /**
   * The agent's own error event already says why it failed (the model API's error, a CLI that
   * would not start): the attempt fails without an "exited with code N" of its own beside it.
   */
  reported?: true;
}

export interface AgentRun {
  /** The agent's process (and process group) id. */
  pid: number;
  exited: Promise<AgentExit>;
  pause(): void;
  resume(): void;
  /** Stops the agent and everything it started. */
  cancel(graceMs: number): Promise<void>;
  /** A person's answer, or a follow-up message while the agent runs. */
  answer(a: Answer): void;
}

export interface Agent {
  name: string;
  /** How the worker advertises it when no PATH probe finds it (exec: the program it starts). */
  info?: AgentInfo;
  /**
   * It confines its commands itself, with a bubblewrap of its own (Codex's sandbox): the worker
   * starts it through ctx.confine only where a bubblewrap runs inside that one.
   */
  ownSandbox?: boolean;
  start(ctx: AgentContext): AgentRun;
}
