// The HTTP client of the command line: JSON in and out, the API's error format turned into
// ApiFailure, and for a signed-in session the refresh by rotation (single-flighted in this
// process, locked across processes) when the access token runs out or is refused.
import { ApiFailure, CliError, Unreachable } from "./errors";
import { readSession, withSessionLock, writeSession, type Session } from "./config";

/** Refresh this long before the access token's expiry, so a request never races it. */
const EXPIRY_MARGIN_MS = 30_000;
const REQUEST_TIMEOUT_MS = 30_000;

export type Auth = { kind: "token"; token: string } | { kind: "session"; session: Session; configDir: string } | { kind: "none" };

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined>;
}

/** The server's base URL without a trailing slash or /api/v1. */
export function normalizeServer(url: string): string {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new CliError(`'${url}' is not a URL (expected e.g. https://ao.example.com)`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new CliError(`'${url}' must be an http or https URL`);
  return (u.origin + u.pathname).replace(/\/+$/, "").replace(/\/api\/v1$/, "");
}

export class ApiClient {
  private refreshing: Promise<void> | null = null;

  constructor(
    readonly server: string,
    private auth: Auth,
  ) {}

  get kind() {
    return this.auth.kind;
  }

  get session(): Session | null {
    return this.auth.kind === "session" ? this.auth.session : null;
  }

  wsUrl(): string {
    return this.server.replace(/^http/, "ws") + "/api/v1/ws";
  }

  /** A bearer value that should still be valid, refreshing the session first if needed. */
  async accessToken(): Promise<string | null> {
    const auth = this.auth;
    if (auth.kind === "token") return auth.token;
    if (auth.kind === "none") return null;
    if (expiresSoon(auth.session)) await this.refresh(auth.session.accessToken);
    return (this.auth as typeof auth).session.accessToken;
  }

  async request<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const token = await this.accessToken();
    try {
      return await this.send<T>(method, path, opts, token);
    } catch (err) {
      // A refused access token of a session: rotate once and try again.
      if (err instanceof ApiFailure && err.status === 401 && this.auth.kind === "session" && token) {
        await this.refresh(token);
        return await this.send<T>(method, path, opts, this.auth.session.accessToken);
      }
      throw err;
    }
  }

  private async send<T>(method: string, path: string, opts: RequestOptions, token: string | null): Promise<T> {
    const url = new URL(this.server + "/api/v1" + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: "application/json" };
    if (token) headers.authorization = `Bearer ${token}`;
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw new Unreachable(`cannot reach ${this.server}: ${err instanceof Error ? err.message : String(err)}`);
    }
    const text = await res.text();
    let body: any = null;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    if (res.ok) return body as T;
    const e = body && typeof body === "object" && body.error && typeof body.error === "object" ? body.error : null;
    throw new ApiFailure(res.status, e?.code ?? `http_${res.status}`, e?.message ?? `${method} ${path} answered ${res.status}`, e?.details);
  }

  /** Rotates the session's refresh token, once per stale access token however many callers ask. */
  private refresh(staleAccess: string): Promise<void> {
    const auth = this.auth;
    if (auth.kind !== "session" || auth.session.accessToken !== staleAccess) return Promise.resolve();
    this.refreshing ??= this.rotate(auth).finally(() => (this.refreshing = null));
    return this.refreshing;
  }

  private async rotate(auth: Extract<Auth, { kind: "session" }>): Promise<void> {
    await withSessionLock(async () => {
      // Another ao process may have rotated while we waited for the lock: use its pair.
      const onDisk = readSession(auth.configDir);
      if (onDisk && onDisk.refreshToken !== auth.session.refreshToken && onDisk.server === auth.session.server) {
        this.auth = { ...auth, session: onDisk };
        if (!expiresSoon(onDisk)) return;
      }
      const current = (this.auth as typeof auth).session;
      let pair: { accessToken: string; refreshToken: string; expiresIn?: number };
      try {
        pair = await this.send("POST", "/auth/refresh", { body: { refreshToken: current.refreshToken } }, null);
      } catch (err) {
        if (err instanceof ApiFailure && err.code === "refresh_token_reused") {
          throw new CliError("your sign-in was revoked: its refresh token had already been used (by another copy of the session?); run `ao login` again");
        }
        if (err instanceof ApiFailure && err.status === 401) throw new CliError(`your session has ended (${err.message}); run \`ao login\` again`);
        throw err;
      }
      const session: Session = { ...current, accessToken: pair.accessToken, refreshToken: pair.refreshToken, accessTokenExpiresAt: expiryOf(pair) };
      writeSession(session, auth.configDir);
      this.auth = { ...auth, session };
    }, auth.configDir);
  }
}

/** When an access token from a sign-in answer stops working. */
export function expiryOf(pair: { accessToken: string; expiresIn?: number }): string | undefined {
  if (typeof pair.expiresIn === "number") return new Date(Date.now() + pair.expiresIn * 1000).toISOString();
  const exp = jwtExpiry(pair.accessToken);
  return exp === null ? undefined : new Date(exp).toISOString();
}

function jwtExpiry(token: string): number | null {
  const part = token.split(".")[1];
  if (!part) return null;
  try {
    const claims = JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as { exp?: unknown };
    return typeof claims.exp === "number" ? claims.exp * 1000 : null;
  } catch {
    return null;
  }
}

function expiresSoon(s: Session): boolean {
  const at = s.accessTokenExpiresAt ? Date.parse(s.accessTokenExpiresAt) : jwtExpiry(s.accessToken);
  return at !== null && !Number.isNaN(at) && at - Date.now() < EXPIRY_MARGIN_MS;
}
