// The GitHub stand-in driven by GitHub's own clients (@octokit/app, @octokit/rest,
// @octokit/oauth-app) and by real git: if they accept its answers, so will ao's code.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync, createSign } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { App } from "@octokit/app";
import { OAuthApp } from "@octokit/oauth-app";
import { Octokit } from "@octokit/rest";
import { verify } from "@octokit/webhooks-methods";
import { startGitHubStandIn, type GitHubStandIn } from "../helpers/github-standin";

let gh: GitHubStandIn;
let work: string;
let GHOctokit: typeof Octokit;
// what the manifest conversion handed back
let created: any;
let app: ReturnType<typeof makeApp>;

/** An App as ao makes one: @octokit/app signing JWTs, talking to the stand-in's API. */
function makeApp(privateKey: string) {
  return new App({ appId: created.id, privateKey, Octokit: GHOctokit, oauth: { clientId: created.client_id, clientSecret: created.client_secret } });
}
let installationId: number;

const redirect = "http://127.0.0.1:9/codehost/app/callback";
const manifest = {
  name: "ao test",
  url: "http://127.0.0.1:9",
  hook_attributes: { url: "http://127.0.0.1:9/api/v1/hooks/x", active: false },
  redirect_url: redirect,
  callback_urls: ["http://127.0.0.1:9/api/v1/codehost/user/callback"],
  setup_url: "http://127.0.0.1:9/api/v1/codehost/installations/callback",
  public: true,
  default_permissions: { contents: "write", pull_requests: "write", issues: "write", metadata: "read", administration: "write" },
  default_events: ["issues", "issue_comment", "pull_request"],
};

