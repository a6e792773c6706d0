// The parts of a project's policy that ao acts on, checked when a project is created or updated so
// a mistake is a 400 naming the field instead of a rule silently ignored on the worker. Keys no
// checker knows are kept as given (teams keep their own notes there).
//
//   agent           the agent permission policy (src/protocol/policy.ts), applied by the worker
//   budget          {perTaskUsd?, perDayUsd?}: positive US dollars
//   preferredAgent  claude | codex | exec: the agent a task runs with when it names none
//   workerLabels    labels a worker must carry to take the project's tasks (eligibility.ts)
import { Value } from "@sinclair/typebox/value";
import { invalid, fieldErrors } from "../../server/errors";
import { AgentPolicy } from "../../protocol/policy";
import { AGENT_NAMES } from "../../protocol/requests";

export interface FieldProblem {
  field: string;
  message: string;
}

export interface ProjectBudget {
  perTaskUsd?: number;
  perDayUsd?: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const isPositive = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v) && v > 0 && v <= 1_000_000;

function checkAgent(value: unknown): FieldProblem[] {
  if (!isObject(value)) return [{ field: "policy.agent", message: "an object {allow?, ask?, deny?, default?}" }];
  return fieldErrors(Value.Errors(AgentPolicy, value), "policy.agent").map((e) => ({
    field: e.field === "(root)" ? "policy.agent" : `policy.agent.${e.field}`,
    message: e.field.match(/^(allow|ask|deny)\.\d+$/)
      ? "a rule: read, search, edit, shell, network or other, optionally :PATTERN, or tool:NAME (up to 500 characters)"
      : e.message,
  }));
}

function checkBudget(value: unknown): FieldProblem[] {
  if (!isObject(value)) return [{ field: "policy.budget", message: "an object {perTaskUsd?, perDayUsd?}" }];
  const problems: FieldProblem[] = [];
  for (const key of Object.keys(value)) {
    if (key !== "perTaskUsd" && key !== "perDayUsd") problems.push({ field: `policy.budget.${key}`, message: "unknown field (perTaskUsd, perDayUsd)" });
    else if (!isPositive(value[key])) problems.push({ field: `policy.budget.${key}`, message: "a positive number of US dollars (up to 1,000,000)" });
  }
  return problems;
}

function checkPreferredAgent(value: unknown): FieldProblem[] {
  return typeof value === "string" && (AGENT_NAMES as readonly string[]).includes(value)
    ? []
    : [{ field: "policy.preferredAgent", message: `one of ${AGENT_NAMES.join(", ")}` }];
}

function checkWorkerLabels(value: unknown): FieldProblem[] {
  return Array.isArray(value) && value.length <= 20 && value.every((l) => typeof l === "string" && /^[a-z0-9][a-z0-9._:-]{0,49}$/.test(l))
    ? []
    : [{ field: "policy.workerLabels", message: "up to 20 labels (lower-case letters, digits and . _ : -, up to 50)" }];
}

/**
 * One checker per policy key. Another key that ao acts on (pullRequests, ...) gets its checker
 * here, in a file of its own if it is more than a few lines.
 */
const CHECKERS: Record<string, (value: unknown) => FieldProblem[]> = {
  agent: checkAgent,
  budget: checkBudget,
  preferredAgent: checkPreferredAgent,
  workerLabels: checkWorkerLabels,
};

/** Throws 400 validation_failed listing every field of the policy that ao cannot act on. */
export function checkProjectPolicy(policy: Record<string, unknown>) {
  const problems = Object.entries(CHECKERS).flatMap(([key, check]) => (policy[key] === undefined ? [] : check(policy[key])));
  if (problems.length > 0) throw invalid(`the project policy is not valid: ${problems.map((p) => p.field).join(", ")}`, problems);
}

/** The budget of a stored policy (checked when it was written; anything else reads as no budget). */
export function budgetOf(policy: unknown): ProjectBudget {
  const b = isObject(policy) && isObject(policy.budget) ? policy.budget : {};
  return {
    ...(isPositive(b.perTaskUsd) ? { perTaskUsd: b.perTaskUsd } : {}),
    ...(isPositive(b.perDayUsd) ? { perDayUsd: b.perDayUsd } : {}),
  };
}

/** The preferred agent of a stored policy, or null. */
export function preferredAgentOf(policy: unknown): string | null {
  return isObject(policy) && typeof policy.preferredAgent === "string" ? policy.preferredAgent : null;
}
