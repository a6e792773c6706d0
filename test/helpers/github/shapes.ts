// GitHub's response and webhook shapes, taken from recordings rather than written by hand:
// repositories from @octokit/fixtures (a recorded `GET /repos/:owner/:repo`), apps,
// installations, pull requests, reviews and comments from @octokit/webhooks-examples (GitHub's
// own example payloads, whose objects are the REST objects). Each builder clones a recorded
// object, moves its URLs onto the stand-in's hosts and sets the fields that identify it.
import { readFileSync } from "node:fs";
import { join } from "node:path";

const modules = join(import.meta.dir, "..", "..", "..", "node_modules", "@octokit");

type Json = any;

const repositoryFixture: Json = JSON.parse(
  readFileSync(join(modules, "fixtures/scenarios/api.github.com/get-repository/normalized-fixture.json"), "utf8"),
)[0].response;

const webhookExamples: Record<string, Json[]> = Object.fromEntries(
  (JSON.parse(readFileSync(join(modules, "webhooks-examples/api.github.com/index.json"), "utf8")) as { name: string; examples: Json[] }[]).map(
    (e) => [e.name, e.examples],
  ),
);

function example(event: string, action: string | null, has?: (e: Json) => boolean): Json {
  const found = webhookExamples[event]?.find((e) => (action === null || e.action === action) && (!has || has(e)));
  if (!found) throw new Error(`no recorded ${event}.${action} webhook example`);
  return structuredClone(found);
}

const templates = {
  repository: repositoryFixture,
  // an Organization account as GitHub renders a simple user
  organization: repositoryFixture.owner,
  user: example("pull_request", "opened").sender,
  app: example("check_run", null, (e) => !!e.check_run?.app).check_run.app,
  installation: example("installation", "created").installation,
  pullRequest: example("pull_request", "opened").pull_request,
  review: example("pull_request_review", "submitted").review,
  issueComment: example("issue_comment", "created").comment,
};

/** Where the stand-in answers: `web` plays https://github.com, `api` https://api.github.com. */
export interface Hosts {
  web: string;
  api: string;
}

/** Rewrites every string in a recorded object: GitHub's hosts to the stand-in's, then `pairs`. */
function rehost<T>(value: T, hosts: Hosts, pairs: [string, string][] = []): T {
  const walk = (v: Json): Json => {
    if (typeof v === "string") {
      let s = v.replaceAll("https://api.github.com", hosts.api).replaceAll("https://github.com", hosts.web);
      for (const [from, to] of pairs) s = s.replaceAll(from, to);
      return s;
    }
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value);
}

export interface Account {
  login: string;
  id: number;
  type: "User" | "Organization";
  /** For a User: name and email as `GET /user` shows them. */
  name?: string | null;
  email?: string | null;
  /** For an Organization: the logins of its members. */
  members?: string[];
}

export function nodeId(kind: string, id: number) {
  return Buffer.from(`0:${kind}${id}`).toString("base64");
}

export function simpleUser(hosts: Hosts, a: Account): Json {
  const t = a.type === "Organization" ? templates.organization : templates.user;
  const u = rehost(t, hosts, [[`/${t.login}`, `/${a.login}`]]);
  return {
    ...u,
    login: a.login,
    id: a.id,
    node_id: nodeId(a.type, a.id),
    avatar_url: `https://avatars.githubusercontent.com/u/${a.id}?v=4`,
    type: a.type,
    site_admin: false,
  };
}

/** `GET /user`: the private-user schema is simple-user plus the profile fields. */
export function privateUser(hosts: Hosts, a: Account, createdAt: string): Json {
  return {
    ...simpleUser(hosts, a),
    name: a.name ?? null,
    company: null,
    blog: "",
    location: null,
    email: a.email ?? null,
    hireable: null,
    bio: null,
    twitter_username: null,
    public_repos: 0,
    public_gists: 0,
    followers: 0,
    following: 0,
    created_at: createdAt,
    updated_at: createdAt,
  };
}

export interface RepositoryRecord {
  id: number;
  owner: Account;
  name: string;
  private: boolean;
  description: string | null;
  defaultBranch: string;
  createdAt: string;
  pushedAt: string;
}

