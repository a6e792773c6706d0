import { Elysia, t } from "elysia";
import { VERSION } from "../../version";

export const healthModule = () =>
  new Elysia({ prefix: "/api/v1", tags: ["health"] }).get("/health", () => ({ status: "ok" as const, version: VERSION }), {
    detail: { summary: "Liveness check (no authentication)", security: [] },
    response: t.Object({ status: t.Literal("ok"), version: t.String() }),
  });
