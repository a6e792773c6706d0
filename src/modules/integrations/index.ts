// Integrations (SPEC §9): management routes, the inbound hook, and the callback outbox + relay.
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import { manageRoutes } from "./manage-routes";
import { hooksRoute } from "./hooks-route";
import { writeOutbox } from "./outbox";
import { relayOf, startRelay } from "./relay";

/**
 * Outbox rows are written inside every task change's transaction; the relay is woken after a
 * commit that wrote some (not after every status change: a wake costs the relay a transaction).
 */
function wireCallbacks(core: Core) {
  if (relayOf(core)) return;
  // Set by a change that wrote rows, cleared by the wake after commit. A rolled-back change may
  // leave it set: one extra wake, never a missed one.
  let written = false;
  core.taskHooks.push(function* (change) {
    if ((yield* writeOutbox(core, change)) > 0) written = true;
  });
  const relay = startRelay(core);
  core.events.on("task.changed", () => {
    if (!written) return;
    written = false;
    relay.wake();
  });
}

export default (core: Core) => {
  wireCallbacks(core);
  return new Elysia({ name: "integrations", seed: core.instanceId }).use(manageRoutes(core)).use(hooksRoute(core));
};