/** Runs a command without blocking: the stand-in answering git lives in this same process. */
async function run(cwd: string, cmd: string[], env: Record<string, string> = {}) {
  const r = Bun.spawn(cmd, {
    cwd,
    env: { ...process.env, GIT_TERMINAL_PROMPT: "0", GIT_AUTHOR_NAME: "T", GIT_AUTHOR_EMAIL: "t@t.invalid", GIT_COMMITTER_NAME: "T", GIT_COMMITTER_EMAIL: "t@t.invalid", ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(r.stdout).text(), new Response(r.stderr).text(), r.exited]);
  return { code, out: out.trim(), err };
}

/** git with an installation token in the environment only, as GitHub documents it for apps. */
function tokenEnv(token: string): Record<string, string> {
  return {
    GIT_CONFIG_COUNT: "1",
    GIT_CONFIG_KEY_0: "http.extraHeader",
    GIT_CONFIG_VALUE_0: `Authorization: Basic ${Buffer.from(`x-access-token:${token}`).toString("base64")}`,
  };
}

async function manifestCode(state: string, path = "/settings/apps/new", m: object = manifest) {
  const form = new FormData();
  form.set("manifest", JSON.stringify(m));
  const res = await fetch(`${gh.url}${path}?state=${state}`, { method: "POST", body: form, redirect: "manual" });
  return res;
}

beforeAll(async () => {
  gh = await startGitHubStandIn();
  work = mkdtempSync(join(tmpdir(), "gh-standin-test-"));
  GHOctokit = Octokit.defaults({ baseUrl: gh.apiUrl });
  const res = await manifestCode("st-1");
  const location = new URL(res.headers.get("location")!);
  created = (await new GHOctokit().request("POST /app-manifests/{code}/conversions", { code: location.searchParams.get("code")! })).data;
  app = makeApp(created.pem);
  const { installation } = await gh.install(created.slug, "acme", { repositories: 150, type: "Organization" });
  installationId = installation.record.id;
});

afterAll(async () => {
  await gh.close();
  rmSync(work, { recursive: true, force: true });
});

describe("the manifest flow", () => {
  test("POST /settings/apps/new redirects to the manifest's redirect_url with a code and the state", async () => {
    const res = await manifestCode("st-2", "/organizations/acme-two/settings/apps/new", { ...manifest, name: "ao org app" });
    expect(res.status).toBe(302);
    const to = new URL(res.headers.get("location")!);
    expect(to.origin + to.pathname).toBe(redirect);
    expect(to.searchParams.get("state")).toBe("st-2");
    const conv = await new GHOctokit().request("POST /app-manifests/{code}/conversions", { code: to.searchParams.get("code")! });
    expect(conv.status).toBe(201);
    expect((conv.data.owner as any).login).toBe("acme-two");
    expect((conv.data.owner as any).type).toBe("Organization");
    // each code converts once
    const again = await new GHOctokit().request("POST /app-manifests/{code}/conversions", { code: to.searchParams.get("code")! }).catch((e) => e);
    expect(again.status).toBe(404);
  });

  test("the conversion hands back GitHub's fields and a real RSA key", () => {
    expect(created.slug).toBe("ao-test");
    expect(created.name).toBe("ao test");
    expect(created.html_url).toBe(`${gh.url}/apps/ao-test`);
    expect(created.pem).toStartWith("-----BEGIN RSA PRIVATE KEY-----");
    expect(created.webhook_secret).toMatch(/^[0-9a-f]{40}$/);
    expect(created.client_id).toStartWith("Iv1.");
    expect(created.permissions.pull_requests).toBe("write");
    expect(created.events).toEqual(manifest.default_events);
  });

  test("a manifest with no url or bad JSON is refused, and a taken name", async () => {
    expect((await manifestCode("x", "/settings/apps/new", { name: "no url" })).status).toBe(422);
    const form = new FormData();
    form.set("manifest", "{not json");
    expect((await fetch(`${gh.url}/settings/apps/new`, { method: "POST", body: form, redirect: "manual" })).status).toBe(422);
    expect((await manifestCode("x")).status).toBe(422);
  });
});

describe("app JWTs and installation tokens", () => {
  test("GET /app with the app's JWT (signed by @octokit/auth-app)", async () => {
    const { data } = await app.octokit.request("GET /app");
    expect(data!.id).toBe(created.id);
    expect(data!.slug).toBe("ao-test");
  });

  test("a JWT signed with another key, expired or too long-lived is 401 with GitHub's message", async () => {
    const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const other = makeApp(privateKey.export({ type: "pkcs1", format: "pem" }).toString());
    const e1 = await other.octokit.request("GET /app").catch((e) => e);
    expect(e1.status).toBe(401);
    expect(e1.response.data.message).toBe("A JSON web token could not be decoded");

    const jwt = (claims: object) => {
      const h = Buffer.from(JSON.stringify({ alg: "RS256", typ: "JWT" })).toString("base64url");
      const c = Buffer.from(JSON.stringify(claims)).toString("base64url");
      const s = createSign("RSA-SHA256").update(`${h}.${c}`).sign(created.pem).toString("base64url");
      return `${h}.${c}.${s}`;
    };
    const nowS = Math.floor(Date.now() / 1000);
    const call = (token: string) => new GHOctokit({ auth: token }).request("GET /app").catch((e) => e);
    const expired = await call(jwt({ iat: nowS - 700, exp: nowS - 60, iss: created.id }));
    expect(expired.status).toBe(401);
    expect(expired.response.data.message).toContain("'Expiration time' claim ('exp')");
    const tooLong = await call(jwt({ iat: nowS, exp: nowS + 3600, iss: created.id }));
    expect(tooLong.status).toBe(401);
    expect(tooLong.response.data.message).toBe("'Expiration time' claim ('exp') is too far in the future");
    const ok = await call(jwt({ iat: nowS - 30, exp: nowS + 540, iss: created.id }));
    expect(ok.status).toBe(200);
    // an installation token is not an app JWT
    const token = gh.mintToken(installationId);
    expect((await call(token)).status).toBe(401);
  });

  test("installations are listed and an installation's 150 repositories come in pages with Link headers", async () => {
    const installs = await app.octokit.paginate("GET /app/installations");
    expect(installs.map((i: any) => i.id)).toContain(installationId);
    const inst = installs.find((i: any) => i.id === installationId) as any;
    expect(inst.account.login).toBe("acme");
    expect(inst.target_type).toBe("Organization");
    expect(inst.app_slug).toBe("ao-test");

    const octokit = await app.getInstallationOctokit(installationId);
    const first = await octokit.request("GET /installation/repositories", { per_page: 100 });
    expect(first.data.total_count).toBe(150);
    expect(first.data.repositories).toHaveLength(100);
    expect(first.headers.link).toContain('rel="next"');
    expect(first.headers.link).toContain("page=2");
    const all = await octokit.paginate("GET /installation/repositories", { per_page: 100 });
    expect(all).toHaveLength(150);
    expect(new Set(all.map((r: any) => r.full_name)).size).toBe(150);
    expect(all[0]!.clone_url).toBe(`${gh.url}/acme/repo-001.git`);
    // per_page is capped at 100 as on GitHub
    const capped = await octokit.request("GET /installation/repositories", { per_page: 500 });
    expect(capped.data.repositories).toHaveLength(100);
  });

  test("a token narrowed to one repository and fewer permissions sees only that", async () => {
    const { data } = await app.octokit.request("POST /app/installations/{installation_id}/access_tokens", {
      installation_id: installationId,
      repositories: ["repo-007"],
      permissions: { contents: "read", metadata: "read" },
    });
    expect(data.token).toStartWith("ghs_");
    expect(data.repositories!.map((r) => r.name)).toEqual(["repo-007"]);
    expect(new Date(data.expires_at).getTime()).toBeGreaterThan(Date.now() + 3000_000);
    const o = new GHOctokit({ auth: data.token });
    const list = await o.paginate("GET /installation/repositories");
    expect(list.map((r: any) => r.name)).toEqual(["repo-007"]);
    expect((await o.request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "repo-008" }).catch((e) => e)).status).toBe(404);
    // contents read cannot open pull requests
    const pr = await o.request("POST /repos/{owner}/{repo}/pulls", { owner: "acme", repo: "repo-007", title: "x", head: "main", base: "main" }).catch((e) => e);
    expect(pr.status).toBe(403);
    expect(pr.response.data.message).toBe("Resource not accessible by integration");
    // more than the installation has is refused
    const wider = await app.octokit.request("POST /app/installations/{installation_id}/access_tokens", { installation_id: installationId, permissions: { members: "write" } }).catch((e) => e);
    expect(wider.status).toBe(422);
    const elsewhere = await app.octokit.request("POST /app/installations/{installation_id}/access_tokens", { installation_id: installationId, repositories: ["nope"] }).catch((e) => e);
    expect(elsewhere.status).toBe(422);
  });

  test("unknown and expired tokens get 401 Bad credentials", async () => {
    const bad = await new GHOctokit({ auth: "ghs_nonsense" }).request("GET /installation/repositories").catch((e) => e);
    expect(bad.status).toBe(401);
    expect(bad.response.data.message).toBe("Bad credentials");
    const token = gh.mintToken(installationId);
    expect((await new GHOctokit({ auth: token }).request("GET /installation/repositories")).status).toBe(200);
    gh.expireTokens();
    const expired = await new GHOctokit({ auth: token }).request("GET /installation/repositories").catch((e) => e);
    expect(expired.status).toBe(401);
    // a fresh token works again
    const fresh = (await app.octokit.request("POST /app/installations/{installation_id}/access_tokens", { installation_id: installationId })).data.token;
    expect((await new GHOctokit({ auth: fresh }).request("GET /installation/repositories")).status).toBe(200);
  });
});

