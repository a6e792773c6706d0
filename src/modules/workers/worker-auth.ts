// Authentication of the worker protocol's HTTP routes: `{ worker: true }` on a route resolves the
// worker whose aow_ credential is in the Authorization header (401 when missing or revoked).
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import { credentialCheck, type CheckContext } from "../../server/credentials-first";
import { bearerOf, workerByCredential } from "./registry";

const plugins = new WeakMap<Core, ReturnType<typeof build>>();

export function workerAuthPlugin(core: Core) {
  let p = plugins.get(core);
  if (!p) plugins.set(core, (p = build(core)));
  return p;
}

function build(core: Core) {
  return new Elysia({ name: "ao-worker-auth", seed: core.instanceId })
    .macro({
      worker: (_enabled: true) => ({
        detail: { security: [{ worker: [] }] },
        resolve: credentialCheck(async ({ headers }: CheckContext) => ({ worker: await core.store.read(workerByCredential(core, bearerOf(headers.authorization))) })),
      }),
    })
    .as("global");
}
