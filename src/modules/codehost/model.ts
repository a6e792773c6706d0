// Schemas of the code-hosting app's routes (SPEC §10).
import { t } from "elysia";
import { MAX_LIMIT } from "../tasks/cursor";
import { Project } from "../projects/model";
import { Matching } from "../../lib/text";
import type { StringOptions } from "@sinclair/typebox";
import { Int } from "../../server/answer-schemas";

export const OrgParams = t.Object({ orgId: t.String() });

/** A GitHub account's login (a person or an organization), as GitHub allows it. */
const GitHubLogin = (options: StringOptions) => Matching("^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$", "a GitHub login: letters, digits and -, starting with a letter or digit, up to 39 characters", options);

export const Installation = t.Object({
  id: Int({ description: "GitHub's installation id" }),
  account: t.Object({ login: t.String(), type: t.String({ description: "Organization or User" }), id: Int() }),
  repositorySelection: t.String({ description: "all or selected" }),
  suspended: t.Boolean(),
  repositories: Int({ description: "Repositories recorded at the last sync" }),
  syncedAt: t.Nullable(t.String()),
});

export const CodehostStatus = t.Object(
  {
    app: t.Nullable(
      t.Object({
        slug: t.String(),
        name: t.String(),
        htmlUrl: t.String(),
        appId: Int(),
        ownedByThisOrg: t.Boolean({ description: "This organization created the app (and owns its webhook integration)" }),
        integrationId: t.Nullable(t.String({ description: "The github integration receiving the app's webhooks (only to the owning org)" })),
      }),
    ),
    installations: t.Array(Installation),
    connection: t.Nullable(t.Object({ login: t.String() }, { description: "The caller's own GitHub authorization" })),
    githubUrl: t.String(),
  },
  { description: "The app, this organization's installations, and the caller's connection" },
);

export const ManifestBody = t.Object({
  name: t.Optional(t.String({ minLength: 1, maxLength: 34, description: "The app's name at GitHub (unique there; at most 34 characters). Default: ao at this server's host" })),
  organization: t.Optional(
    GitHubLogin({ description: "Create the app owned by this GitHub organization instead of the person's account" }),
  ),
  public: t.Optional(t.Boolean({ description: "Let other GitHub accounts install it (default false: only the owning account)" })),
  projectId: t.Optional(t.String({ description: "Project of the app's webhook integration (issues, comments and labeled pull requests of repositories no project holds become tasks there). Default: the oldest live project, or a new project named GitHub" })),
});

export const ManifestAnswer = t.Object({
  url: t.String({ description: "Where the browser POSTs the manifest (form field manifest) to create the app at GitHub" }),
  manifest: t.Record(t.String(), t.Unknown(), { description: "The GitHub App manifest" }),
  state: t.String({ description: "Single use, expires after 10 minutes, bound to the caller" }),
});

export const LinkAnswer = t.Object({ url: t.String(), state: t.String({ description: "Single use, expires after 10 minutes, bound to the caller" }) });

// GitHub's browser redirects: GitHub picks their parameters (an OAuth refusal adds error,
// error_description and error_uri), so the query is open and what is not named here is ignored.
const GITHUB_ADDS = { additionalProperties: true, description: "Parameters GitHub adds beyond these are ignored" } as const;
export const CallbackQuery = t.Object({ code: t.Optional(t.String({ maxLength: 512 })), state: t.Optional(t.String({ maxLength: 200 })) }, GITHUB_ADDS);
export const SetupQuery = t.Object(
  {
    installation_id: t.Optional(t.String({ maxLength: 40 })),
    setup_action: t.Optional(t.String({ maxLength: 40 })),
    state: t.Optional(t.String({ maxLength: 200 })),
  },
  GITHUB_ADDS,
);

export const SyncAnswer = t.Object({
  installations: t.Array(Installation),
  repositories: Int({ description: "Repositories recorded across this organization's installations" }),
  unclaimed: Int({ description: "Installations of the app bound to no organization yet (installed without ao's setup link)" }),
});

export const CodehostRepository = t.Object({
  id: Int({ description: "GitHub's repository id" }),
  installationId: Int(),
  fullName: t.String(),
  private: t.Boolean(),
  cloneUrl: t.String({ description: "Add it to a project with POST /orgs/:orgId/projects/:id/repositories {url: cloneUrl}" }),
  htmlUrl: t.String(),
  defaultBranch: t.String(),
});

export const RepositoriesQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: MAX_LIMIT, description: `1..${MAX_LIMIT}, default 50` })),
  cursor: t.Optional(t.String()),
  q: t.Optional(t.String({ maxLength: 100, description: "Only names containing this (case-insensitive)" })),
});

export const RepositoriesPage = t.Object({ items: t.Array(CodehostRepository), nextCursor: t.Nullable(t.String()) }, { description: "Synced repositories by full name" });

export const CreateRepositoryBody = t.Object({
  owner: GitHubLogin({ description: "A GitHub organization with an installation of the app, or the caller's own login (needs their connection)" }),
  name: Matching("^[A-Za-z0-9._-]{1,100}$", "a repository name: letters, digits and . _ -, 1 to 100 characters", { description: "The repository's name" }),
  private: t.Optional(t.Boolean({ description: "Default true" })),
  description: t.Optional(t.String({ maxLength: 350 })),
});

export const CreatedRepository = t.Object({ project: Project, repository: CodehostRepository });