export function repository(hosts: Hosts, r: RepositoryRecord, permissions?: Json): Json {
  const t = templates.repository;
  const out = rehost(t, hosts, [
    [`${t.owner.login}/${t.name}`, `${r.owner.login}/${r.name}`],
    [`/users/${t.owner.login}`, `/users/${r.owner.login}`],
    [`/${t.owner.login}`, `/${r.owner.login}`],
  ]);
  // git:// and ssh URLs name github.com without a scheme; the stand-in serves git over HTTP only
  const host = new URL(hosts.web).host;
  Object.assign(out, {
    id: r.id,
    node_id: nodeId("Repository", r.id),
    name: r.name,
    full_name: `${r.owner.login}/${r.name}`,
    private: r.private,
    visibility: r.private ? "private" : "public",
    owner: simpleUser(hosts, r.owner),
    description: r.description,
    created_at: r.createdAt,
    updated_at: r.pushedAt,
    pushed_at: r.pushedAt,
    git_url: `git://${host}/${r.owner.login}/${r.name}.git`,
    ssh_url: `git@${host}:${r.owner.login}/${r.name}.git`,
    clone_url: `${hosts.web}/${r.owner.login}/${r.name}.git`,
    default_branch: r.defaultBranch,
    stargazers_count: 0,
    watchers_count: 0,
    watchers: 0,
    forks_count: 0,
    forks: 0,
    open_issues_count: 0,
    open_issues: 0,
    network_count: 0,
    subscribers_count: 0,
    topics: [],
  });
  if (r.owner.type === "Organization") out.organization = simpleUser(hosts, r.owner);
  else delete out.organization;
  if (permissions) out.permissions = permissions;
  else delete out.permissions;
  return out;
}

export interface AppRecord {
  id: number;
  slug: string;
  name: string;
  owner: Account;
  description: string | null;
  url: string;
  permissions: Record<string, string>;
  events: string[];
  createdAt: string;
}

/** The integration schema (`GET /app`, an installation's app). */
export function app(hosts: Hosts, a: AppRecord, clientId: string): Json {
  const t = templates.app;
  const out = rehost(t, hosts, [[`/apps/${t.slug ?? t.name}`, `/apps/${a.slug}`]]);
  return {
    ...out,
    id: a.id,
    slug: a.slug,
    client_id: clientId,
    node_id: nodeId("App", a.id),
    owner: simpleUser(hosts, a.owner),
    name: a.name,
    description: a.description ?? "",
    external_url: a.url,
    html_url: `${hosts.web}/apps/${a.slug}`,
    created_at: a.createdAt,
    updated_at: a.createdAt,
    permissions: a.permissions,
    events: a.events,
    installations_count: undefined,
  };
}

export interface InstallationRecord {
  id: number;
  app: AppRecord;
  account: Account;
  repositorySelection: "all" | "selected";
  permissions: Record<string, string>;
  events: string[];
  createdAt: string;
  suspendedAt: string | null;
}

export function installation(hosts: Hosts, i: InstallationRecord): Json {
  const out = rehost(templates.installation, hosts);
  return {
    ...out,
    id: i.id,
    account: simpleUser(hosts, i.account),
    repository_selection: i.repositorySelection,
    access_tokens_url: `${hosts.api}/app/installations/${i.id}/access_tokens`,
    repositories_url: `${hosts.api}/installation/repositories`,
    html_url:
      i.account.type === "Organization"
        ? `${hosts.web}/organizations/${i.account.login}/settings/installations/${i.id}`
        : `${hosts.web}/settings/installations/${i.id}`,
    app_id: i.app.id,
    app_slug: i.app.slug,
    target_id: i.account.id,
    target_type: i.account.type,
    permissions: i.permissions,
    events: i.events,
    // webhooks carry epoch seconds here; the REST API gives ISO times
    created_at: i.createdAt,
    updated_at: i.createdAt,
    single_file_name: null,
    has_multiple_single_files: false,
    single_file_paths: [],
    suspended_at: i.suspendedAt,
    suspended_by: null,
  };
}

export interface PullRecord {
  id: number;
  number: number;
  title: string;
  body: string | null;
  state: "open" | "closed";
  draft: boolean;
  head: string;
  headSha: string;
  base: string;
  baseSha: string;
  user: Account;
  createdAt: string;
  updatedAt: string;
  closedAt: string | null;
  mergedAt: string | null;
  mergeCommitSha: string | null;
}

