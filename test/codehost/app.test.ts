// The code-hosting app against the GitHub stand-in (real HTTP on loopback): the app made from
// ao's manifest, installed, synced over every page, the person's own connection; and the bad
// paths: states replayed or wrong, installations bound by whom they belong to, tokens expired
// early, rate limits, bad signatures, roles and other organizations on every route. The app at
// work for tasks (repositories, real git, pull requests, webhooks): tasks.test.ts.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { TestServer } from "../helpers/server";
import { addMember, newOrg, type Session } from "../helpers/identity";
import type { GitHubStandIn } from "../helpers/github-standin";
import { get } from "../../src/db/query";
import { startCodehost, visit, type Codehost } from "./app-fixtures";

let gh: GitHubStandIn, s: TestServer, owner: Session;
let org: Codehost["org"], api: Codehost["api"], connectGithub: Codehost["connectGithub"], stop: Codehost["stop"];
beforeAll(async () => ({ gh, s, owner, org, api, connectGithub, stop } = await startCodehost()));
afterAll(() => stop?.());

let hookUrl: string;
let slug: string;

describe("before the app exists", () => {
  test("GET codehost shows no app; installations, user and sync answer 409 no_app", async () => {
    const r = await api("GET", `${org()}/codehost`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ app: null, installations: [], connection: null, githubUrl: gh.url });
    for (const path of ["installations", "user", "sync"]) {
      const x = await api("POST", `${org()}/codehost/${path}`);
      expect({ path, status: x.status, reason: x.body.error.details?.reason }).toEqual({ path, status: 409, reason: "no_app" });
    }
  });
});

