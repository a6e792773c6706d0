// The GitHub client of the code-hosting app: octokit configured for AO_GITHUB_API_URL, app JWTs and
// installation tokens through @octokit/auth-app (never signed by hand), a short-lived token cache
// (memory only: tokens are never written to disk), and GitHub's refusals turned into our answers.
// Octokit loads when first used (src/lazy.ts).
import type { Octokit } from "@octokit/rest";
import { loadGithub } from "../../lazy";
import type { Core } from "../../server/core";
import { ApiError } from "../../server/errors";
import { VERSION } from "../../version";

/** The app's credentials, opened from their sealed form. */
export interface AppCredentials {
  appId: number;
  privateKey: string;
  clientId: string;
  clientSecret: string;
}

/** Octokit logs request failures at warn; we report them ourselves, without tokens. */
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

/** A plain client for AO_GITHUB_API_URL, with a token or none (the manifest conversion needs none). */
export async function apiClient(core: Core, token?: string): Promise<Octokit> {
  const github = await loadGithub();
  return new github.Octokit({ baseUrl: core.config.github.apiUrl, auth: token, userAgent: `ao/${VERSION}`, log: quiet });
}

/** A client authenticated as the app itself (a JWT signed with its private key, by @octokit/auth-app). */
export async function appClient(core: Core, app: AppCredentials): Promise<Octokit> {
  const github = await loadGithub();
  return new github.Octokit({
    baseUrl: core.config.github.apiUrl,
    userAgent: `ao/${VERSION}`,
    log: quiet,
    authStrategy: github.createAppAuth,
    auth: { appId: app.appId, privateKey: app.privateKey, clientId: app.clientId, clientSecret: app.clientSecret },
  });
}

/**
 * The OAuth web flow of the app (a person's own connection). Its token exchange goes to the web
 * host (github.com, or the GHES host), which @octokit/oauth-methods derives from the client's baseUrl.
 */
export async function oauthApp(core: Core, app: AppCredentials) {
  const github = await loadGithub();
  return new github.OAuthApp({
    clientType: "github-app",
    clientId: app.clientId,
    clientSecret: app.clientSecret,
    baseUrl: core.config.github.url,
    Octokit: github.Octokit.defaults({ baseUrl: core.config.github.url, userAgent: `ao/${VERSION}`, log: quiet }) as any,
  });
}

export const WORKER_PERMISSIONS = { contents: "write", pull_requests: "write" } as const;

interface CachedToken {
  token: string;
  expiresAt: number;
}

/** Re-mint when less than this is left: a clone and push of a large repository must fit in it. */
const MIN_LIFE_MS = 10 * 60_000;

const caches = new WeakMap<Core, Map<string, CachedToken>>();
function cacheOf(core: Core) {
  let c = caches.get(core);
  if (!c) caches.set(core, (c = new Map()));
  return c;
}

export interface TokenScope {
  repositoryIds?: number[];
  permissions?: Record<string, "read" | "write">;
}

const keyOf = (installationId: number, scope: TokenScope) =>
  `${installationId}:${[...(scope.repositoryIds ?? [])].sort((a, b) => a - b).join(",")}:${JSON.stringify(scope.permissions ?? {})}`;

/**
 * An installation access token, narrowed to `scope`, from the cache while it has MIN_LIFE_MS left,
 * otherwise minted (POST /app/installations/{id}/access_tokens with the app's JWT).
 */
export async function installationToken(core: Core, app: AppCredentials, installationId: number, scope: TokenScope = {}): Promise<CachedToken> {
  const cache = cacheOf(core);
  const key = keyOf(installationId, scope);
  const hit = cache.get(key);
  if (hit && hit.expiresAt - Date.now() > MIN_LIFE_MS) return hit;
  const github = await loadGithub();
  const auth = github.createAppAuth({ appId: app.appId, privateKey: app.privateKey, request: (await apiClient(core)).request, log: quiet });
  // refresh: @octokit/auth-app keeps its own cache, which would hand back a token GitHub has revoked.
  const minted = await auth({ type: "installation", installationId, repositoryIds: scope.repositoryIds, permissions: scope.permissions, refresh: true });
  const fresh = { token: minted.token, expiresAt: Date.parse(minted.expiresAt) };
  if (cache.size > 5_000) cache.clear();
  cache.set(key, fresh);
  return fresh;
}

