// The code-hosting app's routes (SPEC §10): the app, installations, the person's connection,
// sync, synced repositories and new repositories; GitHub's browser callbacks; and the wiring of
// claims' tokens, pull requests and reviews.
import { Elysia, t } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { errorAnswers } from "../../server/errors";
import { noBody, parseOptionalJson, refuseUnknownFields } from "../../server/strict";
import { onTaskCompletedWithBranch } from "../tasks/results";
import { findTask } from "../tasks/store";
import { finishManifest, startManifest } from "./app";
import { createCodehostRepository } from "./repositories";
import { codehostStatus, finishInstallation, finishUserConnection, listRepositories, startInstallation, startUserConnection, syncOrg } from "./service";
import { enqueueJob, reviewHook, startRunner } from "./pulls";
import {
  CallbackQuery,
  CodehostStatus,
  CreatedRepository,
  CreateRepositoryBody,
  LinkAnswer,
  ManifestAnswer,
  ManifestBody,
  OrgParams,
  RepositoriesPage,
  RepositoriesQuery,
  SetupQuery,
  SyncAnswer,
} from "./model";

const tags = ["codehost"];

/** Where GitHub's browser redirects land: the web app's GitHub page, saying what happened. */
function backToApp(core: Core, query: Record<string, string>) {
  return new Response(null, { status: 302, headers: { location: `${core.config.publicUrl}/github?${new URLSearchParams(query)}`, "cache-control": "no-store" } });
}

function wire(core: Core) {
  const runner = startRunner(core);
  core.taskHooks.push(function* (change) {
    yield* reviewHook(core, change);
  });
  core.events.on("task.changed", (change) => {
    if (change.after.kind === "review" && change.after.status === "completed") runner.wake();
  });
  onTaskCompletedWithBranch((result, from) => {
    if (from && from !== core) return;
    // Several servers in one process (tests) all hear it: only the one holding the task acts.
    const job = { repositoryId: result.repositoryId, branch: result.branch, base: result.base, commit: result.commit };
    core.store
      .write(
        (function* () {
          if (!(yield* findTask(core, result.orgId, result.taskId))) return false;
          return yield* enqueueJob(core, result.orgId, result.taskId, "open_pull_request", job);
        })(),
      )
      .then((queued) => queued && runner.wake())
      .catch((error) => core.log.error("could not queue a pull request", { taskId: result.taskId, error: String((error as Error)?.stack ?? error) }));
  });
}

