// Why a queued task waits, in words for the person looking at it (the task record's waitingReason):
// its project is over its daily budget, or no online worker could take it: none is online, none
// takes its project's tasks, none runs its agent, none has its project's labels. A task that some
// online worker could take waits for a free slot, which needs no explaining (null).
//
// The workers a server knows best are its own connections: one of them that could take the task
// settles it with no query (the usual case, and the only one on the lifecycle's path). Otherwise,
// with several servers on PostgreSQL, the workers connected to the others count too: the org's
// approved workers are read and judged by presence (their last_seen_at and the bus).
import type { Core } from "../../server/core";
import type { TaskRow } from "../tasks/record";
import { all, type Q } from "../../db/query";
import { dailyBudgetsOf } from "../usage/budgets";
import { dispatcherOf } from "./dispatcher";
import { eligible, requiredLabels } from "./eligibility";
import { presenceOf } from "./presence";
import { mayTake, type WorkerRow } from "./registry";

type Task = Pick<TaskRow, "status" | "org_id" | "project_id" | "agent">;

/** What an online worker may take: projects it is limited to (null: any), agents it runs, labels it has. */
interface Capable {
  projects: Set<string> | null;
  agents: Set<string>;
  labels: Set<string>;
}

const APPROVED = "SELECT id, labels, policy, agents, last_seen_at, revoked_at FROM workers WHERE org_id = ? AND approved_at IS NOT NULL AND revoked_at IS NULL";

/** The org's online workers: those connected here and, with several servers, those connected to another. */
function* onlineWorkers(core: Core, orgId: string): Q<Capable[]> {
  const dispatcher = dispatcherOf(core);
  const online: Capable[] = [...dispatcher.connsOf(orgId)].filter((c) => c.active);
  if (core.sqlite) return online; // one server holds every socket
  const presence = presenceOf(core);
  type Row = Pick<WorkerRow, "id" | "labels" | "policy" | "agents" | "last_seen_at" | "revoked_at">;
  for (const row of yield* all<Row>(APPROVED, orgId)) {
    if (dispatcher.isConnected(row.id) || !presence.isOnline(row)) continue;
    const agents = (JSON.parse(row.agents) as { name: string }[]).map((a) => a.name);
    online.push({ ...mayTake(row), agents: new Set(agents) });
  }
  return online;
}

const quoted = (names: string[]) => names.map((n) => `'${n}'`).join(", ");

/** Why none of these workers could take the task, or null when one could. The first test none passes is the one named. */
function whyNone(workers: Capable[], task: Task, required: string[]): string | null {
  if (workers.length === 0) return "no approved worker of the organization is online";
  let left = workers.filter((w) => !w.projects || w.projects.has(task.project_id));
  if (left.length === 0) return "no online worker takes this project's tasks (each is limited to other projects)";
  const agent = task.agent;
  if (agent) {
    left = left.filter((w) => w.agents.has(agent));
    if (left.length === 0) return `no online worker has the agent '${agent}'`;
  }
  if (!left.some((w) => required.every((l) => w.labels.has(l)))) {
    return required.length === 1 ? `no online worker has the label ${quoted(required)} its project asks for` : `no online worker has all the labels its project asks for: ${quoted(required)}`;
  }
  return null;
}

/** The online workers read for one org, kept for the other tasks of one page (a list reads them once). */
export type OnlineWorkers = Map<string, Capable[]>;

/**
 * Why a queued task is not offered, when ao knows; null for any other task, and for one that waits
 * only for a free slot. `seen` keeps the online workers read for an org across the tasks of a page.
 */
export function* waitingReason(core: Core, task: Task, seen: OnlineWorkers = new Map()): Q<string | null> {
  if (task.status !== "queued") return null;
  const budget = yield* dailyBudgetsOf(core).reason(task.project_id);
  if (budget) return budget;
  const required = yield* requiredLabels(core, task.project_id);
  for (const conn of dispatcherOf(core).connsOf(task.org_id)) if (eligible(conn, task, required)) return null;
  let online = seen.get(task.org_id);
  if (!online) seen.set(task.org_id, (online = yield* onlineWorkers(core, task.org_id)));
  return whyNone(online, task, required);
}