describe("faults", () => {
  test("5xx for the next answers, then normal", async () => {
    const o = new GHOctokit({ auth: gh.mintToken(installationId) });
    gh.failNext(2, 503);
    expect((await o.request("GET /installation/repositories").catch((e) => e)).status).toBe(503);
    expect((await o.request("GET /installation/repositories").catch((e) => e)).status).toBe(503);
    expect((await o.request("GET /installation/repositories")).status).toBe(200);
  });

  test("rate limits carry x-ratelimit-remaining: 0, the reset time and retry-after", async () => {
    const o = new GHOctokit({ auth: gh.mintToken(installationId) });
    gh.rateLimitNext(1, { status: 403, resetInSeconds: 30 });
    const e = await o.request("GET /installation/repositories").catch((e) => e);
    expect(e.status).toBe(403);
    expect(e.response.headers["x-ratelimit-remaining"]).toBe("0");
    const reset = Number(e.response.headers["x-ratelimit-reset"]);
    expect(reset).toBeGreaterThan(Date.now() / 1000 + 20);
    expect(e.response.data.message).toContain("rate limit");
    gh.rateLimitNext(1, { status: 429, retryAfterSeconds: 5 });
    const s = await o.request("GET /installation/repositories").catch((e) => e);
    expect(s.status).toBe(429);
    expect(s.response.headers["retry-after"]).toBe("5");
    expect((await o.request("GET /installation/repositories")).status).toBe(200);
    expect(gh.requests.slice(-3).map((r) => r.status)).toEqual([403, 429, 200]);
  });
});

