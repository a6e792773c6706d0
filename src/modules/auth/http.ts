// Small pieces the auth routes share: the client address, the web client's refresh cookie and
// the token pair answer. Route-side only (services never see cookies or JWT signers).
import type { Cookie } from "elysia";
import type { Server } from "bun";
import type { Core } from "../../server/core";
import { clientAddressOf } from "../../server/client-address";
import { REFRESH_TOKEN_TTL_MS, type IssuedSession } from "./service";
import { userView, type UserRow } from "./users";

export const REFRESH_COOKIE = "ao_refresh";
export const REFRESH_COOKIE_PATH = "/api/v1/auth";

/** The caller's address: the connection's, or the one a trusted proxy forwarded (AO_TRUSTED_PROXIES). */
export function clientIp(ctx: { server: Server<any> | null; request: Request }): string | null {
  return clientAddressOf(ctx.request) ?? ctx.server?.requestIP(ctx.request)?.address ?? null;
}

export const isWebClient = (headers: Record<string, string | undefined>) => headers["x-client"]?.toLowerCase() === "web";

type Signer = { sign(payload: Record<string, string | number>): Promise<string> };

/**
 * The answer of login, refresh and device poll. A web client gets the refresh token as an
 * HttpOnly cookie instead of in the body, so page scripts never hold it.
 */
export async function tokenAnswer(
  core: Core,
  ctx: { accessJwt: Signer; cookie: Record<string, Cookie<unknown>> },
  issued: IssuedSession,
  user: UserRow,
  web: boolean,
) {
  const accessToken = await ctx.accessJwt.sign({ sub: issued.userId, sid: issued.sessionId, typ: "access" });
  const base = { accessToken, expiresIn: core.config.accessTokenTtlSec, user: userView(user) };
  if (!web) return { ...base, refreshToken: issued.refreshToken };
  ctx.cookie[REFRESH_COOKIE].set({
    value: issued.refreshToken,
    httpOnly: true,
    sameSite: "strict",
    path: REFRESH_COOKIE_PATH,
    secure: core.config.publicUrl.startsWith("https:"),
    maxAge: Math.floor(REFRESH_TOKEN_TTL_MS / 1000),
  });
  return base;
}

export function clearRefreshCookie(core: Core, cookie: Record<string, Cookie<unknown>>) {
  cookie[REFRESH_COOKIE].set({
    value: "",
    httpOnly: true,
    sameSite: "strict",
    path: REFRESH_COOKIE_PATH,
    secure: core.config.publicUrl.startsWith("https:"),
    maxAge: 0,
  });
}

export const noContent = () => new Response(null, { status: 204 });
