// Sign-in routes: password login, refresh, logout, first-run setup; device sign-in, the
// caller's account and instance administration are mounted from their own files.
import { Elysia, t } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { errorAnswers, invalid, noContentDoc, unauthorized } from "../../server/errors";
import { completeSetup } from "../../server/bootstrap";
import { setupPending } from "./setup-tokens";
import { userView } from "./users";
import { login, revokeSession, rotateRefreshToken, sessionUser, startSession } from "./service";
import { countingFailures, failureGuard } from "./limits";
import { clearRefreshCookie, clientIp, isWebClient, noContent, REFRESH_COOKIE, tokenAnswer } from "./http";
import { ClientHeaders, LoginBody, RefreshBody, SetupBody, SetupState, TokenPair, UserView } from "./model";
import { OrgView } from "../orgs/model";
import deviceRoutes from "./device-routes";
import accountRoutes from "./account-routes";
import adminRoutes from "./admin-routes";
import { noBody, refuseUnknownFields, parseOptionalJson } from "../../server/strict";

export default (core: Core) => {
  // Made now, so that it counts the other servers' failures from the start (PostgreSQL).
  failureGuard(core);
  return new Elysia({ name: "auth", seed: core.instanceId, prefix: "/api/v1", tags: ["auth"] })
    .use(authPlugin(core))
    .post(
      "/auth/login",
      async (ctx) => {
        const user = await login(core, ctx.body, clientIp(ctx));
        const web = isWebClient(ctx.headers);
        return tokenAnswer(core, ctx, await core.store.write(startSession(core, user.id, web ? "web" : "cli")), user, web);
      },
      {
        body: LoginBody,
        headers: ClientHeaders,
        response: { 200: TokenPair, ...errorAnswers(400, 401, 429) },
        detail: {
          summary: "Password sign-in",
          security: [],
          description:
            "401 invalid_credentials (same answer for an unknown email), two_factor_required, invalid_two_factor_code. " +
            "With x-client: web the refresh token is set as the ao_refresh cookie instead of returned. Failures are rate limited (429).",
        },
      },
    )
    .post(
      "/auth/refresh",
      async (ctx) => {
        const web = isWebClient(ctx.headers);
        // The web client's refresh token is the cookie: one in the body as well would be ignored.
        if (web && ctx.body?.refreshToken !== undefined) {
          throw invalid("with x-client: web the refresh token is the ao_refresh cookie, not refreshToken", [
            { field: "refreshToken", message: "not with x-client: web (the cookie is used)" },
          ]);
        }
        const presented = web ? ctx.cookie[REFRESH_COOKIE].value : ctx.body?.refreshToken;
        if (typeof presented !== "string" || presented === "") {
          throw unauthorized(web ? "no ao_refresh cookie" : "refreshToken is required");
        }
        const issued = await rotateRefreshToken(core, presented);
        return tokenAnswer(core, ctx, issued, await core.store.read(sessionUser(core, issued.userId)), web);
      },
      {
        body: t.Optional(RefreshBody),
        parse: [parseOptionalJson, "json"],
        headers: ClientHeaders,
        response: { 200: TokenPair, ...errorAnswers(400, 401) },
        detail: {
          summary: "Rotate the refresh token",
          security: [],
          description:
            "Each refresh token works once; the refresh token lives 30 days. Presenting a used one answers 401 refresh_token_reused " +
            "and revokes the whole sign-in (its access tokens stop at once).",
        },
      },
    )
    .post(
      "/auth/logout",
      async ({ principal, cookie }) => {
        if (principal.kind === "user") await revokeSession(core, principal.sessionId, "logout");
        clearRefreshCookie(core, cookie);
        return noContent();
      },
      { auth: "session", ...noBody, detail: { summary: "Sign out: revokes the caller's session family", responses: noContentDoc("Signed out", 400, 401, 403) } },
    )
    .get("/setup", async () => ({ required: await core.store.read(setupPending()) }), {
      response: SetupState,
      detail: { summary: "Whether first-run setup is still open (no user exists; on any server of the database)", security: [] },
    })
    .post(
      "/setup",
      async (ctx) => {
        const { user, org } = await countingFailures(core, { ip: clientIp(ctx) }, ["unauthorized"], () => completeSetup(core, ctx.body));
        return ctx.status(201, { user: userView(user), org: { ...org, role: "owner" as const } });
      },
      {
        body: SetupBody,
      transform: refuseUnknownFields(SetupBody),
        response: { 201: t.Object({ user: UserView, org: OrgView }), ...errorAnswers(400, 401, 409, 429) },
        detail: {
          summary: "First-run setup with the one-time token from the server log",
          security: [],
          description: "Creates the first user (instance administrator) and their organization. 409 conflict once any user exists.",
        },
      },
    )
    .use(deviceRoutes(core))
    .use(accountRoutes(core))
    .use(adminRoutes(core));
};