export default (core: Core) => {
  wire(core);
  return new Elysia({ name: "codehost", seed: core.instanceId, prefix: "/api/v1" })
    .use(authPlugin(core))
    .get("/orgs/:orgId/codehost", ({ orgId, principal }) => core.store.read(codehostStatus(core, orgId, principal.userId)), {
      permission: "member",
      params: OrgParams,
      response: { 200: CodehostStatus, ...errorAnswers(401, 403, 404) },
      detail: { summary: "The GitHub app, this organization's installations, and your own connection", tags },
    })
    .post("/orgs/:orgId/codehost/app/manifest", ({ orgId, principal, body }) => core.store.write(startManifest(core, orgId, principal.userId, body ?? {})), {
      permission: "settings.manage",
      params: OrgParams,
      body: t.Optional(ManifestBody),
      parse: [parseOptionalJson, "json"],
      transform: refuseUnknownFields(ManifestBody),
      response: { 200: ManifestAnswer, ...errorAnswers(400, 401, 403, 404, 409) },
      detail: {
        summary: "Start creating the server's GitHub app (one per server)",
        description: [
          "Answers a GitHub App manifest and where to post it: the browser submits a form to `url` with the field `manifest` (the JSON).",
          "GitHub then redirects to /api/v1/codehost/app/callback with a code and the state, which must come back within 10 minutes, once.",
          "The app's webhooks go to an automatically created github integration of this organization. 409 when the server has its app already.",
        ].join(" "),
        tags,
      },
    })
    .post("/orgs/:orgId/codehost/installations", ({ orgId, principal }) => core.store.write(startInstallation(core, orgId, principal.userId)), {
      permission: "settings.manage",
      params: OrgParams,
      ...noBody,
      response: { 200: LinkAnswer, ...errorAnswers(400, 401, 403, 404, 409) },
      detail: {
        summary: "A link to install the app on a GitHub account",
        description: "GitHub returns the browser to /api/v1/codehost/installations/callback, which connects the installation to this organization and syncs its repositories. 409 without an app.",
        tags,
      },
    })
    .post("/orgs/:orgId/codehost/user", ({ orgId, principal }) => startUserConnection(core, orgId, principal.userId), {
      permission: "member",
      params: OrgParams,
      ...noBody,
      response: { 200: LinkAnswer, ...errorAnswers(400, 401, 403, 404, 409) },
      detail: {
        summary: "A link to authorize the app with your own GitHub account (OAuth web flow)",
        description: "Needed to create repositories in your personal account. The state is bound to you, single use, and expires after 10 minutes.",
        tags,
      },
    })
    .post("/orgs/:orgId/codehost/sync", ({ orgId }) => syncOrg(core, orgId), {
      permission: "settings.manage",
      params: OrgParams,
      ...noBody,
      response: { 200: SyncAnswer, ...errorAnswers(400, 401, 403, 404, 409, 502, 503) },
      detail: {
        summary: "Sync now: the app's installations and every page of their repositories",
        description: "502 when GitHub refuses, 503 with Retry-After when it answers 5xx or its rate limit is reached.",
        tags,
      },
    })
    .get("/orgs/:orgId/codehost/repositories", ({ orgId, query }) => core.store.read(listRepositories(core, orgId, query)), {
      permission: "member",
      params: OrgParams,
      query: RepositoriesQuery,
      response: { 200: RepositoriesPage, ...errorAnswers(400, 401, 403, 404) },
      detail: { summary: "The synced repositories of this organization's installations, by name", description: "Add one to a project with POST .../projects/:id/repositories {url: cloneUrl}.", tags },
    })
    .post(
      "/orgs/:orgId/codehost/repositories",
      async ({ orgId, principal, body, status }) => status(201, await createCodehostRepository(core, orgId, principal.userId, body)),
      {
        permission: "project.create",
        params: OrgParams,
        body: CreateRepositoryBody,
        transform: refuseUnknownFields(CreateRepositoryBody),
        response: { 201: CreatedRepository, ...errorAnswers(400, 401, 403, 404, 409, 502, 503) },
        detail: {
          summary: "Create a repository at GitHub and a project holding it",
          description:
            "For a GitHub organization with an installation of the app connected here, through the installation; for your personal account, through your own connection (POST .../codehost/user). 409 when GitHub says the name is taken.",
          tags,
        },
      },
    )
    .get(
      "/codehost/app/callback",
      async ({ query }) => {
        const app = await finishManifest(core, query.code, query.state);
        return backToApp(core, { app: app.slug });
      },
      {
        query: CallbackQuery,
        response: { 302: t.Null({ description: "To the web app's /github page" }), ...errorAnswers(400, 409, 502, 503) },
        detail: { summary: "GitHub's redirect after the app was created from the manifest", description: "Converts the code; the state must be live and is used up.", tags, security: [] },
      },
    )
    .get(
      "/codehost/installations/callback",
      async ({ query }) => {
        const done = await finishInstallation(core, query);
        return backToApp(core, { installation: String(done.installationId) });
      },
      {
        query: SetupQuery,
        response: { 302: t.Null({ description: "To the web app's /github page" }), ...errorAnswers(400, 403, 409, 502, 503) },
        detail: {
          summary: "GitHub's redirect after an installation (the app's setup URL)",
          description:
            "The installation must be one the person who started the flow can reach with their own GitHub connection (GET /user/installations): 409 `no_connection` without a connection, 403 when it is not theirs. It is then read from GitHub as the app, connected to the organization the state names, and its repositories synced.",
          tags,
          security: [],
        },
      },
    )
    .get(
      "/codehost/user/callback",
      async ({ query }) => {
        // A person who declines at GitHub is sent back with error=access_denied and no code: back to
        // the page, which says so in its own words (never GitHub's text, which a forged link could set).
        const refused = (query as { error?: unknown }).error;
        if (refused !== undefined) return backToApp(core, { refused: refused === "access_denied" ? "declined" : "failed" });
        const done = await finishUserConnection(core, query.code, query.state);
        return backToApp(core, { connection: done.login });
      },
      {
        query: CallbackQuery,
        response: { 302: t.Null({ description: "To the web app's /github page" }), ...errorAnswers(400, 409, 502, 503) },
        detail: { summary: "GitHub's redirect after a person authorized the app", description: "The user token is sealed at rest.", tags, security: [] },
      },
    );
};