describe("the installation flow and the person's connection", () => {
  test("installations/new keeps the state and install redirects to the setup URL with it", async () => {
    const page = await fetch(`${gh.url}/apps/ao-test/installations/new?state=inst-state-1`);
    expect(page.status).toBe(200);
    const { installation, setupRedirect } = await gh.install("ao-test", "octocat", { type: "User", repositories: ["dotfiles"] });
    const to = new URL(setupRedirect!);
    expect(to.origin + to.pathname).toBe(manifest.setup_url);
    expect(to.searchParams.get("installation_id")).toBe(String(installation.record.id));
    expect(to.searchParams.get("setup_action")).toBe("install");
    expect(to.searchParams.get("state")).toBe("inst-state-1");
  });

  test("the OAuth web flow through @octokit/oauth-app, then GET /user and /user/installations", async () => {
    const oauth = new OAuthApp({ clientType: "github-app", clientId: created.client_id, clientSecret: created.client_secret, Octokit: GHOctokit as any });
    const { url } = oauth.getWebFlowAuthorizationUrl({ state: "u-state", redirectUrl: manifest.callback_urls[0] });
    expect(url).toStartWith(`${gh.url}/login/oauth/authorize?`);
    const res = await fetch(url, { redirect: "manual" });
    expect(res.status).toBe(302);
    const back = new URL(res.headers.get("location")!);
    expect(back.searchParams.get("state")).toBe("u-state");
    const code = back.searchParams.get("code")!;
    const { authentication } = await oauth.createToken({ code });
    expect(authentication.token).toStartWith("ghu_");
    const user = new GHOctokit({ auth: authentication.token });
    expect((await user.request("GET /user")).data.login).toBe("octocat");
    const installs = await user.paginate("GET /user/installations");
    expect(installs.map((i: any) => i.account.login).sort()).toEqual(["acme", "octocat"]);
    // a code is single use; a wrong secret is refused
    expect(await oauth.createToken({ code }).catch((e) => e.message)).toContain("bad_verification_code");
    const wrong = new OAuthApp({ clientType: "github-app", clientId: created.client_id, clientSecret: "nope", Octokit: GHOctokit as any });
    const res2 = await fetch(oauth.getWebFlowAuthorizationUrl({ state: "s" }).url, { redirect: "manual" });
    const code2 = new URL(res2.headers.get("location")!).searchParams.get("code")!;
    expect(await wrong.createToken({ code: code2 }).catch((e) => e.message)).toContain("incorrect_client_credentials");
    // a redirect_uri on another host comes back as redirect_uri_mismatch
    const res3 = await fetch(oauth.getWebFlowAuthorizationUrl({ state: "s3", redirectUrl: "http://evil.invalid/cb" }).url, { redirect: "manual" });
    expect(new URL(res3.headers.get("location")!).searchParams.get("error")).toBe("redirect_uri_mismatch");
  });
});

