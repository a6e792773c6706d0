// Usage routes (issue 10): what a project's agents used over a period. A task's own usage is on
// its record (src/modules/tasks/list.ts); workers report usage through the worker protocol.
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { projectUsage } from "./service";
import { ErrorBody, ProjectUsage, UsageParams, UsageQuery } from "./model";

const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

export default (core: Core) =>
  new Elysia({ name: "usage", seed: core.instanceId, prefix: "/api/v1" })
    .use(authPlugin(core))
    .get("/orgs/:orgId/projects/:projectId/usage", ({ orgId, params, query }) => core.store.read(projectUsage(core, orgId, params.projectId, query)), {
      permission: "member",
      params: UsageParams,
      query: UsageQuery,
      response: { 200: ProjectUsage, ...errors },
      detail: {
        summary: "Tokens and cost of a project's tasks over a period, in total and per day",
        description:
          "from and to are UTC days, both included (default: the last 30 days); at most 366 days. Usage counts on the day the worker reported it. " +
          "400 validation_failed naming from or to when one is not a date or from is after to.",
        tags: ["projects"],
      },
    });
