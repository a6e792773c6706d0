// A local stand-in for github.com, its REST API and git over HTTP, for tests. It plays a GitHub
// Enterprise Server: the web side at `url`, the API at `apiUrl` (= url + "/api/v3", which is
// where GitHub's own clients look for GHES, so the OAuth token exchange lands here too) and
// git at `url/:owner/:repo.git`. Answers carry GitHub's recorded shapes (./github/shapes.ts),
// app JWTs and tokens are checked as GitHub checks them, and repositories are real bare git
// repositories served by git-http-backend.
import { generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sign as signWebhook } from "@octokit/webhooks-methods";
import * as shapes from "./github/shapes";
import type { Account, AppRecord, CommentRecord, InstallationRecord, PullRecord, RepositoryRecord, ReviewRecord } from "./github/shapes";
import { commitFiles, createBareRepository, git, gitService, refSha, serveGit } from "./github/git-http";
import { checkAppJwt } from "./github/jwt";

type Json = any;
type Permissions = Record<string, string>;

export interface StandInApp {
  record: AppRecord;
  clientId: string;
  clientSecret: string;
  webhookSecret: string;
  pem: string;
  publicKey: KeyObject;
  hookUrl: string | null;
  redirectUrl: string | null;
  callbackUrls: string[];
  setupUrl: string | null;
  /** states of `/apps/:slug/installations/new` visits, handed back on the setup redirect */
  installStates: string[];
  /** the manifest as posted, for tests that check what ao asked for */
  manifest: Json;
}

export interface StandInInstallation {
  record: InstallationRecord;
  /** ids of the selected repositories; null when the installation has all of the account's */
  repositoryIds: Set<number> | null;
}

export interface StandInRepository {
  record: RepositoryRecord;
  /** the bare repository on disk (a test may `git log` it) */
  dir: string;
  pulls: PullRecord[];
  reviews: ReviewRecord[];
  comments: CommentRecord[];
  nextNumber: number;
}

type Token =
  | { kind: "installation"; installationId: number; repositoryIds: Set<number> | null; permissions: Permissions; expiresAt: number }
  | { kind: "user"; login: string; appId: number; expiresAt: number };

export interface Delivery {
  url: string;
  event: string;
  id: string;
  status: number;
  body: string;
}

export interface GitHubStandIn {
  url: string;
  apiUrl: string;
  /** Every API request as answered, in order: tests check retries and back-off with it. */
  requests: { method: string; path: string; status: number }[];
  deliveries: Delivery[];
  apps: Map<number, StandInApp>;
  installations: Map<number, StandInInstallation>;
  /** Creates or returns an account (user or organization). */
  account(login: string, opts?: { type?: "User" | "Organization"; name?: string; email?: string; members?: string[] }): Account;
  /** The person signed in on the web side (manifest, installation and OAuth pages). */
  signIn(login: string): Account;
  app(slugOrId: string | number): StandInApp;
  /** Registers an app straight from a manifest (what the manifest flow's page does), for tests
   *  that need an app but are not about its creation. Owned by `org` or the signed-in person. */
  createApp(manifest: Json, opts?: { org?: string }): StandInApp;
  /** Installs an app on an account, as a person clicking "Install" does. Delivers the
   *  `installation` webhook when the app has a hook URL (unless webhook: false). */
  install(
    appSlug: string,
    account: string,
    opts?: { repositories?: number | string[]; type?: "Organization" | "User"; selection?: "all" | "selected"; webhook?: boolean; state?: string },
  ): Promise<{ installation: StandInInstallation; setupRedirect: string | null; delivery: Delivery | null }>;
  createRepository(owner: string, name: string, opts?: { private?: boolean; files?: Record<string, string>; branch?: string; description?: string; type?: "User" | "Organization" }): StandInRepository;
  repository(owner: string, name: string): StandInRepository | undefined;
  repositories(): StandInRepository[];
  /** Mints an installation token as `POST /app/installations/:id/access_tokens` would. */
  mintToken(installationId: number, opts?: { repositories?: string[]; permissions?: Permissions; ttlMs?: number }): string;
  /** Marks a pull request merged (a fast-forward of the base branch when possible). */
  merge(owner: string, name: string, number: number): PullRecord;
  /** Webhook payloads built from GitHub's recorded examples with the stand-in's objects. */
  payloads: {
    installation(installationId: number, action: "created" | "deleted" | "suspend" | "unsuspend"): Json;
    installationRepositories(installationId: number, added: string[], removed: string[]): Json;
    pullRequest(owner: string, name: string, number: number, action: "opened" | "closed" | "reopened" | "edited"): Json;
  };
  /** Posts a webhook signed with the app's webhook secret (or `secret`), as GitHub delivers. */
  deliver(webhookUrl: string, event: string, payload: Json, opts?: { app?: string | number; secret?: string }): Promise<Delivery>;
  /** The next `count` API answers are `status` (default 502). */
  failNext(count: number, status?: number): void;
  /** The next `count` API answers are rate limited: 403 (primary) or 429 (secondary). */
  rateLimitNext(count: number, opts?: { status?: 403 | 429; resetInSeconds?: number; retryAfterSeconds?: number }): void;
  /** Every token issued so far stops working now. */
  expireTokens(): void;
  close(): Promise<void>;
}

const DOCS = "https://docs.github.com/rest";

function now() {
  return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}

function randomToken(prefix: string) {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const bytes = randomBytes(36);
  return prefix + Array.from(bytes, (b) => alphabet[b % alphabet.length]).join("");
}

function slugify(name: string) {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "");
}

const HTML = { "content-type": "text/html; charset=utf-8" };