/** GitHub said a token of this installation is no longer good (401): every cached one goes. */
export function forgetInstallationTokens(core: Core, installationId: number) {
  const cache = cacheOf(core);
  for (const key of cache.keys()) if (key.startsWith(`${installationId}:`)) cache.delete(key);
}

/**
 * Runs `fn` with a client holding an installation token. A 401 means GitHub no longer takes the
 * token (expired or revoked early): a new one is minted and `fn` runs once more.
 */
export async function withInstallation<T>(core: Core, app: AppCredentials, installationId: number, fn: (octokit: Octokit) => Promise<T>): Promise<T> {
  const first = await installationToken(core, app, installationId);
  try {
    return await fn(await apiClient(core, first.token));
  } catch (err) {
    if (statusOf(err) !== 401) throw err;
    core.log.warn("GitHub refused an installation token (401): minting a new one", { installationId });
    forgetInstallationTokens(core, installationId);
    const second = await installationToken(core, app, installationId);
    return fn(await apiClient(core, second.token));
  }
}

export function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown })?.status;
  return typeof status === "number" ? status : undefined;
}

function headerOf(err: unknown, name: string): string | undefined {
  const headers = (err as { response?: { headers?: Record<string, unknown> } })?.response?.headers;
  const value = headers?.[name];
  return value === undefined || value === null ? undefined : String(value);
}

export interface Trouble {
  /** Worth trying again later: a 5xx, a rate limit, a network failure. */
  transient: boolean;
  /** When GitHub said to come back (Retry-After, x-ratelimit-reset), in ms from now. */
  retryAfterMs: number | null;
  status: number | null;
  /** For logs and the timeline: what GitHub answered, never a token. */
  message: string;
}

/** What a failed GitHub call means for us. */
export function troubleOf(err: unknown): Trouble {
  const status = statusOf(err) ?? null;
  const retryAfter = Number(headerOf(err, "retry-after"));
  const remaining = headerOf(err, "x-ratelimit-remaining");
  const reset = Number(headerOf(err, "x-ratelimit-reset"));
  const data = (err as { response?: { data?: { message?: unknown; errors?: { message?: unknown; field?: unknown; code?: unknown }[] } } })?.response?.data;
  // A 422 says what it refused in errors[] (e.g. "A pull request already exists for ...").
  const details = Array.isArray(data?.errors) ? data.errors.map((e) => String(e.message ?? [e.field, e.code].filter(Boolean).join(" "))).join("; ") : "";
  const gh = (String(data?.message ?? (err as Error)?.message ?? err) + (details ? ` (${details})` : "")).slice(0, 300);
  let retryAfterMs: number | null = null;
  if (Number.isFinite(retryAfter) && retryAfter >= 0) retryAfterMs = retryAfter * 1000;
  else if (remaining === "0" && Number.isFinite(reset) && reset > 0) retryAfterMs = Math.max(0, reset * 1000 - Date.now());
  // GitHub's primary rate limit is a 403 (or 429) with x-ratelimit-remaining: 0; its secondary one carries retry-after.
  const rateLimited = (status === 403 || status === 429) && (remaining === "0" || retryAfterMs !== null);
  if (rateLimited) {
    return { transient: true, retryAfterMs, status, message: `GitHub's rate limit is reached (${status}): ${gh}` };
  }
  if (status === null) return { transient: true, retryAfterMs: null, status, message: `GitHub could not be reached: ${gh}` };
  if (status >= 500) return { transient: true, retryAfterMs, status, message: `GitHub answered ${status}: ${gh}` };
  return { transient: false, retryAfterMs: null, status, message: `GitHub answered ${status}: ${gh}` };
}

/**
 * A failed GitHub call during a request of ours: 503 with Retry-After when it is worth trying again
 * (GitHub's 5xx or rate limit), 502 otherwise, both saying what GitHub answered.
 */
export function githubFailure(err: unknown, doing: string): ApiError {
  if (err instanceof ApiError) return err;
  const trouble = troubleOf(err);
  if (trouble.transient) {
    const seconds = Math.max(1, Math.ceil((trouble.retryAfterMs ?? 30_000) / 1000));
    return new ApiError(503, "codehost_unavailable", `${doing}: ${trouble.message}; try again in ${seconds} s`, { status: trouble.status, retryAfterSec: seconds }, {
      "retry-after": String(seconds),
    });
  }
  return new ApiError(502, "codehost_error", `${doing}: ${trouble.message}`, { status: trouble.status });
}