describe("the app, from ao's manifest", () => {
  test("manifest -> GitHub -> callback stores the app sealed; the state is single use", async () => {
    const r = await api("POST", `${org()}/codehost/app/manifest`, { name: "ao test app" });
    expect(r.status).toBe(200);
    const { url, manifest, state } = r.body;
    expect(url).toBe(`${gh.url}/settings/apps/new?state=${state}`);
    expect(manifest.redirect_url).toBe(`${s.url}/api/v1/codehost/app/callback`);
    expect(manifest.setup_url).toBe(`${s.url}/api/v1/codehost/installations/callback`);
    expect(manifest.callback_urls).toEqual([`${s.url}/api/v1/codehost/user/callback`]);
    expect(manifest.default_permissions).toEqual({ contents: "write", pull_requests: "write", issues: "write", metadata: "read", administration: "write" });
    expect(manifest.default_events).toEqual(["issues", "issue_comment", "pull_request", "installation", "installation_repositories"]);
    expect(manifest.public).toBe(false);
    hookUrl = manifest.hook_attributes.url;
    expect(hookUrl).toMatch(new RegExp(`^${s.url}/api/v1/hooks/int_`));

    // The browser posts the manifest; GitHub redirects back with a code and the state.
    const made = await visit(url, { method: "POST", body: new URLSearchParams({ manifest: JSON.stringify(manifest) }) });
    expect(made.status).toBe(302);
    expect(made.location!.startsWith(`${s.url}/api/v1/codehost/app/callback?code=`)).toBe(true);
    const back = await visit(made.location!);
    expect(back.status).toBe(302);
    slug = gh.app("ao-test-app").record.slug;
    expect(back.location).toBe(`${s.url}/github?app=${slug}`);

    // Replaying the same callback: the state is spent.
    const replay = await visit(made.location!);
    expect(replay.status).toBe(400);
    expect(JSON.parse(replay.body).error.code).toBe("invalid_state");

    const status = await api("GET", `${org()}/codehost`);
    expect(status.body.app).toMatchObject({ slug, name: "ao test app", ownedByThisOrg: true });
    // Sealed at rest: neither the key nor the secrets are in the database in clear.
    const row = (await s.core.store.read(get<any>("SELECT * FROM codehost_apps")))!;
    const standin = gh.app(slug);
    const dump = JSON.stringify(row);
    for (const secret of [standin.pem, standin.clientSecret, standin.webhookSecret]) expect(dump.includes(secret)).toBe(false);
    expect(row.private_key_sealed.startsWith("v1.")).toBe(true);
    // A second app is refused: one per server.
    expect((await api("POST", `${org()}/codehost/app/manifest`, {})).status).toBe(409);
  });

  test("a wrong state, a missing one, or another flow's state is refused and changes nothing", async () => {
    for (const q of ["?code=x&state=nope", "?code=x"]) {
      const r = await visit(`${s.url}/api/v1/codehost/app/callback${q}`);
      expect(r.status).toBe(400);
    }
    const user = await api("POST", `${org()}/codehost/user`);
    const r = await visit(`${s.url}/api/v1/codehost/app/callback?code=x&state=${user.body.state}`);
    expect(r.status).toBe(400);
    expect(JSON.parse(r.body).error.code).toBe("invalid_state");
    expect((await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM codehost_apps")))!.n).toBe(1);
  });

  test("the app's webhooks: signed with its secret they are heard, with another secret 401", async () => {
    const ping = await gh.deliver(hookUrl, "ping", { zen: "hi", hook_id: 1 });
    expect(ping.status).toBe(200);
    expect(JSON.parse(ping.body)).toEqual({ status: "pong" });
    const forged = await gh.deliver(hookUrl, "ping", { zen: "hi" }, { secret: "not-the-apps-secret" });
    expect(forged.status).toBe(401);
    // The app's integration cannot be deleted from under it.
    const integrationId = hookUrl.split("/").at(-1);
    const del = await api("DELETE", `${org()}/integrations/${integrationId}`);
    expect(del.status).toBe(409);
    expect((await api("GET", `${org()}/integrations/${integrationId}`)).body).toMatchObject({ kind: "github", name: "GitHub app" });
    // Nor can its secret be rotated: GitHub keeps signing with the app's, so every webhook would be refused.
    const before = (await api("GET", `${org()}/integrations/${integrationId}`)).body;
    const rotate = await api("POST", `${org()}/integrations/${integrationId}/rotate-secret`);
    expect(rotate.status).toBe(409);
    expect(rotate.body.error).toMatchObject({ code: "conflict", message: expect.stringContaining("GitHub app's webhooks") });
    expect(rotate.body.secret).toBeUndefined();
    expect((await api("GET", `${org()}/integrations/${integrationId}`)).body).toEqual(before);
    expect((await gh.deliver(hookUrl, "ping", { zen: "still", hook_id: 1 })).status).toBe(200);
  });
});

let installationId: number;

const callback = (installation: number, state: string) => visit(`${s.url}/api/v1/codehost/installations/callback?installation_id=${installation}&setup_action=install&state=${state}`);
const boundTo = async (installation: number) =>
  (await s.core.store.read(get<{ org_id: string }>("SELECT org_id FROM codehost_installations WHERE id = ?", installation)))?.org_id ?? null;

describe("installations and sync", () => {
  test("install on an organization with 130 repositories: the setup callback connects it and syncs every page", async () => {
    // The setup callback checks the installation against the person's own connection.
    await connectGithub(owner, "octo-admin");
    const link = await api("POST", `${org()}/codehost/installations`);
    expect(link.status).toBe(200);
    expect(link.body.url).toBe(`${gh.url}/apps/${slug}/installations/new?state=${link.body.state}`);
    expect((await visit(link.body.url)).status).toBe(200);
    const done = await gh.install(slug, "acme", { type: "Organization", repositories: 130 });
    installationId = done.installation.record.id;
    const back = await visit(done.setupRedirect!);
    expect(back.status).toBe(302);
    expect(back.location).toBe(`${s.url}/github?installation=${installationId}`);
    const status = await api("GET", `${org()}/codehost`);
    expect(status.body.installations).toEqual([
      expect.objectContaining({ id: installationId, account: expect.objectContaining({ login: "acme", type: "Organization" }), repositorySelection: "all", repositories: 130 }),
    ]);
    // Two pages of 100 at GitHub, followed through the Link header.
    expect(gh.requests.filter((r) => r.path.startsWith("/installation/repositories")).length).toBeGreaterThanOrEqual(2);
    // The setup link's state is spent too.
    expect((await visit(done.setupRedirect!)).status).toBe(400);
  });

  test("another org's admin with a valid state cannot bind an installation they did not make; nothing is bound", async () => {
    // Installed at GitHub outside ao's flow, on an organization only octo-admin belongs to.
    const victim = (await gh.install(slug, "victim-co", { type: "Organization", repositories: 2, webhook: false, state: "" })).installation.record.id;
    const mallory = await newOrg(s);
    const link = async () => (await api("POST", `/orgs/${mallory.orgId}/codehost/installations`, undefined, mallory.accessToken)).body.state as string;

    // No connection of their own yet: 409 no_connection, saying what to do.
    const bare = await callback(victim, await link());
    expect(bare.status).toBe(409);
    const bareError = JSON.parse(bare.body).error;
    expect(bareError.details.reason).toBe("no_connection");
    expect(bareError.message).toContain("connect your GitHub account first");
    expect(await boundTo(victim)).toBeNull();

    // Connected as a GitHub account that cannot reach the installation: 403, nothing bound, the state spent.
    await connectGithub(mallory, "mallory");
    const state = await link();
    const forged = await callback(victim, state);
    expect(forged.status).toBe(403);
    expect(JSON.parse(forged.body).error.message).toContain(`installation ${victim} is not one your GitHub account (mallory) can reach`);
    expect(await boundTo(victim)).toBeNull();
    expect((await api("GET", `/orgs/${mallory.orgId}/codehost`, undefined, mallory.accessToken)).body.installations).toEqual([]);
    expect((await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM codehost_repositories WHERE installation_id = ?", victim)))!.n).toBe(0);
    expect((await callback(victim, state)).status).toBe(400);
    // Nor can they mint a token for it: no claim of theirs reaches its repositories.
    expect((await api("GET", `/orgs/${mallory.orgId}/codehost/repositories?q=victim-co`, undefined, mallory.accessToken)).body.items).toEqual([]);

    // Their own installation, made by their own account, binds to their org.
    gh.signIn("mallory");
    const own = (await gh.install(slug, "mallory-co", { type: "Organization", repositories: 1, webhook: false, state: "" })).installation.record.id;
    gh.signIn("octo-admin");
    const mine = await callback(own, await link());
    expect(mine.status).toBe(302);
    expect(mine.location).toBe(`${s.url}/github?installation=${own}`);
    expect(await boundTo(own)).toBe(mallory.orgId);
    // The first org's installation is untouched.
    expect(await boundTo(installationId)).toBe(owner.orgId);
  });

  test("sync again, and the synced repositories are listed by name with paging", async () => {
    gh.createRepository("acme", "zz-new");
    const r = await api("POST", `${org()}/codehost/sync`);
    expect(r.status).toBe(200);
    expect(r.body.repositories).toBe(131);
    const names: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await api("GET", `${org()}/codehost/repositories?limit=50${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      names.push(...page.body.items.map((i: any) => i.fullName));
      cursor = page.body.nextCursor;
    } while (cursor);
    expect(names.length).toBe(131);
    expect(names).toEqual([...names].sort());
    expect(names.at(-1)).toBe("acme/zz-new");
    const found = await api("GET", `${org()}/codehost/repositories?q=ZZ-n`);
    expect(found.body.items.map((i: any) => i.fullName)).toEqual(["acme/zz-new"]);
    expect(found.body.items[0].cloneUrl).toBe(`${gh.url}/acme/zz-new.git`);
  });

  test("installation_repositories webhooks keep the record current without a sync", async () => {
    const removed = await gh.deliver(hookUrl, "installation_repositories", gh.payloads.installationRepositories(installationId, [], ["zz-new"]));
    expect(removed.status).toBe(200);
    expect(JSON.parse(removed.body).status).toBe("processed");
    expect((await api("GET", `${org()}/codehost/repositories?q=zz-new`)).body.items).toEqual([]);
    const added = await gh.deliver(hookUrl, "installation_repositories", gh.payloads.installationRepositories(installationId, ["zz-new"], []));
    expect(added.status).toBe(200);
    expect((await api("GET", `${org()}/codehost/repositories?q=zz-new`)).body.items.length).toBe(1);
  });

  test("tokens GitHub expired early: ao mints new ones and the sync still works", async () => {
    gh.expireTokens();
    const before = gh.requests.length;
    const r = await api("POST", `${org()}/codehost/sync`);
    expect(r.status).toBe(200);
    const after = gh.requests.slice(before);
    expect(after.some((x) => x.status === 401)).toBe(true);
    expect(after.filter((x) => x.method === "POST" && /\/access_tokens$/.test(x.path)).length).toBeGreaterThanOrEqual(1);
  });

  test("a rate limit or a 5xx at GitHub: 503 with Retry-After and a clear message", async () => {
    gh.rateLimitNext(1, { status: 403, resetInSeconds: 40 });
    const limited = await api("POST", `${org()}/codehost/sync`);
    expect(limited.status).toBe(503);
    expect(limited.body.error.code).toBe("codehost_unavailable");
    expect(limited.body.error.message).toContain("rate limit");
    expect(Number(limited.headers.get("retry-after"))).toBeGreaterThanOrEqual(30);
    gh.failNext(1, 502);
    const down = await api("POST", `${org()}/codehost/sync`);
    expect(down.status).toBe(503);
    expect(down.body.error.message).toContain("502");
  });
});

describe("the person's own connection", () => {
  test("OAuth web flow: the link, GitHub's redirect, the callback stores the login; a replay is refused", async () => {
    const r = await api("POST", `${org()}/codehost/user`);
    expect(r.status).toBe(200);
    const authorize = new URL(r.body.url);
    expect(`${authorize.origin}${authorize.pathname}`).toBe(`${gh.url}/login/oauth/authorize`);
    expect(authorize.searchParams.get("state")).toBe(r.body.state);
    const atGithub = await visit(r.body.url);
    expect(atGithub.status).toBe(302);
    const back = await visit(atGithub.location!);
    expect(back.status).toBe(302);
    expect(back.location).toBe(`${s.url}/github?connection=octo-admin`);
    expect((await api("GET", `${org()}/codehost`)).body.connection).toEqual({ login: "octo-admin" });
    expect((await visit(atGithub.location!)).status).toBe(400);
    const row = (await s.core.store.read(get<{ token_sealed: string }>("SELECT token_sealed FROM codehost_connections")))!;
    expect(row.token_sealed.startsWith("v1.")).toBe(true);
  });

  test("a personal repository is created through the person's connection", async () => {
    const r = await api("POST", `${org()}/codehost/repositories`, { owner: "octo-admin", name: "mine", private: false });
    expect(r.status).toBe(201);
    expect(gh.repository("octo-admin", "mine")!.record.private).toBe(false);
    expect(r.body.project.repositories[0].url).toBe(`${gh.url}/octo-admin/mine.git`);
  });
});

const codehostRepositories = async () => (await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM codehost_repositories")))!.n;

describe("roles and organizations on every codehost route", () => {
  const routes: [string, string, unknown?][] = [
    ["GET", "/codehost"],
    ["POST", "/codehost/app/manifest", {}],
    ["POST", "/codehost/installations"],
    ["POST", "/codehost/user"],
    ["POST", "/codehost/sync"],
    ["GET", "/codehost/repositories"],
    ["POST", "/codehost/repositories", { owner: "acme", name: "by-viewer" }],
  ];

  test("a person who declines at GitHub is sent back to the page, which says so; GitHub's own text is never shown, nothing is connected", async () => {
    const viewer = await addMember(s, owner, "viewer");
    const link = await api("POST", `${org()}/codehost/user`, undefined, viewer.accessToken);
    const state = new URL(link.body.url).searchParams.get("state");
    const back = (query: string) => visit(`${s.url}/api/v1/codehost/user/callback?${query}&state=${state}`);
    // GitHub's answer to "Cancel" on its authorization page.
    const declined = await back("error=access_denied&error_description=The+user+has+denied+your+application+access.&error_uri=https%3A%2F%2Fdocs.github.com");
    expect([declined.status, declined.location]).toEqual([302, `${s.url}/github?refused=declined`]);
    const other = await back("error=call+this+number&error_description=call+555");
    expect([other.status, other.location]).toEqual([302, `${s.url}/github?refused=failed`]);
    expect((await api("GET", `${org()}/codehost`, undefined, viewer.accessToken)).body.connection).toBeNull();
  });

  test("a viewer reads, may connect their own account, and gets 403 on the rest; nothing changes", async () => {
    const viewer = await addMember(s, owner, "viewer");
    const repos = await codehostRepositories();
    for (const [method, path, body] of routes) {
      const r = await api(method, `${org()}${path}`, body, viewer.accessToken);
      const allowed = method === "GET" || path === "/codehost/user";
      expect({ path, status: r.status }).toEqual({ path, status: allowed ? 200 : 403 });
    }
    expect(await codehostRepositories()).toBe(repos);
    expect(gh.repository("acme", "by-viewer")).toBeUndefined();
  });

  test("another organization's people get 404 on this org's routes; their own org sees none of its installations", async () => {
    const stranger = await newOrg(s);
    for (const [method, path, body] of routes) {
      const r = await api(method, `${org()}${path}`, body, stranger.accessToken);
      expect({ path, status: r.status }).toEqual({ path, status: 404 });
    }
    const theirs = await api("GET", `/orgs/${stranger.orgId}/codehost`, undefined, stranger.accessToken);
    expect(theirs.body.installations).toEqual([]);
    expect(theirs.body.app.ownedByThisOrg).toBe(false);
    expect(theirs.body.app.integrationId).toBeNull();
    expect((await api("GET", `/orgs/${stranger.orgId}/codehost/repositories`, undefined, stranger.accessToken)).body.items).toEqual([]);
    // An installation already connected to the first org cannot be taken by the second.
    const link = await api("POST", `/orgs/${stranger.orgId}/codehost/installations`, undefined, stranger.accessToken);
    const taken = await visit(`${s.url}/api/v1/codehost/installations/callback?installation_id=${installationId}&setup_action=install&state=${link.body.state}`);
    expect(taken.status).toBe(409);
    expect((await api("GET", `${org()}/codehost`)).body.installations.length).toBe(1);
  });
});
