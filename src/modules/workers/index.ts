// Workers (SPEC §7): pairing, the worker protocol (HTTP routes + the /api/v1/worker/ws socket),
// the org's worker management, and the project features that need workers (clone, readiness,
// discovered). The factory also wires the dispatcher to task changes and actions.
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import { presenceOf } from "./presence";
import { WORKER_SOCKET_PATH, workerSocket } from "./socket";
import { isHeld } from "./dispatcher-state";
import protocolRoutes from "./protocol-routes";
import pairingRoutes from "./pairing-routes";
import orgRoutes from "./org-routes";
import projectRoutes from "./project-routes";
import type { ControlAction } from "../../protocol/messages";
import { dailyBudgetsOf } from "../usage/budgets";

/** Person actions that a worker holding the attempt must hear about, and what it is told. */
const CONTROLS: Partial<Record<string, ControlAction>> = {
  pause: "pause",
  resume: "resume",
  cancel: "cancel",
  restart: "cancel",
  input: "input",
  approve: "approve",
  deny: "deny",
};

function wire(core: Core) {
  const presence = presenceOf(core);
  const dispatcher = presence.dispatcher;
  core.sockets.register(WORKER_SOCKET_PATH, workerSocket(core));
  // On SQLite the dispatcher's programs run at once, inside the emit, as the change's other listeners.
  core.events.on("task.changed", (change) => void dispatcher.background("dispatcher on a task change", dispatcher.onTaskChanged(change.before, change.after)));
  core.events.on("task.changedElsewhere", ({ before, after }) => void dispatcher.background("dispatcher on another server's task change", dispatcher.onTaskChanged(before, after, true)));
  // Task changes announced while the bus was down were missed: look at the queues again.
  core.bus.onReconnect(() => {
    dispatcher.forgetPeers();
    void dispatcher.background("filling after the bus reconnected", dispatcher.fillAll());
  });
  core.events.on("task.action", ({ change, action, input, reason }) => {
    const before = change.before;
    // Denying a budget question cancels the task: the worker stops the attempt rather than answer the agent.
    const control = action === "deny" && change.after.status === "cancelled" ? "cancel" : CONTROLS[action];
    if (!before || !control || !before.worker_id) return;
    // Resume reaches the worker only when the task went back to it; the rest only when it held the attempt.
    const holder = action === "resume" ? (isHeld(change.after) ? change.after.worker_id : null) : isHeld(before) ? before.worker_id : null;
    if (!holder) return;
    const mail = dispatcher.mailbox.control(holder, before.id, before.attempt, control, {
      ...(input !== undefined ? { input } : {}),
      ...(reason !== undefined ? { reason } : action === "restart" ? { reason: "restarted" } : {}),
    });
    void core.store.write(mail).then((sent) => sent || presence.mailWaiting(holder)).catch((err) => core.log.error("keeping a control failed", { taskId: before.id, error: String((err as Error)?.stack ?? err) }));
  });
  core.events.on("project.policyChanged", ({ projectId }) => {
    // A raised (or removed) daily budget releases the project's queue at once.
    dailyBudgetsOf(core).forget(projectId);
    void dispatcher.background("filling after a policy change", dispatcher.fillAll());
  });
  core.onClose.push(() => presence.close());
}

export default (core: Core) => {
  wire(core);
  return new Elysia({ name: "workers", seed: core.instanceId, prefix: "/api/v1" })
    .use(protocolRoutes(core))
    .use(pairingRoutes(core))
    .use(orgRoutes(core))
    .use(projectRoutes(core));
};
