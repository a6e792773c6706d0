// A local stand-in for github.com, its REST API and git over HTTP, for tests. It plays a GitHub
// Enterprise Server: the web side at `url`, the API at `apiUrl` (= url + "/api/v3", which is
// where GitHub's own clients look for GHES, so the OAuth token exchange lands here too) and
// git at `url/:owner/:repo.git`. Answers carry GitHub's recorded shapes (./github/shapes.ts),
// app JWTs and tokens are checked as GitHub checks them, and repositories are real bare git
// repositories served by git-http-backend.
import { rmSync } from "node:fs";
import type { Account, PullRecord } from "./github/shapes";
import { commitFiles, refSha } from "./github/git-http";
import { World, type Delivery, type Json, type Permissions, type StandInApp, type StandInInstallation, type StandInRepository } from "./github/world";
import { answers, HTML } from "./github/answers";
import { gitRoute, web } from "./github/web";
import { api } from "./github/api";
import { scenario } from "./github/scenario";

export type { Delivery, StandInApp, StandInInstallation, StandInRepository };

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

export async function startGitHubStandIn(): Promise<GitHubStandIn> {
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 120, fetch: (req) => route(req) });
  const world = new World(`http://127.0.0.1:${server.port}`);
  const { faults, tokens } = world;
  const { apiHeaders } = answers(world);
  const { install, merge, payloads, deliver } = scenario(world);

  // ---- the router ----------------------------------------------------------------------

  async function route(req: Request): Promise<Response> {
    const u = new URL(req.url);
    if (u.pathname.startsWith("/api/v3/") || u.pathname === "/api/v3") {
      const p = u.pathname.slice("/api/v3".length) || "/";
      const res = await faulted(req, p);
      world.requests.push({ method: req.method, path: p, status: res.status });
      return res;
    }
    const w = await web(world, req, u);
    if (w) return w;
    const g = await gitRoute(world, req, u);
    if (g) return g;
    return new Response("Not Found", { status: 404, headers: HTML });
  }

  async function faulted(req: Request, p: string): Promise<Response> {
    world.used++;
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
    return api(world, req, p);
  }

  return {
    url: world.url,
    apiUrl: world.apiUrl,
    requests: world.requests,
    deliveries: world.deliveries,
    apps: world.apps,
    installations: world.installations,
    account: (login, opts) => world.account(login, opts),
    signIn(login) {
      world.signedIn = world.account(login);
      return world.signedIn;
    },
    app: (slugOrId) => world.app(slugOrId),
    createApp(manifest, opts = {}) {
      const made = world.createApp({ url: "http://127.0.0.1/", ...manifest }, opts.org ?? null);
      if (typeof made === "string") throw new Error(made);
      return made;
    },
    install,
    createRepository: (owner, name, opts) => world.createRepository(owner, name, opts),
    repository: (owner, name) => world.repos.get(world.repoKey(owner, name)),
    repositories: () => [...world.repos.values()],
    mintToken: (installationId, opts) => world.mintToken(installationId, opts),
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
      rmSync(world.gitRoot, { recursive: true, force: true });
    },
  };
}

// re-exported for tests that commit to a stand-in repository directly
export { commitFiles, refSha };