export function pullRequest(hosts: Hosts, repo: RepositoryRecord, p: PullRecord): Json {
  const t = templates.pullRequest;
  const full = `${repo.owner.login}/${repo.name}`;
  const out = rehost(t, hosts, [
    [t.base.repo.full_name, full],
    [`/pull/${t.number}`, `/pull/${p.number}`],
    [`/pulls/${t.number}`, `/pulls/${p.number}`],
    [`/issues/${t.number}`, `/issues/${p.number}`],
    [t.head.sha, p.headSha],
  ]);
  const repoShape = repository(hosts, repo);
  const owner = simpleUser(hosts, repo.owner);
  const links = (href: string) => ({ href });
  return {
    ...out,
    id: p.id,
    node_id: nodeId("PullRequest", p.id),
    number: p.number,
    state: p.state,
    title: p.title,
    body: p.body,
    draft: p.draft,
    user: simpleUser(hosts, p.user),
    created_at: p.createdAt,
    updated_at: p.updatedAt,
    closed_at: p.closedAt,
    merged_at: p.mergedAt,
    merged: p.mergedAt !== null,
    mergeable: p.state === "open" ? true : null,
    merge_commit_sha: p.mergeCommitSha,
    statuses_url: `${hosts.api}/repos/${full}/statuses/${p.headSha}`,
    head: { label: `${repo.owner.login}:${p.head}`, ref: p.head, sha: p.headSha, user: owner, repo: repoShape },
    base: { label: `${repo.owner.login}:${p.base}`, ref: p.base, sha: p.baseSha, user: owner, repo: repoShape },
    _links: {
      self: links(`${hosts.api}/repos/${full}/pulls/${p.number}`),
      html: links(`${hosts.web}/${full}/pull/${p.number}`),
      issue: links(`${hosts.api}/repos/${full}/issues/${p.number}`),
      comments: links(`${hosts.api}/repos/${full}/issues/${p.number}/comments`),
      review_comments: links(`${hosts.api}/repos/${full}/pulls/${p.number}/comments`),
      review_comment: links(`${hosts.api}/repos/${full}/pulls/comments{/number}`),
      commits: links(`${hosts.api}/repos/${full}/pulls/${p.number}/commits`),
      statuses: links(`${hosts.api}/repos/${full}/statuses/${p.headSha}`),
    },
    author_association: "NONE",
    auto_merge: null,
    active_lock_reason: null,
  };
}

export interface ReviewRecord {
  id: number;
  pull: number;
  user: Account;
  body: string;
  state: "APPROVED" | "CHANGES_REQUESTED" | "COMMENTED" | "PENDING";
  commitId: string;
  submittedAt: string;
  comments: { path: string; body: string; line?: number; position?: number }[];
}

export function review(hosts: Hosts, repo: RepositoryRecord, r: ReviewRecord): Json {
  const full = `${repo.owner.login}/${repo.name}`;
  const out = rehost(templates.review, hosts);
  return {
    ...out,
    id: r.id,
    node_id: nodeId("PullRequestReview", r.id),
    user: simpleUser(hosts, r.user),
    body: r.body,
    commit_id: r.commitId,
    submitted_at: r.state === "PENDING" ? undefined : r.submittedAt,
    state: r.state,
    html_url: `${hosts.web}/${full}/pull/${r.pull}#pullrequestreview-${r.id}`,
    pull_request_url: `${hosts.api}/repos/${full}/pulls/${r.pull}`,
    author_association: "NONE",
    _links: {
      html: { href: `${hosts.web}/${full}/pull/${r.pull}#pullrequestreview-${r.id}` },
      pull_request: { href: `${hosts.api}/repos/${full}/pulls/${r.pull}` },
    },
  };
}

export interface CommentRecord {
  id: number;
  issue: number;
  user: Account;
  body: string;
  createdAt: string;
}

export function issueComment(hosts: Hosts, repo: RepositoryRecord, c: CommentRecord): Json {
  const full = `${repo.owner.login}/${repo.name}`;
  const out = rehost(templates.issueComment, hosts);
  return {
    ...out,
    id: c.id,
    node_id: nodeId("IssueComment", c.id),
    url: `${hosts.api}/repos/${full}/issues/comments/${c.id}`,
    html_url: `${hosts.web}/${full}/${"issues"}/${c.issue}#issuecomment-${c.id}`,
    issue_url: `${hosts.api}/repos/${full}/issues/${c.issue}`,
    user: simpleUser(hosts, c.user),
    created_at: c.createdAt,
    updated_at: c.createdAt,
    author_association: "NONE",
    body: c.body,
  };
}

/** A recorded webhook payload of `event`/`action`, rehosted: the caller fills in its objects. */
export function webhookTemplate(hosts: Hosts, event: string, action: string | null): Json {
  return rehost(example(event, action), hosts);
}
