// The API routes called with a token, an installation's or a person's: the installation's
// repositories, the person and their installations, creating repositories, and the routes on
// one repository (pull requests, reviews, comments). The app's own routes come first.
import * as shapes from "./shapes";
import type { Account, CommentRecord, PullRecord, ReviewRecord } from "./shapes";
import { refSha } from "./git-http";
import { answers, body } from "./answers";
import { appApi } from "./api-app";
import { now, type World } from "./world";

// ---- API: api.github.com -------------------------------------------------------------

export async function api(w: World, req: Request, p: string): Promise<Response> {
  const { json, error, badCredentials, notFound, notAccessible, validation, paged } = answers(w);
  const method = req.method;
  const auth = w.tokenFrom(req);
  const t = auth.token;
  let m: RegExpMatchArray | null;

  const forApp = await appApi(w, req, p, auth);
  if (forApp) return forApp;

  if (!t) return auth.given ? badCredentials() : requiresAuthentication(w, method, p);

  if (method === "GET" && p === "/installation/repositories") {
    const inst = w.installationFor(t);
    if (!inst || t.kind !== "installation") return error(403, "You must authenticate with an installation access token in order to list repositories for an installation.");
    const list = w.installationRepos(inst).filter((r) => !t.repositoryIds || t.repositoryIds.has(r.record.id));
    return paged(
      req,
      list.map((r) => shapes.repository(w.hosts, r.record)),
      (page) => ({ total_count: list.length, repository_selection: t.repositoryIds ? "selected" : inst.record.repositorySelection, repositories: page }),
    );
  }

  if (method === "GET" && p === "/user") {
    if (t.kind !== "user") return notAccessible();
    return json(200, shapes.privateUser(w.hosts, w.accounts.get(t.login.toLowerCase())!, w.apps.get(t.appId)!.record.createdAt));
  }
  if (method === "GET" && p === "/user/installations") {
    if (t.kind !== "user") return notAccessible();
    const list = [...w.installations.values()]
      .filter((i) => i.record.app.id === t.appId && (i.record.account.login === t.login || (i.record.account.members ?? []).includes(t.login)))
      .sort((x, y) => x.record.id - y.record.id);
    return paged(
      req,
      list.map((i) => shapes.installation(w.hosts, i.record)),
      (page) => ({ total_count: list.length, installations: page }),
    );
  }

  if (method === "POST" && (p === "/user/repos" || (m = p.match(/^\/orgs\/([^/]+)\/repos$/)))) {
    let owner: Account;
    if (p === "/user/repos") {
      if (t.kind !== "user") return notAccessible();
      owner = w.accounts.get(t.login.toLowerCase())!;
    } else {
      const org = w.accounts.get(decodeURIComponent(m![1]!).toLowerCase());
      if (!org || org.type !== "Organization") return notFound();
      if (t.kind === "installation") {
        const inst = w.installationFor(t);
        if (!inst || inst.record.account.login !== org.login) return notFound();
        if (t.permissions.administration !== "write") return notAccessible();
      } else if (!(org.members ?? []).includes(t.login)) return notFound();
      owner = org;
    }
    const b = (await body(req)) ?? {};
    const where = p === "/user/repos" ? "create-a-repository-for-the-authenticated-user" : "create-an-organization-repository";
    if (typeof b.name !== "string" || !b.name)
      return error(422, "Repository creation failed.", { errors: [{ resource: "Repository", code: "missing_field", field: "name" }], documentation_url: `https://docs.github.com/rest/repos/repos#${where}` });
    if (!/^[A-Za-z0-9._-]{1,100}$/.test(b.name))
      return error(422, "Repository creation failed.", { errors: [{ resource: "Repository", code: "custom", field: "name", message: "name is invalid" }], documentation_url: `https://docs.github.com/rest/repos/repos#${where}` });
    if (w.repos.has(w.repoKey(owner.login, b.name)))
      return error(422, "Repository creation failed.", {
        errors: [{ resource: "Repository", code: "custom", field: "name", message: "name already exists on this account" }],
        documentation_url: `https://docs.github.com/rest/repos/repos#${where}`,
      });
    const isPrivate = b.visibility ? b.visibility !== "public" : b.private === true || b.private === "true";
    const r = w.createRepository(owner.login, b.name, {
      private: isPrivate,
      description: typeof b.description === "string" ? b.description : undefined,
      files: b.auto_init ? { "README.md": `# ${b.name}\n${b.description ? `\n${b.description}\n` : ""}` } : undefined,
    });
    // a repository made through an app joins the app's installation on that account
    const joining = t.kind === "installation" ? [w.installationFor(t)!] : [...w.installations.values()].filter((i) => i.record.app.id === t.appId && i.record.account.login === owner.login);
    for (const inst of joining) inst.repositoryIds?.add(r.record.id);
    if (t.kind === "installation" && t.repositoryIds) t.repositoryIds.add(r.record.id);
    return json(201, shapes.repository(w.hosts, r.record, { admin: true, maintain: true, push: true, triage: true, pull: true }), {
      location: `${w.apiUrl}/repos/${owner.login}/${b.name}`,
    });
  }

  if ((m = p.match(/^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/))) {
    const r = w.repos.get(w.repoKey(decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)));
    if (!r) return notFound();
    const access = w.repoAccess(t, r);
    if (access === "none") return notFound();
    const rest = m[3] ?? "";
    const actor = t.kind === "user" ? w.accounts.get(t.login.toLowerCase())! : w.botAccount(w.installationFor(t)!);
    const canWrite = (perm: string) => (t.kind === "user" ? access === "write" : t.permissions[perm] === "write" && w.repoAccess(t, r) !== "none" && w.coveredBy(t, r));
    const pull = (n: string) => r.pulls.find((x) => x.number === Number(n));
    if (method === "GET" && rest === "") {
      const perms = access === "write" ? { admin: t.kind === "user", maintain: t.kind === "user", push: true, triage: true, pull: true } : { admin: false, maintain: false, push: false, triage: false, pull: true };
      return json(200, shapes.repository(w.hosts, r.record, perms));
    }
    if (method === "GET" && rest === "/pulls") {
      const state = new URL(req.url).searchParams.get("state") ?? "open";
      const list = r.pulls.filter((x) => state === "all" || x.state === state).sort((a, b) => b.number - a.number);
      return paged(req, list.map((x) => shapes.pullRequest(w.hosts, r.record, x)));
    }
    if (method === "POST" && rest === "/pulls") {
      if (!canWrite("pull_requests")) return notAccessible();
      const b = (await body(req)) ?? {};
      const missing = ["title", "head", "base"].filter((k) => typeof b[k] !== "string" || !b[k]);
      if (missing.length && !(missing.length === 1 && missing[0] === "title" && b.issue))
        return validation(missing.map((field) => ({ resource: "PullRequest", code: "missing_field", field })));
      const head = String(b.head).includes(":") ? String(b.head).split(":")[1]! : String(b.head);
      const headSha = refSha(r.dir, head);
      const baseSha = refSha(r.dir, b.base);
      if (!headSha) return validation([{ resource: "PullRequest", field: "head", code: "invalid" }]);
      if (!baseSha) return validation([{ resource: "PullRequest", field: "base", code: "invalid" }]);
      if (r.pulls.some((x) => x.state === "open" && x.head === head && x.base === b.base))
        return validation([{ resource: "PullRequest", code: "custom", message: `A pull request already exists for ${r.record.owner.login}:${head}.` }]);
      if (headSha === baseSha) return validation([{ resource: "PullRequest", code: "custom", message: `No commits between ${b.base} and ${head}` }]);
      const t0 = now();
      const pr: PullRecord = {
        id: w.id(),
        number: r.nextNumber++,
        title: b.title,
        body: typeof b.body === "string" ? b.body : null,
        state: "open",
        draft: b.draft === true,
        head,
        headSha,
        base: b.base,
        baseSha,
        user: actor,
        createdAt: t0,
        updatedAt: t0,
        closedAt: null,
        mergedAt: null,
        mergeCommitSha: null,
      };
      r.pulls.push(pr);
      return json(201, shapes.pullRequest(w.hosts, r.record, pr), { location: `${w.apiUrl}/repos/${r.record.owner.login}/${r.record.name}/pulls/${pr.number}` });
    }
    if ((m = rest.match(/^\/pulls\/(\d+)$/))) {
      const pr = pull(m[1]!);
      if (!pr) return notFound();
      if (method === "GET") {
        pr.headSha = refSha(r.dir, pr.head) ?? pr.headSha;
        return json(200, shapes.pullRequest(w.hosts, r.record, pr));
      }
      if (method === "PATCH") {
        if (!canWrite("pull_requests")) return notAccessible();
        const b = (await body(req)) ?? {};
        if (b.state !== undefined && b.state !== "open" && b.state !== "closed") return validation([{ resource: "PullRequest", code: "invalid", field: "state" }]);
        if (typeof b.title === "string") pr.title = b.title;
        if (typeof b.body === "string") pr.body = b.body;
        if (typeof b.base === "string") {
          const baseSha = refSha(r.dir, b.base);
          if (!baseSha) return validation([{ resource: "PullRequest", code: "invalid", field: "base" }]);
          pr.base = b.base;
          pr.baseSha = baseSha;
        }
        if (b.state && pr.mergedAt === null) {
          pr.state = b.state;
          pr.closedAt = b.state === "closed" ? now() : null;
        }
        pr.updatedAt = now();
        return json(200, shapes.pullRequest(w.hosts, r.record, pr));
      }
    }
    if (method === "POST" && (m = rest.match(/^\/pulls\/(\d+)\/reviews$/))) {
      const pr = pull(m[1]!);
      if (!pr) return notFound();
      if (!canWrite("pull_requests")) return notAccessible();
      const b = (await body(req)) ?? {};
      const states: Record<string, ReviewRecord["state"]> = { APPROVE: "APPROVED", REQUEST_CHANGES: "CHANGES_REQUESTED", COMMENT: "COMMENTED" };
      if (b.event !== undefined && !states[b.event]) return validation([{ resource: "PullRequestReview", code: "invalid", field: "event" }], "Unprocessable Entity");
      if ((b.event === "REQUEST_CHANGES" || b.event === "COMMENT") && !b.body && !(b.comments ?? []).length)
        return error(422, "Unprocessable Entity", { errors: [`Body is required when using ${b.event} event`.replace("REQUEST_CHANGES", "REQUEST_CHANGES")] });
      const rv: ReviewRecord = {
        id: w.id(),
        pull: pr.number,
        user: actor,
        body: typeof b.body === "string" ? b.body : "",
        state: b.event ? states[b.event]! : "PENDING",
        commitId: typeof b.commit_id === "string" ? b.commit_id : pr.headSha,
        submittedAt: now(),
        comments: Array.isArray(b.comments) ? b.comments : [],
      };
      r.reviews.push(rv);
      return json(200, shapes.review(w.hosts, r.record, rv));
    }
    if (method === "POST" && (m = rest.match(/^\/issues\/(\d+)\/comments$/))) {
      const n = Number(m[1]!);
      if (!pull(m[1]!)) return notFound();
      if (!(canWrite("issues") || canWrite("pull_requests"))) return notAccessible();
      const b = (await body(req)) ?? {};
      if (typeof b.body !== "string" || !b.body) return validation([{ resource: "IssueComment", code: "missing_field", field: "body" }]);
      const c: CommentRecord = { id: w.id(), issue: n, user: actor, body: b.body, createdAt: now() };
      r.comments.push(c);
      return json(201, shapes.issueComment(w.hosts, r.record, c), { location: `${w.apiUrl}/repos/${r.record.owner.login}/${r.record.name}/issues/comments/${c.id}` });
    }
    return notFound();
  }
  return notFound();
}

function requiresAuthentication(w: World, method: string, p: string) {
  const { json, error, notFound } = answers(w);
  // public repositories can be read without a token; everything else needs one
  const m = p.match(/^\/repos\/([^/]+)\/([^/]+)$/);
  if (method === "GET" && m) {
    const r = w.repos.get(w.repoKey(decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)));
    if (r && !r.record.private) return json(200, shapes.repository(w.hosts, r.record));
    return notFound();
  }
  return error(401, "Requires authentication");
}