export async function startGitHubStandIn(): Promise<GitHubStandIn> {
  const gitRoot = mkdtempSync(join(tmpdir(), "gh-standin-"));
  let nextId = 1000;
  const id = () => ++nextId;
  const accounts = new Map<string, Account>();
  const apps = new Map<number, StandInApp>();
  const installations = new Map<number, StandInInstallation>();
  const repos = new Map<string, StandInRepository>();
  const tokens = new Map<string, Token>();
  const manifestCodes = new Map<string, number>();
  const oauthCodes = new Map<string, { appId: number; login: string; redirectUri: string | null; expiresAt: number }>();
  const refreshTokens = new Map<string, { appId: number; login: string }>();
  const requests: GitHubStandIn["requests"] = [];
  const deliveries: Delivery[] = [];
  const faults = { fail: 0, failStatus: 502, limit: 0, limitStatus: 403 as 403 | 429, resetIn: 60, retryAfter: 60 };
  let used = 0;
  let signedIn: Account;

  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 120, fetch: (req) => route(req) });
  const url = `http://127.0.0.1:${server.port}`;
  const apiUrl = `${url}/api/v3`;
  const hosts = { web: url, api: apiUrl };

  function account(login: string, opts: { type?: "User" | "Organization"; name?: string; email?: string; members?: string[] } = {}): Account {
    const existing = accounts.get(login.toLowerCase());
    if (existing) {
      if (opts.members) existing.members = [...new Set([...(existing.members ?? []), ...opts.members])];
      return existing;
    }
    const a: Account = { login, id: id(), type: opts.type ?? "User", name: opts.name ?? null, email: opts.email ?? null, members: opts.members };
    accounts.set(login.toLowerCase(), a);
    return a;
  }
  signedIn = account("octocat", { name: "The Octocat", email: "octocat@github.invalid" });

  const repoKey = (owner: string, name: string) => `${owner}/${name}`.toLowerCase();

  function createRepository(
    owner: string,
    name: string,
    opts: { private?: boolean; files?: Record<string, string>; branch?: string; description?: string; type?: "User" | "Organization" } = {},
  ): StandInRepository {
    const ownerAccount = account(owner, { type: opts.type });
    const key = repoKey(owner, name);
    if (repos.has(key)) throw new Error(`${owner}/${name} exists`);
    const branch = opts.branch ?? "main";
    const dir = createBareRepository(gitRoot, ownerAccount.login, name, branch, opts.files);
    const t = now();
    const r: StandInRepository = {
      record: { id: id(), owner: ownerAccount, name, private: opts.private ?? true, description: opts.description ?? null, defaultBranch: branch, createdAt: t, pushedAt: t },
      dir,
      pulls: [],
      reviews: [],
      comments: [],
      nextNumber: 1,
    };
    repos.set(key, r);
    return r;
  }

  function app(slugOrId: string | number): StandInApp {
    for (const a of apps.values()) if (a.record.id === slugOrId || a.record.slug === slugOrId || String(a.record.id) === String(slugOrId)) return a;
    throw new Error(`no app ${slugOrId}`);
  }

  function installationRepos(inst: StandInInstallation): StandInRepository[] {
    return [...repos.values()]
      .filter((r) => r.record.owner.login === inst.record.account.login && (inst.repositoryIds === null || inst.repositoryIds.has(r.record.id)))
      .sort((a, b) => a.record.id - b.record.id);
  }

  function mintToken(installationId: number, opts: { repositories?: string[]; permissions?: Permissions; ttlMs?: number } = {}): string {
    const inst = installations.get(installationId);
    if (!inst) throw new Error(`no installation ${installationId}`);
    const ids = opts.repositories
      ? new Set(opts.repositories.map((n) => installationRepos(inst).find((r) => r.record.name === n)?.record.id ?? -1))
      : null;
    const token = randomToken("ghs_");
    tokens.set(token, {
      kind: "installation",
      installationId,
      repositoryIds: ids,
      permissions: opts.permissions ?? inst.record.permissions,
      expiresAt: Date.now() + (opts.ttlMs ?? 3600_000),
    });
    return token;
  }

  function tokenFrom(req: Request): { token: Token | null; jwt: string | null; given: boolean } {
    const h = req.headers.get("authorization");
    if (!h) return { token: null, jwt: null, given: false };
    const m = h.match(/^(?:token|bearer)\s+(\S+)$/i);
    if (!m) return { token: null, jwt: null, given: true };
    const value = m[1]!;
    if (value.startsWith("eyJ") && value.split(".").length === 3) return { token: null, jwt: value, given: true };
    const t = tokens.get(value);
    if (!t || t.expiresAt <= Date.now()) return { token: null, jwt: null, given: true };
    return { token: t, jwt: null, given: true };
  }

  // ---- answers -------------------------------------------------------------------------

  function apiHeaders(extra: Record<string, string> = {}): Record<string, string> {
    const reset = Math.floor(Date.now() / 1000) + 3600;
    return {
      "content-type": "application/json; charset=utf-8",
      "x-github-media-type": "github.v3; format=json",
      "x-github-request-id": randomUUID().toUpperCase().slice(0, 23),
      "x-ratelimit-limit": "5000",
      "x-ratelimit-remaining": String(Math.max(0, 5000 - used)),
      "x-ratelimit-used": String(used),
      "x-ratelimit-reset": String(reset),
      "x-ratelimit-resource": "core",
      ...extra,
    };
  }

  const json = (status: number, body: Json, extra: Record<string, string> = {}) =>
    new Response(status === 204 ? null : JSON.stringify(body), { status, headers: apiHeaders(extra) });
  const error = (status: number, message: string, more: Json = {}) =>
    json(status, { message, documentation_url: DOCS, status: String(status), ...more });
  const badCredentials = () => error(401, "Bad credentials");
  const notFound = () => error(404, "Not Found");
  const notAccessible = () => error(403, "Resource not accessible by integration");
  const validation = (errors: Json[], message = "Validation Failed") => error(422, message, { errors });

  /** Pages `items` as GitHub does: per_page (max 100, default 30), page, and a Link header. */
  function paged(req: Request, items: Json[], wrap?: (page: Json[]) => Json): Response {
    const u = new URL(req.url);
    const perPage = Math.min(100, Math.max(1, parseInt(u.searchParams.get("per_page") ?? "30", 10) || 30));
    const page = Math.max(1, parseInt(u.searchParams.get("page") ?? "1", 10) || 1);
    const last = Math.max(1, Math.ceil(items.length / perPage));
    const slice = items.slice((page - 1) * perPage, page * perPage);
    const link = (p: number, rel: string) => {
      const v = new URL(u.pathname, apiUrl.replace(/\/api\/v3$/, ""));
      for (const [k, val] of u.searchParams) v.searchParams.set(k, val);
      v.searchParams.set("per_page", String(perPage));
      v.searchParams.set("page", String(p));
      return `<${v}>; rel="${rel}"`;
    };
    const links: string[] = [];
    if (page > 1) links.push(link(page - 1, "prev"));
    if (page < last) links.push(link(page + 1, "next"), link(last, "last"));
    if (page > 1) links.push(link(1, "first"));
    return json(200, wrap ? wrap(slice) : slice, links.length ? { link: links.join(", ") } : {});
  }

  async function body(req: Request): Promise<Json> {
    const text = await req.text();
    if (!text) return {};
    const type = req.headers.get("content-type") ?? "";
    if (type.includes("application/x-www-form-urlencoded")) return Object.fromEntries(new URLSearchParams(text));
    try {
      return JSON.parse(text);
    } catch {
      return null;
    }
  }

  /** Registers an app from a manifest as GitHub's "Create GitHub App" button does; a string says why not. */
  function createApp(manifest: Json, orgLogin: string | null): StandInApp | string {
    const name = typeof manifest.name === "string" && manifest.name ? manifest.name : `${signedIn.login}-app`;
    const slug = slugify(name);
    if ([...apps.values()].some((a) => a.record.slug === slug)) return "Name is already in use";
    const owner = orgLogin ? account(orgLogin, { type: "Organization", members: [signedIn.login] }) : signedIn;
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const pem = privateKey.export({ type: "pkcs1", format: "pem" }).toString();
    const a: StandInApp = {
      record: {
        id: id(),
        slug,
        name,
        owner,
        description: manifest.description ?? null,
        url: manifest.url,
        permissions: { metadata: "read", ...(manifest.default_permissions ?? {}) },
        events: manifest.default_events ?? [],
        createdAt: now(),
      },
      clientId: "Iv1." + randomBytes(8).toString("hex"),
      clientSecret: randomBytes(20).toString("hex"),
      webhookSecret: randomBytes(20).toString("hex"),
      pem,
      publicKey,
      hookUrl: manifest.hook_attributes?.url && manifest.hook_attributes?.active !== false ? manifest.hook_attributes.url : null,
      redirectUrl: manifest.redirect_url ?? null,
      callbackUrls: manifest.callback_urls ?? (manifest.callback_url ? [manifest.callback_url] : []),
      setupUrl: manifest.setup_url ?? null,
      installStates: [],
      manifest,
    };
    apps.set(a.record.id, a);
    return a;
  }

  // ---- web side: github.com ------------------------------------------------------------

  async function web(req: Request, u: URL): Promise<Response | null> {
    const p = u.pathname;
    let m: RegExpMatchArray | null;
    if (req.method === "POST" && (p === "/settings/apps/new" || (m = p.match(/^\/organizations\/([^/]+)\/settings\/apps\/new$/)))) {
      const orgLogin = p.startsWith("/organizations/") ? decodeURIComponent(p.split("/")[2]!) : null;
      const form = await req.formData().catch(() => null);
      let manifest: Json;
      try {
        manifest = JSON.parse(String(form?.get("manifest") ?? ""));
      } catch {
        return new Response("<p>Invalid GitHub App configuration: the manifest is not JSON</p>", { status: 422, headers: HTML });
      }
      if (!manifest?.url || typeof manifest.url !== "string")
        return new Response("<p>Invalid GitHub App configuration: url wasn't supplied</p>", { status: 422, headers: HTML });
      const made = createApp(manifest, orgLogin);
      if (typeof made === "string") return new Response(`<p>${made}</p>`, { status: 422, headers: HTML });
      const a = made;
      const code = randomBytes(20).toString("hex");
      manifestCodes.set(code, a.record.id);
      const to = new URL(a.redirectUrl ?? `${url}/settings/apps/${a.record.slug}`);
      to.searchParams.set("code", code);
      const state = u.searchParams.get("state");
      if (state !== null) to.searchParams.set("state", state);
      return Response.redirect(to.toString(), 302);
    }
    if (req.method === "GET" && (m = p.match(/^\/(?:github-)?apps\/([^/]+)\/installations\/new$/))) {
      let a: StandInApp;
      try {
        a = app(decodeURIComponent(m[1]!));
      } catch {
        return new Response("Not Found", { status: 404, headers: HTML });
      }
      const state = u.searchParams.get("state");
      if (state !== null) a.installStates.push(state);
      return new Response(`<h1>Install ${a.record.name}</h1>`, { status: 200, headers: HTML });
    }
    if (req.method === "GET" && p === "/login/oauth/authorize") {
      const clientId = u.searchParams.get("client_id");
      const a = [...apps.values()].find((x) => x.clientId === clientId);
      if (!a) return new Response("Not Found", { status: 404, headers: HTML });
      const redirect = u.searchParams.get("redirect_uri") ?? a.callbackUrls[0] ?? null;
      if (!redirect) return new Response("no callback URL", { status: 400, headers: HTML });
      const to = new URL(redirect);
      const state = u.searchParams.get("state");
      // GitHub accepts a redirect_uri on the host and port of a callback URL, under its path
      const allowed = a.callbackUrls.some((c) => {
        const cu = new URL(c);
        return cu.host === to.host && to.pathname.startsWith(cu.pathname);
      });
      if (!allowed) {
        const back = new URL(a.callbackUrls[0] ?? redirect);
        back.searchParams.set("error", "redirect_uri_mismatch");
        back.searchParams.set("error_description", "The redirect_uri MUST match the registered callback URL for this application.");
        if (state !== null) back.searchParams.set("state", state);
        return Response.redirect(back.toString(), 302);
      }
      const code = randomBytes(10).toString("hex");
      oauthCodes.set(code, { appId: a.record.id, login: signedIn.login, redirectUri: u.searchParams.get("redirect_uri"), expiresAt: Date.now() + 600_000 });
      to.searchParams.set("code", code);
      if (state !== null) to.searchParams.set("state", state);
      return Response.redirect(to.toString(), 302);
    }
    if (req.method === "POST" && p === "/login/oauth/access_token") {
      const b = (await body(req)) ?? {};
      const a = [...apps.values()].find((x) => x.clientId === b.client_id);
      const answer = (o: Json) =>
        (req.headers.get("accept") ?? "").includes("json")
          ? new Response(JSON.stringify(o), { status: 200, headers: { "content-type": "application/json; charset=utf-8" } })
          : new Response(new URLSearchParams(o).toString(), { status: 200, headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" } });
      if (!a || a.clientSecret !== b.client_secret)
        return answer({
          error: "incorrect_client_credentials",
          error_description: "The client_id and/or client_secret passed are incorrect.",
          error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#incorrect-client-credentials",
        });
      let login: string;
      if (b.grant_type === "refresh_token") {
        const r = refreshTokens.get(b.refresh_token);
        if (!r || r.appId !== a.record.id)
          return answer({ error: "bad_refresh_token", error_description: "The refresh token passed is incorrect or expired.", error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors" });
        refreshTokens.delete(b.refresh_token);
        login = r.login;
      } else {
        const c = oauthCodes.get(b.code);
        oauthCodes.delete(b.code);
        if (!c || c.appId !== a.record.id || c.expiresAt <= Date.now())
          return answer({
            error: "bad_verification_code",
            error_description: "The code passed is incorrect or expired.",
            error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code",
          });
        if (b.redirect_uri && c.redirectUri && b.redirect_uri !== c.redirectUri)
          return answer({ error: "redirect_uri_mismatch", error_description: "The redirect_uri MUST match the registered callback URL for this application.", error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#redirect-uri-mismatch" });
        login = c.login;
      }
      const access = randomToken("ghu_");
      const refresh = randomToken("ghr_") + randomToken("");
      tokens.set(access, { kind: "user", login, appId: a.record.id, expiresAt: Date.now() + 28_800_000 });
      refreshTokens.set(refresh, { appId: a.record.id, login });
      return answer({ access_token: access, expires_in: "28800", refresh_token: refresh, refresh_token_expires_in: "15897600", scope: "", token_type: "bearer" });
    }
    return null;
  }

  // ---- API: api.github.com -------------------------------------------------------------

  function repoAccess(t: Token | null, r: StandInRepository): "none" | "read" | "write" {
    if (!t) return r.record.private ? "none" : "read";
    if (t.kind === "installation") {
      const inst = installations.get(t.installationId);
      if (!inst || !installationRepos(inst).includes(r) || (t.repositoryIds && !t.repositoryIds.has(r.record.id))) return r.record.private ? "none" : "read";
      return t.permissions.contents === "write" ? "write" : "read";
    }
    const owner = r.record.owner;
    const member = owner.login === t.login || (owner.members ?? []).includes(t.login);
    return member ? "write" : r.record.private ? "none" : "read";
  }

  function installationFor(t: Token | null) {
    return t?.kind === "installation" ? installations.get(t.installationId) ?? null : null;
  }

  async function api(req: Request, p: string): Promise<Response> {
    const method = req.method;
    const auth = tokenFrom(req);
    const t = auth.token;
    let m: RegExpMatchArray | null;

    if (method === "POST" && (m = p.match(/^\/app-manifests\/([^/]+)\/conversions$/))) {
      const appId = manifestCodes.get(m[1]!);
      manifestCodes.delete(m[1]!);
      if (appId === undefined) return notFound();
      const a = apps.get(appId)!;
      return json(201, {
        ...shapes.app(hosts, a.record, a.clientId),
        client_id: a.clientId,
        client_secret: a.clientSecret,
        webhook_secret: a.webhookSecret,
        pem: a.pem,
      });
    }

    // routes an app calls with its JWT
    if (p === "/app" || p.startsWith("/app/")) {
      if (!auth.jwt) return auth.given ? error(401, "A JSON web token could not be decoded") : error(401, "A JSON web token could not be decoded");
      const check = checkAppJwt(auth.jwt, (iss) => [...apps.values()].find((a) => String(a.record.id) === iss || a.clientId === iss)?.publicKey ?? null);
      if (!check.ok) return error(401, check.message);
      const a = [...apps.values()].find((x) => String(x.record.id) === check.iss || x.clientId === check.iss)!;
      const mine = [...installations.values()].filter((i) => i.record.app.id === a.record.id).sort((x, y) => x.record.id - y.record.id);
      if (method === "GET" && p === "/app") return json(200, { ...shapes.app(hosts, a.record, a.clientId), installations_count: mine.length });
      if (method === "GET" && p === "/app/installations") return paged(req, mine.map((i) => shapes.installation(hosts, i.record)));
      if ((m = p.match(/^\/app\/installations\/(\d+)$/))) {
        const inst = mine.find((i) => i.record.id === Number(m![1]));
        if (!inst) return notFound();
        if (method === "GET") return json(200, shapes.installation(hosts, inst.record));
        if (method === "DELETE") {
          installations.delete(inst.record.id);
          return json(204, null);
        }
      }
      if (method === "POST" && (m = p.match(/^\/app\/installations\/(\d+)\/access_tokens$/))) {
        const inst = mine.find((i) => i.record.id === Number(m![1]));
        if (!inst) return notFound();
        if (inst.record.suspendedAt) return error(403, "This installation has been suspended");
        const b = (await body(req)) ?? {};
        const available = installationRepos(inst);
        let chosen: StandInRepository[] | null = null;
        if (Array.isArray(b.repositories) || Array.isArray(b.repository_ids)) {
          chosen = [];
          for (const n of b.repositories ?? []) {
            const r = available.find((x) => x.record.name.toLowerCase() === String(n).toLowerCase());
            if (!r) return validation([], "There is at least one repository that does not exist or is not accessible to the parent installation.");
            chosen.push(r);
          }
          for (const rid of b.repository_ids ?? []) {
            const r = available.find((x) => x.record.id === Number(rid));
            if (!r) return validation([], "There is at least one repository that does not exist or is not accessible to the parent installation.");
            chosen.push(r);
          }
        }
        let permissions = inst.record.permissions;
        if (b.permissions && typeof b.permissions === "object") {
          const rank = (v: string | undefined) => (v === "write" || v === "admin" ? 2 : v === "read" ? 1 : 0);
          for (const [k, v] of Object.entries(b.permissions as Permissions))
            if (rank(v) > rank(inst.record.permissions[k])) return validation([], "The permissions requested are not granted to this installation.");
          permissions = b.permissions;
        }
        const token = randomToken("ghs_");
        const expiresAt = Date.now() + 3600_000;
        tokens.set(token, { kind: "installation", installationId: inst.record.id, repositoryIds: chosen ? new Set(chosen.map((r) => r.record.id)) : null, permissions, expiresAt });
        return json(201, {
          token,
          expires_at: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, "Z"),
          permissions,
          repository_selection: chosen ? "selected" : inst.record.repositorySelection,
          ...(chosen ? { repositories: chosen.map((r) => shapes.repository(hosts, r.record)) } : {}),
        });
      }
      return notFound();
    }

    if (!t) return auth.given ? badCredentials() : requiresAuthentication(method, p);

    if (method === "GET" && p === "/installation/repositories") {
      const inst = installationFor(t);
      if (!inst || t.kind !== "installation") return error(403, "You must authenticate with an installation access token in order to list repositories for an installation.");
      const list = installationRepos(inst).filter((r) => !t.repositoryIds || t.repositoryIds.has(r.record.id));
      return paged(
        req,
        list.map((r) => shapes.repository(hosts, r.record)),
        (page) => ({ total_count: list.length, repository_selection: t.repositoryIds ? "selected" : inst.record.repositorySelection, repositories: page }),
      );
    }

    if (method === "GET" && p === "/user") {
      if (t.kind !== "user") return notAccessible();
      return json(200, shapes.privateUser(hosts, accounts.get(t.login.toLowerCase())!, apps.get(t.appId)!.record.createdAt));
    }
    if (method === "GET" && p === "/user/installations") {
      if (t.kind !== "user") return notAccessible();
      const list = [...installations.values()]
        .filter((i) => i.record.app.id === t.appId && (i.record.account.login === t.login || (i.record.account.members ?? []).includes(t.login)))
        .sort((x, y) => x.record.id - y.record.id);
      return paged(
        req,
        list.map((i) => shapes.installation(hosts, i.record)),
        (page) => ({ total_count: list.length, installations: page }),
      );
    }

    if (method === "POST" && (p === "/user/repos" || (m = p.match(/^\/orgs\/([^/]+)\/repos$/)))) {
      let owner: Account;
      if (p === "/user/repos") {
        if (t.kind !== "user") return notAccessible();
        owner = accounts.get(t.login.toLowerCase())!;
      } else {
        const org = accounts.get(decodeURIComponent(m![1]!).toLowerCase());
        if (!org || org.type !== "Organization") return notFound();
        if (t.kind === "installation") {
          const inst = installationFor(t);
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
      if (repos.has(repoKey(owner.login, b.name)))
        return error(422, "Repository creation failed.", {
          errors: [{ resource: "Repository", code: "custom", field: "name", message: "name already exists on this account" }],
          documentation_url: `https://docs.github.com/rest/repos/repos#${where}`,
        });
      const isPrivate = b.visibility ? b.visibility !== "public" : b.private === true || b.private === "true";
      const r = createRepository(owner.login, b.name, {
        private: isPrivate,
        description: typeof b.description === "string" ? b.description : undefined,
        files: b.auto_init ? { "README.md": `# ${b.name}\n${b.description ? `\n${b.description}\n` : ""}` } : undefined,
      });
      // a repository made through an app joins the app's installation on that account
      const joining = t.kind === "installation" ? [installationFor(t)!] : [...installations.values()].filter((i) => i.record.app.id === t.appId && i.record.account.login === owner.login);
      for (const inst of joining) inst.repositoryIds?.add(r.record.id);
      if (t.kind === "installation" && t.repositoryIds) t.repositoryIds.add(r.record.id);
      return json(201, shapes.repository(hosts, r.record, { admin: true, maintain: true, push: true, triage: true, pull: true }), {
        location: `${apiUrl}/repos/${owner.login}/${b.name}`,
      });
    }

    if ((m = p.match(/^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/))) {
      const r = repos.get(repoKey(decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)));
      if (!r) return notFound();
      const access = repoAccess(t, r);
      if (access === "none") return notFound();
      const rest = m[3] ?? "";
      const actor = t.kind === "user" ? accounts.get(t.login.toLowerCase())! : botAccount(installationFor(t)!);
      const canWrite = (perm: string) => (t.kind === "user" ? access === "write" : t.permissions[perm] === "write" && repoAccess(t, r) !== "none" && coveredBy(t, r));
      const pull = (n: string) => r.pulls.find((x) => x.number === Number(n));
      if (method === "GET" && rest === "") {
        const perms = access === "write" ? { admin: t.kind === "user", maintain: t.kind === "user", push: true, triage: true, pull: true } : { admin: false, maintain: false, push: false, triage: false, pull: true };
        return json(200, shapes.repository(hosts, r.record, perms));
      }
      if (method === "GET" && rest === "/pulls") {
        const state = new URL(req.url).searchParams.get("state") ?? "open";
        const list = r.pulls.filter((x) => state === "all" || x.state === state).sort((a, b) => b.number - a.number);
        return paged(req, list.map((x) => shapes.pullRequest(hosts, r.record, x)));
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
          id: id(),
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
        return json(201, shapes.pullRequest(hosts, r.record, pr), { location: `${apiUrl}/repos/${r.record.owner.login}/${r.record.name}/pulls/${pr.number}` });
      }
      if ((m = rest.match(/^\/pulls\/(\d+)$/))) {
        const pr = pull(m[1]!);
        if (!pr) return notFound();
        if (method === "GET") {
          pr.headSha = refSha(r.dir, pr.head) ?? pr.headSha;
          return json(200, shapes.pullRequest(hosts, r.record, pr));
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
          return json(200, shapes.pullRequest(hosts, r.record, pr));
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
          id: id(),
          pull: pr.number,
          user: actor,
          body: typeof b.body === "string" ? b.body : "",
          state: b.event ? states[b.event]! : "PENDING",
          commitId: typeof b.commit_id === "string" ? b.commit_id : pr.headSha,
          submittedAt: now(),
          comments: Array.isArray(b.comments) ? b.comments : [],
        };
        r.reviews.push(rv);
        return json(200, shapes.review(hosts, r.record, rv));
      }
      if (method === "POST" && (m = rest.match(/^\/issues\/(\d+)\/comments$/))) {
        const n = Number(m[1]!);
        if (!pull(m[1]!)) return notFound();
        if (!(canWrite("issues") || canWrite("pull_requests"))) return notAccessible();
        const b = (await body(req)) ?? {};
        if (typeof b.body !== "string" || !b.body) return validation([{ resource: "IssueComment", code: "missing_field", field: "body" }]);
        const c: CommentRecord = { id: id(), issue: n, user: actor, body: b.body, createdAt: now() };
        r.comments.push(c);
        return json(201, shapes.issueComment(hosts, r.record, c), { location: `${apiUrl}/repos/${r.record.owner.login}/${r.record.name}/issues/comments/${c.id}` });
      }
      return notFound();
    }
    return notFound();
  }

  function coveredBy(t: Token, r: StandInRepository) {
    return t.kind !== "installation" || !t.repositoryIds || t.repositoryIds.has(r.record.id);
  }

  function requiresAuthentication(method: string, p: string) {
    // public repositories can be read without a token; everything else needs one
    const m = p.match(/^\/repos\/([^/]+)\/([^/]+)$/);
    if (method === "GET" && m) {
      const r = repos.get(repoKey(decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)));
      if (r && !r.record.private) return json(200, shapes.repository(hosts, r.record));
      return notFound();
    }
    return error(401, "Requires authentication");
  }

  /** The bot user an installation acts as (`<slug>[bot]`). */
  function botAccount(inst: StandInInstallation): Account {
    return account(`${inst.record.app.slug}[bot]`, { type: "User" });
  }

  // ---- git over HTTP -------------------------------------------------------------------

  async function gitRoute(req: Request, u: URL): Promise<Response | null> {
    const m = u.pathname.match(/^\/([^/]+)\/([^/]+?)\.git(\/.*)$/);
    if (!m) return null;
    const service = gitService(u.pathname, u.searchParams);
    if (!service) return new Response("Not Found", { status: 404 });
    const r = repos.get(repoKey(decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)));
    const challenge = () =>
      new Response("Invalid username or token. Password authentication is not supported for Git operations.\n", {
        status: 401,
        headers: { "www-authenticate": 'Basic realm="GitHub"', "content-type": "text/plain" },
      });
    const h = req.headers.get("authorization");
    let t: Token | null = null;
    let user = "anonymous";
    if (h) {
      const basic = h.match(/^basic\s+(\S+)$/i);
      if (!basic) return challenge();
      const decoded = Buffer.from(basic[1]!, "base64").toString();
      const i = decoded.indexOf(":");
      const password = i < 0 ? "" : decoded.slice(i + 1);
      const found = tokens.get(password);
      if (!found || found.expiresAt <= Date.now()) return challenge();
      t = found;
      user = decoded.slice(0, i) || "x-access-token";
    }
    if (!r) return t ? new Response("Repository not found.\n", { status: 404 }) : challenge();
    const access = repoAccess(t, r);
    const canContents = !t || t.kind === "user" || coveredBy(t, r);
    if (access === "none" || !canContents) return t ? new Response("Repository not found.\n", { status: 404 }) : challenge();
    if (service === "receive-pack") {
      if (!t) return challenge();
      if (access !== "write") return new Response(`Permission to ${r.record.owner.login}/${r.record.name}.git denied to ${user}.\n`, { status: 403 });
    }
    const res = await serveGit(req, gitRoot, `/${r.record.owner.login}/${r.record.name}.git${m[3]}`, user);
    if (service === "receive-pack" && !u.pathname.endsWith("/info/refs")) r.record.pushedAt = now();
    return res;
  }

  // ---- the router ----------------------------------------------------------------------

  async function route(req: Request): Promise<Response> {
    const u = new URL(req.url);
    if (u.pathname.startsWith("/api/v3/") || u.pathname === "/api/v3") {
      const p = u.pathname.slice("/api/v3".length) || "/";
      const res = await faulted(req, p);
      requests.push({ method: req.method, path: p, status: res.status });
      return res;
    }
    const w = await web(req, u);
    if (w) return w;
    const g = await gitRoute(req, u);
    if (g) return g;
    return new Response("Not Found", { status: 404, headers: HTML });
  }

  async function faulted(req: Request, p: string): Promise<Response> {
    used++;
    if (faults.fail > 0) {
      faults.fail--;
      return new Response(JSON.stringify({ message: "Server Error" }), { status: faults.failStatus, headers: apiHeaders() });
    }
    if (faults.limit > 0) {
      faults.limit--;
      const reset = String(Math.floor(Date.now() / 1000) + faults.resetIn);
      const headers = apiHeaders({ "x-ratelimit-remaining": "0", "x-ratelimit-used": "5000", "x-ratelimit-reset": reset, "retry-after": String(faults.retryAfter) });
      const message =
        faults.limitStatus === 429
          ? "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
          : "API rate limit exceeded for installation. If you reach out to GitHub Support for help, please include the request ID.";
      return new Response(JSON.stringify({ message, documentation_url: "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api", status: String(faults.limitStatus) }), {
        status: faults.limitStatus,
        headers,
      });
    }
    return api(req, p);
  }

  // ---- helpers for tests ---------------------------------------------------------------

  async function install(
    appSlug: string,
    login: string,
    opts: { repositories?: number | string[]; type?: "Organization" | "User"; selection?: "all" | "selected"; webhook?: boolean; state?: string } = {},
  ) {
    const a = app(appSlug);
    const target = account(login, { type: opts.type ?? "Organization", members: opts.type === "User" ? undefined : [signedIn.login] });
    if (typeof opts.repositories === "number") {
      const have = [...repos.values()].filter((r) => r.record.owner.login === target.login).length;
      for (let i = have; i < opts.repositories; i++) createRepository(target.login, `repo-${String(i + 1).padStart(3, "0")}`);
    } else if (Array.isArray(opts.repositories)) {
      for (const n of opts.repositories) if (!repos.has(repoKey(target.login, n))) createRepository(target.login, n, { files: { "README.md": `# ${n}\n` } });
    }
    const selection = opts.selection ?? (Array.isArray(opts.repositories) ? "selected" : "all");
    const ids =
      selection === "all"
        ? null
        : new Set(
            [...repos.values()]
              .filter((r) => r.record.owner.login === target.login && (!Array.isArray(opts.repositories) || opts.repositories.includes(r.record.name)))
              .map((r) => r.record.id),
          );
    const inst: StandInInstallation = {
      record: { id: id(), app: a.record, account: target, repositorySelection: selection, permissions: a.record.permissions, events: a.record.events, createdAt: now(), suspendedAt: null },
      repositoryIds: ids,
    };
    installations.set(inst.record.id, inst);
    const state = opts.state ?? a.installStates.shift() ?? null;
    let setupRedirect: string | null = null;
    if (a.setupUrl) {
      const to = new URL(a.setupUrl);
      to.searchParams.set("installation_id", String(inst.record.id));
      to.searchParams.set("setup_action", "install");
      if (state !== null) to.searchParams.set("state", state);
      setupRedirect = to.toString();
    }
    let delivery: Delivery | null = null;
    if (a.hookUrl && opts.webhook !== false) delivery = await deliver(a.hookUrl, "installation", payloads.installation(inst.record.id, "created"), { app: a.record.id });
    return { installation: inst, setupRedirect, delivery };
  }

  function merge(owner: string, name: string, number: number): PullRecord {
    const r = repos.get(repoKey(owner, name));
    const pr = r?.pulls.find((x) => x.number === number);
    if (!r || !pr) throw new Error(`no pull request ${owner}/${name}#${number}`);
    const head = refSha(r.dir, pr.head)!;
    const base = refSha(r.dir, pr.base)!;
    const ff = Bun.spawnSync(["git", "merge-base", "--is-ancestor", base, head], { cwd: r.dir }).exitCode === 0;
    const sha = ff ? head : git(r.dir, ["commit-tree", `${head}^{tree}`, "-p", base, "-p", head, "-m", `Merge pull request #${number} from ${owner}/${pr.head}`]);
    git(r.dir, ["update-ref", `refs/heads/${pr.base}`, sha]);
    Object.assign(pr, { state: "closed", headSha: head, closedAt: now(), mergedAt: now(), mergeCommitSha: sha, updatedAt: now() });
    return pr;
  }

  const payloads: GitHubStandIn["payloads"] = {
    installation(installationId, action) {
      const inst = installations.get(installationId);
      if (!inst) throw new Error(`no installation ${installationId}`);
      const p = shapes.webhookTemplate(hosts, "installation", action === "created" ? "created" : action === "deleted" ? "deleted" : action);
      p.action = action;
      p.installation = shapes.installation(hosts, inst.record);
      p.repositories = installationRepos(inst).map((r) => ({ id: r.record.id, node_id: shapes.nodeId("Repository", r.record.id), name: r.record.name, full_name: `${r.record.owner.login}/${r.record.name}`, private: r.record.private }));
      p.sender = shapes.simpleUser(hosts, signedIn);
      delete p.requester;
      return p;
    },
    installationRepositories(installationId, added, removed) {
      const inst = installations.get(installationId);
      if (!inst) throw new Error(`no installation ${installationId}`);
      const mini = (n: string) => {
        const r = repos.get(repoKey(inst.record.account.login, n));
        if (!r) throw new Error(`no repository ${inst.record.account.login}/${n}`);
        return { id: r.record.id, node_id: shapes.nodeId("Repository", r.record.id), name: r.record.name, full_name: `${r.record.owner.login}/${r.record.name}`, private: r.record.private };
      };
      const addedRepos = added.map(mini);
      const removedRepos = removed.map(mini);
      if (inst.repositoryIds) {
        for (const r of addedRepos) inst.repositoryIds.add(r.id);
        for (const r of removedRepos) inst.repositoryIds.delete(r.id);
      }
      const p = shapes.webhookTemplate(hosts, "installation_repositories", added.length ? "added" : "removed");
      p.installation = shapes.installation(hosts, inst.record);
      p.repository_selection = inst.record.repositorySelection;
      p.repositories_added = addedRepos;
      p.repositories_removed = removedRepos;
      p.sender = shapes.simpleUser(hosts, signedIn);
      delete p.requester;
      return p;
    },
    pullRequest(owner, name, number, action) {
      const r = repos.get(repoKey(owner, name));
      const pr = r?.pulls.find((x) => x.number === number);
      if (!r || !pr) throw new Error(`no pull request ${owner}/${name}#${number}`);
      const p = shapes.webhookTemplate(hosts, "pull_request", action === "reopened" ? "reopened" : action === "edited" ? "edited" : action);
      const inst = [...installations.values()].find((i) => installationRepos(i).includes(r));
      p.action = action;
      p.number = pr.number;
      p.pull_request = shapes.pullRequest(hosts, r.record, pr);
      p.repository = shapes.repository(hosts, r.record);
      p.sender = shapes.simpleUser(hosts, signedIn);
      if (inst) p.installation = { id: inst.record.id, node_id: shapes.nodeId("Installation", inst.record.id) };
      if (r.record.owner.type === "Organization") p.organization = shapes.simpleUser(hosts, r.record.owner);
      return p;
    },
  };

  async function deliver(webhookUrl: string, event: string, payload: Json, opts: { app?: string | number; secret?: string } = {}): Promise<Delivery> {
    const a = opts.app !== undefined ? app(opts.app) : apps.size === 1 ? [...apps.values()][0]! : null;
    const secret = opts.secret ?? a?.webhookSecret;
    if (!secret) throw new Error("deliver: which app's secret? pass opts.app or opts.secret");
    const text = JSON.stringify(payload);
    const deliveryId = randomUUID();
    const headers: Record<string, string> = {
      "content-type": "application/json",
      "user-agent": "GitHub-Hookshot/standin",
      "x-github-event": event,
      "x-github-delivery": deliveryId,
      "x-github-hook-id": String(a?.record.id ?? 0),
      "x-hub-signature-256": await signWebhook(secret, text),
    };
    if (a) {
      headers["x-github-hook-installation-target-id"] = String(a.record.id);
      headers["x-github-hook-installation-target-type"] = "integration";
    }
    const res = await fetch(webhookUrl, { method: "POST", headers, body: text });
    const d: Delivery = { url: webhookUrl, event, id: deliveryId, status: res.status, body: await res.text() };
    deliveries.push(d);
    return d;
  }

  return {
    url,
    apiUrl,
    requests,
    deliveries,
    apps,
    installations,
    account,
    signIn(login) {
      signedIn = account(login);
      return signedIn;
    },
    app,
    createApp(manifest, opts = {}) {
      const made = createApp({ url: "http://127.0.0.1/", ...manifest }, opts.org ?? null);
      if (typeof made === "string") throw new Error(made);
      return made;
    },
    install,
    createRepository,
    repository: (owner, name) => repos.get(repoKey(owner, name)),
    repositories: () => [...repos.values()],
    mintToken,
    merge,
    payloads,
    deliver,
    failNext(count, status = 502) {
      faults.fail = count;
      faults.failStatus = status;
    },
    rateLimitNext(count, opts = {}) {
      faults.limit = count;
      faults.limitStatus = opts.status ?? 403;
      faults.resetIn = opts.resetInSeconds ?? 60;
      faults.retryAfter = opts.retryAfterSeconds ?? 60;
    },
    expireTokens() {
      for (const t of tokens.values()) t.expiresAt = 0;
    },
    async close() {
      await server.stop(true);
      rmSync(gitRoot, { recursive: true, force: true });
    },
  };
}

// re-exported for tests that commit to a stand-in repository directly
export { commitFiles, refSha };
