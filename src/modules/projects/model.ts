// Request and response schemas of the project API (SPEC §8).
import { t } from "elysia";
import { Limit } from "../tasks/model";
import { Line, Matching, Storable } from "../../lib/text";
import { RefName } from "../../lib/refname";

export { ErrorBody } from "../tasks/model";

const Name = Line(100, { description: "Unique among the org's live projects" });
const Knowledge = Storable(100_000, { description: "Free text handed to agents working on the project" });
const Policy = t.Record(t.String(), t.Unknown(), { description: "Free-form JSON object of project rules" });
// On input, not t.Record: the app's body normalisation would turn "text" into {"0":"t",...}.
// The service checks that it is a JSON object.
const PolicyInput = t.Unknown({ description: "Free-form JSON object of project rules" });
const RepoName = Matching("^[A-Za-z0-9_][A-Za-z0-9._-]*$", "a name of letters, digits and . _ -, not starting with . or -, 1 to 100 characters", { minLength: 1, maxLength: 100 });
const Branch = RefName();
const Url = t.String({ minLength: 1, maxLength: 2048, description: "https://host/path, ssh://[user@]host/path or user@host:path" });

export const Repository = t.Object({
  id: t.String(),
  url: t.String(),
  name: t.String(),
  branch: t.String(),
  primary: t.Boolean({ description: "Tasks run in a checkout of the primary repository; exactly one per project that has any" }),
});

export const Project = t.Object({
  id: t.String(),
  orgId: t.String(),
  name: t.String(),
  knowledge: t.String(),
  policy: Policy,
  archived: t.Boolean(),
  repositories: t.Array(Repository),
  createdAt: t.String(),
  updatedAt: t.String(),
});

export const ProjectPage = t.Object({ items: t.Array(Project), nextCursor: t.Nullable(t.String()) });

export const ListProjectsQuery = t.Object({
  limit: Limit,
  cursor: t.Optional(t.String()),
  archived: t.Optional(t.Boolean({ description: "true: include archived projects" })),
});

export const NewRepository = t.Object(
  { url: Url, name: t.Optional(RepoName), branch: t.Optional(Branch) },
  { additionalProperties: false },
);

export const CreateProjectBody = t.Object(
  {
    name: Name,
    knowledge: t.Optional(Knowledge),
    policy: t.Optional(PolicyInput),
    repositories: t.Optional(t.Array(NewRepository, { maxItems: 50, description: "Added in order; the first becomes primary" })),
  },
  { additionalProperties: false },
);

export const UpdateProjectBody = t.Object(
  {
    name: t.Optional(Name),
    knowledge: t.Optional(Knowledge),
    policy: t.Optional(PolicyInput),
    archived: t.Optional(t.Literal(false, { description: "false restores an archived project (DELETE archives)" })),
  },
  { additionalProperties: false },
);

// One object rather than a union of the two forms: a union answers "Expected union value" for any
// mistake, and normalising it keeps the first form that fits, dropping the other form's fields
// (a body with both url and fromProjectId added the URL and ignored the move). The service checks
// that exactly one form is given (repositoryRequest).
export const AddRepositoryBody = t.Object(
  {
    url: t.Optional(Url),
    name: t.Optional(RepoName),
    branch: t.Optional(Branch),
    fromProjectId: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "With repositoryId: the project to move the repository from" })),
    repositoryId: t.Optional(t.String({ minLength: 1, maxLength: 64, description: "With fromProjectId: the repository to move in" })),
  },
  {
    additionalProperties: false,
    description: "Either {url, name?, branch?} to add a repository, or {fromProjectId, repositoryId} to move one in (keeping its id); not both",
    // For the OpenAPI document only (TypeBox validates by kind and ignores it): the two forms.
    oneOf: [{ required: ["url"] }, { required: ["fromProjectId", "repositoryId"] }],
  },
);

export const UpdateRepositoryBody = t.Object(
  {
    name: t.Optional(RepoName),
    branch: t.Optional(Branch),
    primary: t.Optional(t.Boolean({ description: "true makes it the primary (the previous one stops being primary)" })),
  },
  { additionalProperties: false },
);

export const SplitBody = t.Optional(
  t.Object({ name: t.Optional(Name) }, { additionalProperties: false, description: "Name of the new project (default: the repository's name)" }),
);

export const ProjectParams = t.Object({ orgId: t.String(), projectId: t.String() });
export const RepositoryParams = t.Object({ orgId: t.String(), projectId: t.String(), repositoryId: t.String() });
export const RepositoryChange = t.Object({ project: Project, repository: Repository });
export const SplitResult = t.Object({ project: Project, from: Project });
