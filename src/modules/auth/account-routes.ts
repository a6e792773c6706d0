// The caller's own account: who am I, personal API tokens, two-factor authentication.
// Tokens cannot manage tokens or two-factor ({ auth: "session" }).
import { Elysia, t } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { createApiToken, deleteApiToken, listApiTokens } from "./api-tokens";
import { disableTwoFactor, enableTwoFactor, setupTwoFactor } from "./two-factor";
import { sessionUser } from "./service";
import { accessChanged } from "./principal";
import { userView } from "./users";
import { clearRefreshCookie, clientIp, noContent } from "./http";
import { CodeBody, CreatedToken, CreateTokenBody, Me, RecoveryCodes, RenameBody, SessionView, TokenView, TwoFactorSetup, UserView } from "./model";
import { listSessions, renameUser, revokeAllSessions } from "./sessions";
import { renamed } from "./people";
import { PageQuery, pageOfSchema } from "../orgs/model";
import { noBody, refuseUnknownFields } from "../../server/strict";
import { errorAnswers, noContentDoc } from "../../server/errors";

export default (core: Core) => {
  const me = (userId: string) => core.store.read(sessionUser(core, userId));
  return new Elysia({ name: "auth-account", seed: core.instanceId, tags: ["account"] })
    .use(authPlugin(core))
    .get(
      "/me",
      async ({ principal }) => ({
        ...userView(await me(principal.userId)),
        via:
          principal.kind === "user"
            ? { type: "session" as const, sessionId: principal.sessionId }
            : { type: "token" as const, tokenId: principal.tokenId, orgId: principal.orgId, role: principal.role },
      }),
      { auth: "any", response: { 200: Me, ...errorAnswers(401, 403) }, detail: { summary: "The caller, and whether a session or a personal API token is speaking" } },
    )
    .patch(
      "/me",
      async ({ principal, body }) => {
        const user = await core.store.write(renameUser(core, principal.userId, body.name));
        // Claims name a task's creator, and token principals their owner: read afresh.
        renamed(core);
        return userView(user);
      },
      {
        auth: "session",
        body: RenameBody,
        transform: refuseUnknownFields(RenameBody),
        response: { 200: UserView, ...errorAnswers(400, 401, 403) },
        detail: { summary: "Change the caller's display name" },
      },
    )
    .get("/me/sessions", ({ principal, query }) => core.store.read(listSessions(core, principal.userId, principal.kind === "user" ? principal.sessionId : "", query)), {
      auth: "session",
      query: PageQuery,
      response: { 200: pageOfSchema(SessionView), ...errorAnswers(400, 401, 403) },
      detail: { summary: "The caller's sign-ins that were not revoked, newest first (current marks this one)" },
    })
    .delete(
      "/me/sessions",
      async ({ principal, cookie }) => {
        if ((await core.store.write(revokeAllSessions(core, principal.userId))) > 0) accessChanged(core, principal.userId, "session_revoked");
        clearRefreshCookie(core, cookie);
        return noContent();
      },
      {
        auth: "session",
        detail: {
          summary: "Sign out everywhere: revokes every session of the caller, this one included",
          description: "Their access tokens and live sockets stop at once; personal API tokens are not affected (revoke them with DELETE /me/tokens/:id).",
          responses: noContentDoc("Every session is revoked", 401, 403),
        },
      },
    )
    .post("/me/tokens", async ({ principal, body, status }) => status(201, await core.store.write(createApiToken(core, principal.userId, body))), {
      auth: "session",
      body: CreateTokenBody,
      transform: refuseUnknownFields(CreateTokenBody),
      response: { 201: CreatedToken, ...errorAnswers(400, 401, 403, 404) },
      detail: {
        summary: "Create a personal API token (value shown once)",
        description:
          "role defaults to, and may not exceed (403), the caller's current role in orgId; an org the caller is not in is 404. " +
          "The token then acts with min(its role, the owner's current role), in that org only.",
      },
    })
    .get("/me/tokens", ({ principal, query }) => core.store.read(listApiTokens(core, principal.userId, query)), {
      auth: "session",
      query: PageQuery,
      response: { 200: pageOfSchema(TokenView), ...errorAnswers(400, 401, 403) },
      detail: { summary: "The caller's personal API tokens, newest first, without their values" },
    })
    .delete(
      "/me/tokens/:id",
      async ({ principal, params }) => {
        await core.store.write(deleteApiToken(core, principal.userId, params.id));
        accessChanged(core, principal.userId, "token_revoked");
        return noContent();
      },
      {
        auth: "session",
        params: t.Object({ id: t.String() }),
        detail: { summary: "Revoke a personal API token", responses: noContentDoc("Revoked: the token stops working at once", 401, 403, 404) },
      },
    )
    .post("/me/2fa/setup", async ({ principal }) => core.store.write(setupTwoFactor(core, await me(principal.userId))), {
      auth: "session",
      ...noBody,
      response: { 200: TwoFactorSetup, ...errorAnswers(400, 401, 403, 409) },
      detail: { summary: "Start two-factor enrolment: a TOTP secret (enforced only after enable)", description: "409 when already enabled." },
    })
    .post(
      "/me/2fa/enable",
      async (ctx) => ({ recoveryCodes: await enableTwoFactor(core, await me(ctx.principal.userId), ctx.body.code, clientIp(ctx)) }),
      {
        auth: "session",
        body: CodeBody,
        response: { 200: RecoveryCodes, ...errorAnswers(400, 401, 403, 409, 429) },
        detail: {
          summary: "Confirm enrolment with a current code; returns 10 single-use recovery codes",
          description: "A wrong code is 400 invalid_two_factor_code (not 401: the session is fine) and counts towards the rate limit.",
        },
      },
    )
    .post(
      "/me/2fa/disable",
      async (ctx) => {
        await disableTwoFactor(core, await me(ctx.principal.userId), ctx.body.code, clientIp(ctx));
        return noContent();
      },
      {
        auth: "session",
        body: CodeBody,
        detail: {
          summary: "Turn two-factor off with a current code or a recovery code",
          description: "Wrong code: 400 invalid_two_factor_code.",
          responses: noContentDoc("Two-factor authentication is off", 400, 401, 403, 409, 429),
        },
      },
    );
};
