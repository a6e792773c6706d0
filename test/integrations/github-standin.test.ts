// The GitHub stand-in driven by GitHub's own clients (@octokit/app, @octokit/rest,
// @octokit/oauth-app): the manifest flow, app JWTs and installation tokens, faults, the
// installation flow and a person's connection. If they accept its answers, so will ao's code.
// Repositories, pull requests and real git against it: github-standin-git.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { generateKeyPairSync, createSign } from "node:crypto";
import { OAuthApp } from "@octokit/oauth-app";
import type { Octokit } from "@octokit/rest";
import type { GitHubStandIn } from "../helpers/github-standin";
import { manifest, redirect, startStandInWithApp, type OctokitApp, type StandInWithApp } from "./github-standin-fixtures";

let gh: GitHubStandIn, GHOctokit: typeof Octokit, created: any, app: OctokitApp, installationId: number;
let makeApp: StandInWithApp["makeApp"], manifestCode: StandInWithApp["manifestCode"];
beforeAll(async () => ({ gh, GHOctokit, created, app, installationId, makeApp, manifestCode } = await startStandInWithApp()));
afterAll(() => gh.close());

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

  test("an app finds its installation on a repository, an organization or a user", async () => {
    const onRepo = await app.octokit.request("GET /repos/{owner}/{repo}/installation", { owner: "acme", repo: "repo-042" });
    expect(onRepo.data.id).toBe(installationId);
    expect((await app.octokit.request("GET /orgs/{org}/installation", { org: "acme" })).data.id).toBe(installationId);
    expect((await app.octokit.request("GET /repos/{owner}/{repo}/installation", { owner: "acme", repo: "nope" }).catch((e) => e)).status).toBe(404);
    expect((await app.octokit.request("GET /users/{username}/installation", { username: "nobody" }).catch((e) => e)).status).toBe(404);
    // an installation token is not the app's JWT
    const asInstallation = await new GHOctokit({ auth: gh.mintToken(installationId) }).request("GET /orgs/{org}/installation", { org: "acme" }).catch((e) => e);
    expect(asInstallation.status).toBe(401);
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
