// Project and repository routes (SPEC §8). Rules live in service.ts and repositories.ts.
import { Elysia } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { archiveProject, createProject, getProject, listProjects, updateProject } from "./service";
import { policyChanged, relayPolicyChanges, writeProjects } from "./cache";
import { addRepository, moveRepository, removeRepository, repositoryRequest, splitRepository, updateRepository } from "./repositories";
import { documented, errorResponses } from "../tasks/model";
import {
  AddRepositoryBody,
  CreateProjectBody,
  ErrorBody,
  ListProjectsQuery,
  Project,
  ProjectPage,
  ProjectParams,
  RepositoryChange,
  RepositoryParams,
  SplitBody,
  SplitResult,
  UpdateProjectBody,
  UpdateRepositoryBody,
} from "./model";
import { parseOptionalJson, refuseUnknownFields } from "../../server/strict";

const tags = ["projects"];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody };

export default (core: Core) => {
  relayPolicyChanges(core);
  return new Elysia({ name: "projects", seed: core.instanceId, prefix: "/api/v1" })
    .use(authPlugin(core))
    .get("/orgs/:orgId/projects", ({ orgId, query }) => core.store.read(listProjects(core, orgId, query)), {
      permission: "member",
      query: ListProjectsQuery,
      detail: {
        summary: "List projects, newest first",
        description: "Archived projects only with archived=true.",
        tags,
        responses: { ...documented({ 200: [ProjectPage, "A page of projects"] }), ...errorResponses },
      },
    })
    .post("/orgs/:orgId/projects", async ({ orgId, body, status }) => status(201, await writeProjects(core, createProject(core, orgId, body))), {
      permission: "project.create",
      body: CreateProjectBody,
      transform: refuseUnknownFields(CreateProjectBody),
      response: { 201: Project, ...errors, 409: ErrorBody },
      detail: { summary: "Create a project", description: "409 conflict when a live project of the org has the name.", tags },
    })
    .get("/orgs/:orgId/projects/:projectId", ({ orgId, params }) => core.store.read(getProject(core, orgId, params.projectId)), {
      permission: "member",
      params: ProjectParams,
      response: { 200: Project, ...errors },
      detail: { summary: "Get a project", tags },
    })
    .patch("/orgs/:orgId/projects/:projectId", async ({ orgId, params, body }) => {
      const project = await writeProjects(core, updateProject(core, orgId, params.projectId, body));
      if (body.policy !== undefined) policyChanged(core, orgId, params.projectId);
      return project;
    }, {
      permission: "project.update",
      params: ProjectParams,
      body: UpdateProjectBody,
      transform: refuseUnknownFields(UpdateProjectBody),
      response: { 200: Project, ...errors, 409: ErrorBody },
      detail: { summary: "Update a project (name, knowledge, policy; archived: false restores it)", tags },
    })
    .delete("/orgs/:orgId/projects/:projectId", ({ orgId, params }) => writeProjects(core, archiveProject(core, orgId, params.projectId)), {
      permission: "project.delete",
      params: ProjectParams,
      response: { 200: Project, ...errors },
      detail: { summary: "Archive a project", description: "It takes no new tasks and is hidden from the list; its tasks stay.", tags },
    })
    .post(
      "/orgs/:orgId/projects/:projectId/repositories",
      async ({ orgId, params, body, status }) => {
        const request = repositoryRequest(body);
        const change = "add" in request ? addRepository(core, orgId, params.projectId, request.add) : moveRepository(core, orgId, params.projectId, request.move);
        return status(201, await writeProjects(core, change));
      },
      {
        permission: "project.update",
        params: ProjectParams,
        body: AddRepositoryBody,
        transform: refuseUnknownFields(AddRepositoryBody),
        response: { 201: RepositoryChange, ...errors, 409: ErrorBody },
        detail: {
          summary: "Add a repository ({url}) or move one in ({fromProjectId, repositoryId})",
          description: "The first repository of a project becomes its primary. A moved repository keeps its id. 409 conflict when it is the last repository of fromProjectId and reviews of that project are unfinished (details {unfinishedReviews}): each reviews a checkout of it.",
          tags,
        },
      },
    )
    .patch(
      "/orgs/:orgId/projects/:projectId/repositories/:repositoryId",
      ({ orgId, params, body }) => writeProjects(core, updateRepository(core, orgId, params.projectId, params.repositoryId, body)),
      {
        permission: "project.update",
        params: RepositoryParams,
        body: UpdateRepositoryBody,
        transform: refuseUnknownFields(UpdateRepositoryBody),
        response: { 200: RepositoryChange, ...errors, 409: ErrorBody },
        detail: { summary: "Rename a repository, change its branch, or make it primary", tags },
      },
    )
    .delete(
      "/orgs/:orgId/projects/:projectId/repositories/:repositoryId",
      ({ orgId, params }) => writeProjects(core, removeRepository(core, orgId, params.projectId, params.repositoryId)),
      {
        permission: "project.update",
        params: RepositoryParams,
        response: { 200: RepositoryChange, ...errors, 409: ErrorBody },
        detail: {
          summary: "Remove a repository from the project",
          description:
            "Answers {project (without it), repository (the one removed)}. Removing the primary makes the next one added primary. Tasks keep their record; workers' clones of it are no longer tracked. 409 conflict when the project is archived, or when this is its last repository and reviews of the project are unfinished (details {unfinishedReviews}): each reviews a checkout of it.",
          tags,
        },
      },
    )
    .post(
      "/orgs/:orgId/projects/:projectId/repositories/:repositoryId/split",
      async ({ orgId, params, body, status }) => status(201, await writeProjects(core, splitRepository(core, orgId, params.projectId, params.repositoryId, body ?? {}))),
      {
        permission: "project.update",
        params: RepositoryParams,
        body: SplitBody,
        parse: [parseOptionalJson, "json"],
        transform: refuseUnknownFields(SplitBody),
        response: { 201: SplitResult, ...errors, 409: ErrorBody },
        detail: {
          summary: "Move the repository into a new project of its own",
          description:
            "Answers {project (the new one), from}. 409 conflict when it is the project's last repository and reviews of the project are unfinished (details {unfinishedReviews}): each reviews a checkout of it.",
          tags,
        },
      },
    );
};
