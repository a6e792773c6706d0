// The project's policy as a form: `policy.agent {allow, ask, deny, default}` (rules one a line),
// `policy.budget {perTaskUsd, perDayUsd}`, `policy.pullRequests` and `policy.preferredAgent`.
// Keys the form does not know are kept as they are, so saving never drops another feature's setting.

export type Decision = "allow" | "ask" | "deny";
export type PullRequests = "open" | "draft" | "off";

export interface PolicyForm {
  allow: string;
  ask: string;
  deny: string;
  /** "" : the worker's built-in rules decide calls no rule matches. */
  default: Decision | "";
  perTaskUsd: string;
  perDayUsd: string;
  pullRequests: PullRequests;
  preferredAgent: string;
}

const lines = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === "string").join("\n") : "");
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const money = (v: unknown) => (typeof v === "number" && Number.isFinite(v) ? String(v) : "");

export function formOf(policy: Record<string, unknown>): PolicyForm {
  const agent = obj(policy.agent);
  const budget = obj(policy.budget);
  const d = agent.default;
  const pr = policy.pullRequests;
  return {
    allow: lines(agent.allow),
    ask: lines(agent.ask),
    deny: lines(agent.deny),
    default: d === "allow" || d === "ask" || d === "deny" ? d : "",
    perTaskUsd: money(budget.perTaskUsd),
    perDayUsd: money(budget.perDayUsd),
    pullRequests: pr === "draft" || pr === "off" ? pr : "open",
    preferredAgent: typeof policy.preferredAgent === "string" ? policy.preferredAgent : "",
  };
}

const rules = (text: string) =>
  text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");

/** A number the person typed, or the text itself when it is not one (the server names the field then). */
const amount = (text: string): number | string | undefined => {
  const t = text.trim();
  if (t === "") return undefined;
  const n = Number(t.replace(/^\$/, ""));
  return Number.isFinite(n) ? n : t;
};

/** The policy to save: `base` (the project's current policy) with the form's parts replaced. */
export function policyOf(form: PolicyForm, base: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  const agent: Record<string, unknown> = { ...obj(base.agent) };
  for (const key of ["allow", "ask", "deny"] as const) {
    const list = rules(form[key]);
    if (list.length) agent[key] = list;
    else delete agent[key];
  }
  if (form.default) agent.default = form.default;
  else delete agent.default;
  if (Object.keys(agent).length) out.agent = agent;
  else delete out.agent;

  const budget: Record<string, unknown> = { ...obj(base.budget) };
  for (const key of ["perTaskUsd", "perDayUsd"] as const) {
    const v = amount(form[key]);
    if (v === undefined) delete budget[key];
    else budget[key] = v;
  }
  if (Object.keys(budget).length) out.budget = budget;
  else delete out.budget;

  // "open" is the default: written only when the project had said something else before.
  if (form.pullRequests !== "open" || base.pullRequests !== undefined) out.pullRequests = form.pullRequests;
  if (form.preferredAgent.trim()) out.preferredAgent = form.preferredAgent.trim();
  else delete out.preferredAgent;
  return out;
}

/** Which form field an API complaint about `policy.agent.allow[2]` (or `/policy/budget/perDayUsd`) belongs to. */
export function policyField(apiField: string): keyof PolicyForm | "policy" {
  const f = apiField.replace(/^\//, "").replace(/\//g, ".");
  const m = /^policy\.(agent\.(allow|ask|deny|default)|budget\.(perTaskUsd|perDayUsd)|(pullRequests)|(preferredAgent))/.exec(f);
  if (!m) return "policy";
  return (m[2] ?? m[3] ?? m[4] ?? m[5]) as keyof PolicyForm;
}
