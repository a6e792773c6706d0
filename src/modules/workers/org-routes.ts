// Workers of an organization (SPEC §7): list, read, update, approve, revoke.
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { ErrorBody, PageQuery, PatchWorkerBody, WorkerPage, WorkerParams, WorkerRecord, errors } from "./model";
import { approveWorker, getWorker, listWorkers, revokeWorker, updateWorker } from "./service";
import { noBody, refuseUnknownFields } from "../../server/strict";

const tags = ["workers"];

export default (core: Core) =>
  new Elysia({ name: "workers-org", seed: core.instanceId })
    .use(authPlugin(core))
    .get("/orgs/:orgId/workers", ({ orgId, query }) => core.store.read(listWorkers(core, orgId, query)), {
      permission: "member",
      query: PageQuery,
      response: { 200: WorkerPage, ...errors },
      detail: { summary: "List workers with status, tools, agents and providers, newest first", tags },
    })
    .get("/orgs/:orgId/workers/:workerId", ({ orgId, params }) => core.store.read(getWorker(core, orgId, params.workerId)), {
      permission: "member",
      params: WorkerParams,
      response: { 200: WorkerRecord, ...errors },
      detail: { summary: "Get a worker", tags },
    })
    .patch("/orgs/:orgId/workers/:workerId", ({ orgId, params, body }) => updateWorker(core, orgId, params.workerId, body), {
      permission: "worker.manage",
      params: WorkerParams,
      body: PatchWorkerBody,
      transform: refuseUnknownFields(PatchWorkerBody),
      response: { 200: WorkerRecord, ...errors, 409: ErrorBody },
      detail: {
        summary: "Update name, labels, policy",
        description: "policy.projects (optional) limits the worker to those projects. 409 for a revoked worker.",
        tags,
      },
    })
    .post("/orgs/:orgId/workers/:workerId/approve", ({ orgId, params, actor }) => approveWorker(core, orgId, params.workerId, actor.id), {
      permission: "worker.approve",
      params: WorkerParams,
      ...noBody,
      response: { 200: WorkerRecord, ...errors, 409: ErrorBody },
      detail: { summary: "Approve a worker (organizations with requireWorkerApproval)", description: "Idempotent. 409 for a revoked worker.", tags },
    })
    .delete("/orgs/:orgId/workers/:workerId", ({ orgId, params }) => revokeWorker(core, orgId, params.workerId), {
      permission: "worker.manage",
      params: WorkerParams,
      response: { 200: WorkerRecord, ...errors },
      detail: {
        summary: "Revoke the worker's credential",
        description: "At once: its requests get 401, its socket is closed and its running attempts go back to the queue. Idempotent.",
        tags,
      },
    });
