// Task routes (SPEC §5). Rules live in service.ts, plan.ts and artifacts.ts; reads in list.ts.
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { applyAction } from "./service";
import { createTaskBatched } from "./batch";
import { publishedRecordOf } from "./store";
import { getTask, listEvents, listTasks, taskRecordOf } from "./list";
import { applyPlan } from "./plan";
import { dispositionOf, findArtifact, openArtifact } from "./artifacts";
import { toTaskRecord } from "./record";
import { waitingReason } from "../workers/waiting";
import { knownNames } from "./names";
import {
  ActionBody,
  AppliedPlan,
  ArtifactParams,
  CreateTaskBody,
  ErrorBody,
  EventPage,
  EventsQuery,
  ListTasksQuery,
  TaskPage,
  TaskParams,
  TaskRecord,
  documented,
  errorResponses,
} from "./model";
import { noBody, refuseUnknownFields } from "../../server/strict";

const tags = ["tasks"];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

/** If-None-Match holds our ETag (or is *): the client's copy is current. */
function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  return ifNoneMatch.split(",").some((v) => {
    const tag = v.trim().replace(/^W\//, "");
    return tag === "*" || tag === etag;
  });
}

export default (core: Core) =>
  new Elysia({ name: "tasks", seed: core.instanceId, prefix: "/api/v1" })
    .use(authPlugin(core))
    .post(
      "/orgs/:orgId/tasks",
      async ({ body, orgId, actor, principal, status }) => {
        const change = await createTaskBatched(core, orgId, { ...body, createdBy: actor });
        // The record its publication built when someone follows the org live (the same record).
        const published = publishedRecordOf(change.after);
        if (published) return status(201, published);
        // A new task's only named ref is its creator, the caller.
        const record = toTaskRecord(change.after, [], knownNames([[actor, principal.name]]));
        // Whether ao can already tell why it will wait (no online worker could take it, say): from memory when a worker here could.
        record.waitingReason = await core.store.read(waitingReason(core, change.after));
        return status(201, record);
      },
      {
        permission: "task.create",
        body: CreateTaskBody,
        transform: refuseUnknownFields(CreateTaskBody),
        // Documented, not checked on the way out: Elysia's check and encoding of the record was 8% of
        // the server's work per create (BENCHMARKS.md). toTaskRecord builds it; a test checks the answer.
        detail: {
          summary: "Create a task",
          description:
            "projectId, title (1..200) and prompt (1..100000) are required; kind review needs review {base, head} (ignored for other kinds). " +
            "400 validation_failed (field projectId) when the project is not one of this organization's, (field kind) for a review in a project without a repository to review; 409 conflict when it is archived.",
          tags,
          responses: { ...documented({ 201: [TaskRecord, "The created task"], 409: [ErrorBody, "conflict"] }), ...errorResponses },
        },
      },
    )
    .get("/orgs/:orgId/tasks", ({ query, orgId }) => core.store.read(listTasks(core, orgId, query)), {
      permission: "member",
      query: ListTasksQuery,
      detail: {
        summary: "List tasks, newest first",
        description: "Keyset pages: pass nextCursor as cursor. Filters: status, projectId, kind, parentId.",
        tags,
        responses: { ...documented({ 200: [TaskPage, "A page of tasks"] }), ...errorResponses },
      },
    })
    .get("/orgs/:orgId/tasks/:taskId", ({ params, orgId }) => core.store.read(getTask(core, orgId, params.taskId)), {
      permission: "member",
      params: TaskParams,
      response: { 200: TaskRecord, ...errors },
      detail: { summary: "Get a task", tags },
    })
    .get("/orgs/:orgId/tasks/:taskId/events", ({ params, query, orgId }) => core.store.read(listEvents(core, orgId, params.taskId, query)), {
      permission: "member",
      params: TaskParams,
      query: EventsQuery,
      detail: {
        summary: "Timeline events of a task, ascending seq",
        description: "Poll with after=<last seq you have>.",
        tags,
        responses: { ...documented({ 200: [EventPage, "A page of events"] }), ...errorResponses },
      },
    })
    .post(
      "/orgs/:orgId/tasks/:taskId/actions",
      async ({ params, body, orgId, actor }) => {
        const change = await applyAction(core, orgId, params.taskId, body, actor);
        // The task as the action left it, not read afresh: the answer could already show what the
        // worker did next (on PostgreSQL the read waits for the network while the worker acts).
        return core.store.read(taskRecordOf(core, change.after));
      },
      {
        permission: "task.control",
        params: TaskParams,
        body: ActionBody,
        transform: refuseUnknownFields(ActionBody),
        response: { 200: TaskRecord, ...errors, 409: ErrorBody },
        detail: {
          summary: "Apply an action (pause, resume, cancel, retry, restart, input, approve, deny)",
          description: "409 invalid_transition with details {status, allowedActions} when the action is not allowed in the task's state; 409 conflict for retry or restart when the task's project is archived (restore it first), or when it is a plan whose tasks were created (apply-plan).",
          tags,
        },
      },
    )
    .get(
      "/orgs/:orgId/tasks/:taskId/artifacts/:name",
      async ({ params, orgId, headers }) => {
        const a = await core.store.read(findArtifact(core, orgId, params.taskId, params.name));
        const etag = `"${a.etag}"`;
        const common = { etag, "cache-control": "private, no-cache", "x-content-type-options": "nosniff" };
        if (matches(headers["if-none-match"], etag)) return new Response(null, { status: 304, headers: common });
        // Bun sends a streamed body chunked, without the Content-Length given here (oven-sh/bun#10507).
        const { body, size } = await openArtifact(core, a);
        return new Response(body, {
          headers: {
            ...common,
            "content-type": a.contentType,
            "content-length": String(size),
            "content-disposition": dispositionOf(a.name, a.contentType),
            // Even if a browser is sent here directly, nothing in the file runs with our origin.
            "content-security-policy": "sandbox",
          },
        });
      },
      {
        permission: "member",
        params: ArtifactParams,
        detail: {
          summary: "Download an artifact",
          description:
            "With Content-Type, Content-Length, ETag (If-None-Match gives 304) and Content-Disposition. On PostgreSQL an artifact larger than 256 KiB streams from the database without Content-Length (chunked).",
          tags,
          responses: {
            200: { description: "The file, with its own content type", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } },
            304: { description: "Not modified (If-None-Match holds the ETag)" },
            // 400: a name that is not a safe artifact name; 404: no such task or artifact.
            ...errorResponses,
          },
        },
      },
    )
    .post(
      "/orgs/:orgId/tasks/:taskId/apply-plan",
      async ({ params, orgId, actor, status }) => {
        const applied = await applyPlan(core, orgId, params.taskId, actor);
        return applied.created ? status(201, { tasks: applied.tasks }) : status(200, { tasks: applied.tasks });
      },
      {
        permission: "task.create",
        params: TaskParams,
        // The whole plan is applied: a pick of tasks or a dry run is refused, not ignored.
        ...noBody,
        response: { 200: AppliedPlan, 201: AppliedPlan, ...errors, 409: ErrorBody },
        detail: {
          summary: "Create the tasks a completed plan proposes",
          description: "201 {tasks} the first time, 200 with the same tasks afterwards. Each task runs with its item's agent, else the plan's. 400 when the task is not a plan, or when it proposes a review and its project has no repository (fields plan.tasks.N.kind; nothing is created); 409 when it is not completed.",
          tags,
        },
      },
    );