describe("repositories, pull requests, reviews and comments", () => {
  test("an installation creates an organization repository; duplicates are 422; /user/repos needs a user token", async () => {
    // a new App: the earlier expireTokens() voided the tokens @octokit/auth-app has cached
    const fresh = makeApp(created.pem);
    const octokit = await fresh.getInstallationOctokit(installationId);
    const { data, status } = await octokit.request("POST /orgs/{org}/repos", { org: "acme", name: "made-by-ao", private: true, auto_init: true, description: "from a test" });
    expect(status).toBe(201);
    expect(data.full_name).toBe("acme/made-by-ao");
    expect(data.private).toBe(true);
    expect(data.default_branch).toBe("main");
    expect(gh.repository("acme", "made-by-ao")).toBeDefined();
    const dup = await octokit.request("POST /orgs/{org}/repos", { org: "acme", name: "made-by-ao" }).catch((e) => e);
    expect(dup.status).toBe(422);
    expect(dup.response.data.errors[0].message).toBe("name already exists on this account");
    const asInstallation = await octokit.request("POST /user/repos", { name: "mine" }).catch((e) => e);
    expect(asInstallation.status).toBe(403);
    const other = await octokit.request("POST /orgs/{org}/repos", { org: "acme-two", name: "x" }).catch((e) => e);
    expect(other.status).toBe(404);
  });

  test("real git clones with the token, pushes a branch, and a pull request is opened, reviewed, commented, closed", async () => {
    const token = gh.mintToken(installationId, { repositories: ["made-by-ao"] });
    const repo = (await new GHOctokit({ auth: token }).request("GET /repos/{owner}/{repo}", { owner: "acme", repo: "made-by-ao" })).data;
    const dir = join(work, "clone");
    // no token: GitHub asks for credentials
    const anon = await run(work, ["git", "clone", "--quiet", repo.clone_url, join(work, "anon")]);
    expect(anon.code).not.toBe(0);
    const clone = await run(work, ["git", "clone", "--quiet", repo.clone_url, dir], tokenEnv(token));
    expect(clone.err).toBe("");
    expect(clone.code).toBe(0);
    writeFileSync(join(dir, "hello.txt"), "hi\n");
    await run(dir, ["git", "checkout", "-q", "-b", "ao/task-1"]);
    await run(dir, ["git", "add", "-A"]);
    await run(dir, ["git", "commit", "-q", "-m", "Say hi"]);
    const push = await run(dir, ["git", "push", "-q", "origin", "ao/task-1"], tokenEnv(token));
    expect(push.code).toBe(0);
    const bare = gh.repository("acme", "made-by-ao")!.dir;
    expect((await run(bare, ["git", "log", "--format=%s", "ao/task-1"])).out.split("\n")[0]).toBe("Say hi");

    const o = new GHOctokit({ auth: token });
    const pr = await o.rest.pulls.create({ owner: "acme", repo: "made-by-ao", title: "Say hi", head: "ao/task-1", base: "main", body: "from ao", draft: true });
    expect(pr.status).toBe(201);
    expect(pr.data.number).toBe(1);
    expect(pr.data.draft).toBe(true);
    expect(pr.data.head.ref).toBe("ao/task-1");
    expect(pr.data.head.sha).toBe((await run(bare, ["git", "rev-parse", "ao/task-1"])).out);
    expect(pr.data.html_url).toBe(`${gh.url}/acme/made-by-ao/pull/1`);
    expect(pr.data.user!.login).toBe("ao-test[bot]");
    const again = await o.rest.pulls.create({ owner: "acme", repo: "made-by-ao", title: "x", head: "ao/task-1", base: "main" }).catch((e) => e);
    expect(again.status).toBe(422);
    const noBranch = await o.rest.pulls.create({ owner: "acme", repo: "made-by-ao", title: "x", head: "nope", base: "main" }).catch((e) => e);
    expect(noBranch.status).toBe(422);

    const review = await o.rest.pulls.createReview({ owner: "acme", repo: "made-by-ao", pull_number: 1, body: "Looks fine", event: "COMMENT" });
    expect(review.data.state).toBe("COMMENTED");
    expect(review.data.html_url).toContain("/acme/made-by-ao/pull/1#pullrequestreview-");
    const comment = await o.rest.issues.createComment({ owner: "acme", repo: "made-by-ao", issue_number: 1, body: "a note" });
    expect(comment.status).toBe(201);
    expect(gh.repository("acme", "made-by-ao")!.reviews[0]!.body).toBe("Looks fine");
    expect(gh.repository("acme", "made-by-ao")!.comments[0]!.body).toBe("a note");
    const closed = await o.rest.pulls.update({ owner: "acme", repo: "made-by-ao", pull_number: 1, state: "closed" });
    expect(closed.data.state).toBe("closed");
    expect((await o.rest.pulls.get({ owner: "acme", repo: "made-by-ao", pull_number: 1 })).data.merged).toBe(false);

    // expired token: git is told to authenticate again
    gh.expireTokens();
    writeFileSync(join(dir, "more.txt"), "more\n");
    await run(dir, ["git", "add", "-A"]);
    await run(dir, ["git", "commit", "-q", "-m", "More"]);
    const late = await run(dir, ["git", "push", "-q", "origin", "ao/task-1"], tokenEnv(token));
    expect(late.code).not.toBe(0);
    expect(late.err).toMatch(/Authentication failed|could not read Username/);
    // a read-only token cannot push
    const readOnly = gh.mintToken(installationId, { permissions: { contents: "read", metadata: "read" } });
    const denied = await run(dir, ["git", "push", "-q", "origin", "ao/task-1"], tokenEnv(readOnly));
    expect(denied.code).not.toBe(0);
    expect(denied.err).toContain("403");
    expect((await run(bare, ["git", "log", "-1", "--format=%s", "ao/task-1"])).out).toBe("Say hi");
  });

  test("merge and a signed pull_request closed webhook built from the recorded example", async () => {
    const token = gh.mintToken(installationId);
    const o = new GHOctokit({ auth: token });
    const pr = await o.rest.pulls.update({ owner: "acme", repo: "made-by-ao", pull_number: 1, state: "open" });
    expect(pr.data.state).toBe("open");
    gh.merge("acme", "made-by-ao", 1);
    const got = (await o.rest.pulls.get({ owner: "acme", repo: "made-by-ao", pull_number: 1 })).data;
    expect(got.merged).toBe(true);
    expect(got.state).toBe("closed");

    const received: { headers: Headers; body: string }[] = [];
    const hook = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(req) {
        received.push({ headers: req.headers, body: await req.text() });
        return new Response(null, { status: 202 });
      },
    });
    try {
      const payload = gh.payloads.pullRequest("acme", "made-by-ao", 1, "closed");
      const d = await gh.deliver(`http://127.0.0.1:${hook.port}/hook`, "pull_request", payload, { app: "ao-test" });
      expect(d.status).toBe(202);
      const r = received[0]!;
      expect(r.headers.get("x-github-event")).toBe("pull_request");
      expect(r.headers.get("x-github-hook-installation-target-id")).toBe(String(created.id));
      expect(await verify(created.webhook_secret, r.body, r.headers.get("x-hub-signature-256")!)).toBe(true);
      expect(await verify("another secret", r.body, r.headers.get("x-hub-signature-256")!)).toBe(false);
      const body = JSON.parse(r.body);
      expect(body.action).toBe("closed");
      expect(body.pull_request.merged).toBe(true);
      expect(body.pull_request.head.ref).toBe("ao/task-1");
      expect(body.installation.id).toBe(installationId);
      expect(body.repository.full_name).toBe("acme/made-by-ao");

      const inst = gh.payloads.installation(installationId, "created");
      expect(inst.installation.account.login).toBe("acme");
      expect(inst.repositories.length).toBeGreaterThan(100);
    } finally {
      await hook.stop(true);
    }
  });
});
