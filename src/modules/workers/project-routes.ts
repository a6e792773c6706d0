// The project features that need workers (SPEC §8): clone a repository to workers, AI readiness,
// repositories discovered on workers.
import { Elysia, t } from "elysia";
import { parseOptionalJson, refuseUnknownFields } from "../../server/strict";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { Project } from "../projects/model";
import { cloneStatuses, requestClone } from "./clones";
import { acceptDiscovered, dismissDiscovered, listDiscovered } from "./discovered";
import { latestReadiness, requestReadiness } from "./readiness";
import { presenceOf } from "./presence";
import {
  AcceptBody,
  CloneAccepted,
  CloneBody,
  CloneStatuses,
  DiscoveredPage,
  DismissBody,
  ErrorBody,
  PageQuery,
  ProjectParams,
  ReadinessAccepted,
  ReadinessBody,
  ReadinessRun,
  RepositoryParams,
  errors,
} from "./model";

const tags = ["projects"];

export default (core: Core) =>
  new Elysia({ name: "workers-projects", seed: core.instanceId })
    .use(authPlugin(core))
    .post(
      "/orgs/:orgId/projects/:projectId/repositories/:repositoryId/clone",
      async ({ orgId, params, body, status }) => {
        const accepted = await core.store.write(requestClone(core, orgId, params.projectId, params.repositoryId, body.workerIds));
        for (const w of accepted.workers) if (!w.delivered) presenceOf(core).mailWaiting(w.workerId);
        return status(202, accepted);
      },
      {
        permission: "project.update",
        params: RepositoryParams,
        body: CloneBody,
        transform: refuseUnknownFields(CloneBody),
        response: { 202: CloneAccepted, ...errors, 409: ErrorBody },
        detail: {
          summary: "Clone the repository to workers",
          description: "Each worker clones it into its workspace and reports; follow with GET .../clones. Offline workers get the request when they reconnect.",
          tags,
        },
      },
    )
    .get(
      "/orgs/:orgId/projects/:projectId/repositories/:repositoryId/clones",
      ({ orgId, params, query }) => core.store.read(cloneStatuses(core, orgId, params.projectId, params.repositoryId, query)),
      {
        permission: "member",
        params: RepositoryParams,
        query: PageQuery,
        response: { 200: CloneStatuses, ...errors },
        detail: { summary: "Which workers have the repository (cloning, cloned, failed)", tags },
      },
    )
    .post(
      "/orgs/:orgId/projects/:projectId/readiness",
      async ({ orgId, params, body, actor, status }) => {
        const accepted = await core.store.write(requestReadiness(core, orgId, params.projectId, body?.workerId, actor));
        presenceOf(core).mailWaiting(accepted.workerId);
        return status(202, accepted);
      },
      {
        // Any member, viewers too (the seed's table): it changes no project, and its run is a report.
        permission: "member",
        params: ProjectParams,
        body: t.Optional(ReadinessBody),
        parse: [parseOptionalJson, "json"],
        transform: refuseUnknownFields(ReadinessBody),
        response: { 202: ReadinessAccepted, ...errors, 409: ErrorBody },
        detail: {
          summary: "Run the AI readiness analysis on a worker that has the project",
          description:
            "workerId picks the worker (it must have the primary repository and be online); without it an online worker that has it is chosen. 409 when none has it or the one named is offline.",
          tags,
        },
      },
    )
    .get("/orgs/:orgId/projects/:projectId/readiness", ({ orgId, params }) => core.store.read(latestReadiness(core, orgId, params.projectId)), {
      permission: "member",
      params: ProjectParams,
      response: { 200: ReadinessRun, ...errors },
      detail: { summary: "The latest readiness run: status, score, checks and a report", tags },
    })
    .get("/orgs/:orgId/discovered", ({ orgId, query }) => core.store.read(listDiscovered(core, orgId, query)), {
      permission: "member",
      query: PageQuery,
      response: { 200: DiscoveredPage, ...errors },
      detail: {
        summary: "Repositories found on workers that are in no project",
        description: "Each is listed while at least one worker (not revoked) reports it, with those workers; one that no worker has any more is left out.",
        tags,
      },
    })
    .post("/orgs/:orgId/discovered/accept", ({ orgId, body }) => acceptDiscovered(core, orgId, body.ids, body.projectId), {
      // Any member, viewers too, as the seed's table has it (and dismiss below).
      permission: "member",
      body: AcceptBody,
      transform: refuseUnknownFields(AcceptBody),
      response: { 200: t.Object({ projects: t.Array(Project) }), ...errors, 409: ErrorBody },
      detail: {
        summary: "Accept discovered repositories",
        description: "With projectId they join that project; without, each becomes a project of its own. 409 for ids already accepted or dismissed.",
        tags,
      },
    })
    .post("/orgs/:orgId/discovered/dismiss", ({ orgId, body }) => core.store.write(dismissDiscovered(core, orgId, body.ids)), {
      permission: "member",
      body: DismissBody,
      transform: refuseUnknownFields(DismissBody),
      response: { 200: t.Object({ dismissed: t.Array(t.String()) }), ...errors, 409: ErrorBody },
      detail: { summary: "Dismiss discovered repositories for good (not shown again, even when reported again)", tags },
    });
