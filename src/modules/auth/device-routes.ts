// Device sign-in (SPEC §4, RFC 8628): the device starts and polls; the person looks the user
// code up, then approves or denies it from a signed-in session.
import { Elysia, t } from "elysia";
import { parseOptionalJson } from "../../server/strict";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { errorAnswers, notFound } from "../../server/errors";
import { createGrant, decideGrant, findPendingGrant, grantView, pollError, pollGrant, type GrantLimits, type GrantRow } from "./device-grants";
import { countingFailures } from "./limits";
import { sessionUser, startSession } from "./service";
import { clientIp, tokenAnswer } from "./http";
import { DeviceGrantView, DevicePollBody, DeviceStart, DeviceStartBody, TokenPair, UserCodeBody } from "./model";

const view = (g: GrantRow) => {
  const v = grantView(g);
  return { userCode: v.userCode, status: v.status, clientName: v.clientName, requestIp: v.requestIp, createdAt: v.createdAt, expiresAt: v.expiresAt };
};

/**
 * Starting a device sign-in needs no credential, so open (undecided) sign-ins are capped: 20 per
 * client address, 1,000 in all. Finished ones free their place, so this is no limit on how often a
 * client signs in (SPEC §4 counts failures only); it bounds what strangers can make the server store.
 */
export const SIGNIN_START_LIMITS: GrantLimits = { perAddress: 20, total: 1000 };

export default (core: Core) => {
  // An unknown or expired user code counts as a failure of the person (apart from their sign-in) and of the address.
  const decide = (ctx: { principal: { userId: string }; server: any; request: Request }, find: () => Promise<GrantRow | null>) =>
    countingFailures(core, { account: ctx.principal.userId, ip: clientIp(ctx), kind: "code_decision" }, ["not_found"], async () => {
      const grant = await find();
      if (!grant) throw notFound("device code");
      return view(grant);
    });

  /** One poll; an approved grant becomes a session in the same transaction, so a sign-in is never lost half-way. */
  function* signIn(deviceCode: string) {
    const result = yield* pollGrant(core, "signin", deviceCode);
    if (result.status !== "approved") return result;
    const user = yield* sessionUser(core, result.grant.decidedBy!);
    return { user, issued: yield* startSession(core, user.id, "device") };
  }

  return new Elysia({ name: "auth-device", seed: core.instanceId, tags: ["auth"] })
    .use(authPlugin(core))
    .post(
      "/auth/device/start",
      async (ctx) => {
        const g = await core.store.write(
          createGrant(core, "signin", { clientName: ctx.body?.clientName ?? null, requestIp: clientIp(ctx) }, Date.now(), SIGNIN_START_LIMITS),
        );
        const verificationUri = `${core.config.publicUrl}/device`;
        return {
          deviceCode: g.deviceCode,
          userCode: g.userCode,
          verificationUri,
          verificationUriComplete: `${verificationUri}?code=${g.userCode}`,
          expiresIn: g.expiresIn,
          intervalSec: g.intervalSec,
        };
      },
      {
        body: t.Optional(DeviceStartBody),
        parse: [parseOptionalJson, "json"],
        response: { 200: DeviceStart, ...errorAnswers(400, 429) },
        detail: {
          summary: "Start device sign-in",
          security: [],
          description:
            "The device code expires after 600 s and yields one sign-in. At most 20 undecided sign-ins per client address " +
            "(1,000 in all) may be open at once; past that 429 rate_limited with Retry-After.",
        },
      },
    )
    .post(
      "/auth/device/poll",
      async (ctx) => {
        const signedIn = await core.store.write(signIn(ctx.body.deviceCode));
        if ("status" in signedIn) throw pollError(signedIn);
        return tokenAnswer(core, ctx, signedIn.issued, signedIn.user, false);
      },
      {
        body: DevicePollBody,
        response: { 200: TokenPair, ...errorAnswers(400) },
        detail: {
          summary: "Poll device sign-in",
          security: [],
          description:
            "400 authorization_pending | slow_down (polled sooner than intervalSec after the previous poll; the interval grows by 5 s, " +
            "details.intervalSec) | access_denied | expired_token (also for unknown and spent codes); 200 with the token pair once.",
        },
      },
    )
    .get("/auth/device/:userCode", (ctx) => decide(ctx, () => core.store.read(findPendingGrant(core, "signin", ctx.params.userCode))), {
      auth: "session",
      params: t.Object({ userCode: t.String({ maxLength: 20 }) }),
      response: { 200: DeviceGrantView, ...errorAnswers(401, 403, 404, 429) },
      detail: { summary: "Describe a pending device sign-in before deciding it" },
    })
    .post(
      "/auth/device/approve",
      (ctx) => decide(ctx, () => core.store.write(decideGrant(core, "signin", ctx.body.userCode, { approve: true, decidedBy: ctx.principal.userId }))),
      {
        auth: "session",
        body: UserCodeBody,
        response: { 200: DeviceGrantView, ...errorAnswers(400, 401, 403, 404, 429) },
        detail: { summary: "Approve a device sign-in: the device is signed in as the caller" },
      },
    )
    .post(
      "/auth/device/deny",
      (ctx) => decide(ctx, () => core.store.write(decideGrant(core, "signin", ctx.body.userCode, { approve: false, decidedBy: ctx.principal.userId }))),
      {
        auth: "session",
        body: UserCodeBody,
        response: { 200: DeviceGrantView, ...errorAnswers(400, 401, 403, 404, 429) },
        detail: { summary: "Deny a device sign-in" },
      },
    );
};
