// Pairing from the person's side (SPEC §7): a signed-in session only (personal API tokens and
// worker credentials are refused). Unknown or expired codes count as failures (rate limited).
import { Elysia, t } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { notFound } from "../../server/errors";
import { countingFailures } from "../auth/limits";
import { clientIp } from "../auth/http";
import type { GrantRow } from "../auth/device-grants";
import { ApprovePairingBody, ErrorBody, PairingView, UserCodeBody } from "./model";
import { approvePairing, denyPairing, describePairing, pairingView } from "./pairing";

const tags = ["workers"];
const responses = { 200: PairingView, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 429: ErrorBody };

export default (core: Core) => {
  const decide = (ctx: { principal: { userId: string }; server: any; request: Request }, find: () => Promise<GrantRow | null>) =>
    countingFailures(core, { account: ctx.principal.userId, ip: clientIp(ctx), kind: "code_decision" }, ["not_found"], async () => {
      const grant = await find();
      if (!grant) throw notFound("pairing code");
      return pairingView(grant);
    });

  return new Elysia({ name: "workers-pairing", seed: core.instanceId })
    .use(authPlugin(core))
    .get("/pairing/:userCode", (ctx) => decide(ctx, () => core.store.read(describePairing(core, ctx.params.userCode))), {
      auth: "session",
      params: t.Object({ userCode: t.String({ maxLength: 20 }) }),
      response: responses,
      detail: { summary: "Describe a pending pairing (name, hostname, labels, when, from which address)", tags },
    })
    .post("/pairing/approve", (ctx) => decide(ctx, () => core.store.write(approvePairing(core, ctx.principal.userId, ctx.body.userCode, ctx.body.orgId))), {
      auth: "session",
      body: ApprovePairingBody,
      response: { ...responses, 400: ErrorBody },
      detail: {
        summary: "Approve a pairing into an organization",
        description:
          "The caller needs task.create in orgId (owner, admin or member). With requireWorkerApproval the new worker is pending_approval until POST /orgs/:orgId/workers/:workerId/approve.",
        tags,
      },
    })
    .post("/pairing/deny", (ctx) => decide(ctx, () => core.store.write(denyPairing(core, ctx.principal.userId, ctx.body.userCode))), {
      auth: "session",
      body: UserCodeBody,
      response: { ...responses, 400: ErrorBody },
      detail: { summary: "Deny a pairing", tags },
    });
};
