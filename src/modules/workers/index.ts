import { Elysia } from "elysia";
import type { Core } from "../../server/core";

// Routes of this feature are added by its issue; the module is mounted in server/modules.ts.
export default (core: Core) => new Elysia({ name: "workers", seed: core.instanceId, prefix: "/api/v1" });
