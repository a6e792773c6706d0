// Integrations (SPEC §9): management routes, the inbound hook, and the callback outbox + relay.
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import { manageRoutes } from "./manage-routes";
import { hooksRoute } from "./hooks-route";
import { callbackEventOf, writeOutbox } from "./outbox";
import { relayOf, startRelay } from "./relay";

/** Outbox rows are written inside every task change's transaction; the relay is woken after commit. */
function wireCallbacks(core: Core) {
  if (relayOf(core)) return;
  core.taskHooks.push((change) => writeOutbox(core, change));
  const relay = startRelay(core);
  core.events.on("task.changed", (change) => {
    if (callbackEventOf(change)) relay.wake();
  });
}

export default (core: Core) => {
  wireCallbacks(core);
  return new Elysia({ name: "integrations", seed: core.instanceId }).use(manageRoutes(core)).use(hooksRoute(core));
};
