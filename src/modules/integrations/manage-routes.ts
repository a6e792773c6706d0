// Integration and completion-webhook management, delivery logs and redelivery (settings.manage).
import { Elysia, t } from "elysia";
import type { Core } from "../../server/core";
import { authPlugin } from "../../server/auth";
import { createIntegration, deleteIntegration, getIntegration, listIntegrations, rotateIntegrationSecret, updateIntegration } from "./service";
import { deletePlugin, getPlugin, putPlugin, rotatePluginSecret } from "./plugins";
import { getDelivery, listDeliveries, redeliver } from "./deliveries";
import { relayOf } from "./relay";
import {
  DeliveriesQuery,
  DeliveryDetail,
  DeliveryRecord,
  IntegrationCreate,
  IntegrationPatch,
  IntegrationRecord,
  IntegrationWithSecret,
  PageQuery,
  PluginPut,
  PluginRecord,
  PluginWithSecret,
} from "./model";
import { noBody, refuseUnknownFields } from "../../server/strict";
import { errorAnswers, noContentDoc } from "../../server/errors";

const OrgParams = t.Object({ orgId: t.String() });
const IntegrationParams = t.Object({ orgId: t.String(), id: t.String() });
const DeliveryParams = t.Object({ orgId: t.String(), id: t.String(), deliveryId: t.String() });
const PluginDeliveryParams = t.Object({ orgId: t.String(), deliveryId: t.String() });
const pageOf = <T extends Parameters<typeof t.Array>[0]>(item: T) => t.Object({ items: t.Array(item), nextCursor: t.Nullable(t.String()) });
const tags = ["integrations"];
const DELIVERY_LOG =
  "`status` lists only the deliveries in that status: pending (waiting for its next try), delivering, succeeded, or failed (given up: out of tries, a refused target, or 410 Gone).";

export const manageRoutes = (core: Core) =>
  new Elysia({ name: "integrations-manage", seed: core.instanceId, prefix: "/api/v1" })
    .use(authPlugin(core))
    .get("/orgs/:orgId/integrations", ({ orgId, query }) => core.store.read(listIntegrations(core, orgId, query)), {
      permission: "settings.manage",
      params: OrgParams,
      query: PageQuery,
      response: { 200: pageOf(IntegrationRecord), ...errorAnswers(400, 401, 403, 404) },
      detail: { summary: "List integrations, newest first (secrets are never listed, only their last 4 characters)", tags },
    })
    .post("/orgs/:orgId/integrations", async ({ orgId, body, status }) => status(201, await createIntegration(core, orgId, body)), {
      permission: "settings.manage",
      params: OrgParams,
      body: IntegrationCreate,
      transform: refuseUnknownFields(IntegrationCreate),
      response: { 201: IntegrationWithSecret, ...errorAnswers(400, 401, 403, 404, 409) },
      detail: {
        summary: "Create an integration; the secret is in this answer only",
        description: "callbackUrl is for signed_json only. Callback URLs on loopback, link-local or private addresses are refused unless AO_ALLOW_PRIVATE_CALLBACKS=1.",
        tags,
      },
    })
    .get("/orgs/:orgId/integrations/:id", ({ orgId, params }) => core.store.read(getIntegration(core, orgId, params.id)), {
      permission: "settings.manage",
      params: IntegrationParams,
      response: { 200: IntegrationRecord, ...errorAnswers(400, 401, 403, 404) },
      detail: { summary: "Get an integration", tags },
    })
    .patch("/orgs/:orgId/integrations/:id", ({ orgId, params, body }) => updateIntegration(core, orgId, params.id, body), {
      permission: "settings.manage",
      params: IntegrationParams,
      body: IntegrationPatch,
      transform: refuseUnknownFields(IntegrationPatch),
      response: { 200: IntegrationRecord, ...errorAnswers(400, 401, 403, 404, 409) },
      detail: { summary: "Change name, project, enabled, callback URL or config {label, command}; setting callbackUrl re-enables callbacks after a 410", tags },
    })
    .post("/orgs/:orgId/integrations/:id/rotate-secret", ({ orgId, params }) => core.store.write(rotateIntegrationSecret(core, orgId, params.id)), {
      permission: "settings.manage",
      params: IntegrationParams,
      ...noBody,
      response: { 200: IntegrationWithSecret, ...errorAnswers(400, 401, 403, 404, 409) },
      detail: { summary: "New secret, in this answer only; the old one stops at once (409 for the GitHub app's integration)", tags },
    })
    .delete(
      "/orgs/:orgId/integrations/:id",
      async ({ orgId, params, status }) => {
        await core.store.write(deleteIntegration(core, orgId, params.id));
        return status(204, undefined);
      },
      { permission: "settings.manage", params: IntegrationParams, detail: { summary: "Delete an integration (its tasks stay)", tags, responses: noContentDoc("Deleted", 401, 403, 404) } },
    )
    .get(
      "/orgs/:orgId/integrations/:id/deliveries",
      ({ orgId, params, query }) => core.store.read(listDeliveries(core, orgId, { integrationId: params.id }, query)),
      {
        permission: "settings.manage",
        params: IntegrationParams,
        query: DeliveriesQuery,
        response: { 200: pageOf(DeliveryRecord), ...errorAnswers(400, 401, 403, 404) },
        detail: { summary: "Callback delivery log of the integration, newest first, each with its last 5 tries", description: DELIVERY_LOG, tags },
      },
    )
    .get(
      "/orgs/:orgId/integrations/:id/deliveries/:deliveryId",
      ({ orgId, params }) => core.store.read(getDelivery(core, orgId, { integrationId: params.id }, params.deliveryId)),
      {
        permission: "settings.manage",
        params: DeliveryParams,
        response: { 200: DeliveryDetail, ...errorAnswers(401, 403, 404) },
        detail: {
          summary: "One callback delivery with its tries (the last 20: when, status code or error, latency) and its body",
          description: "404 not_found for an unknown delivery, or one of another integration or organization.",
          tags,
        },
      },
    )
    .post(
      "/orgs/:orgId/integrations/:id/deliveries/:deliveryId/redeliver",
      async ({ orgId, params, status }) => {
        const record = await core.store.write(redeliver(core, orgId, { integrationId: params.id }, params.deliveryId));
        relayOf(core)?.wake();
        return status(202, record);
      },
      {
        permission: "settings.manage",
        params: DeliveryParams,
        ...noBody,
        response: { 202: DeliveryRecord, ...errorAnswers(400, 401, 403, 404, 409) },
        detail: { summary: "Send a callback again now, with the same X-Svc-Delivery id and body", tags },
      },
    )
    .get("/orgs/:orgId/plugins/completion-webhook", ({ orgId }) => core.store.read(getPlugin(core, orgId)), {
      permission: "settings.manage",
      params: OrgParams,
      response: { 200: PluginRecord, ...errorAnswers(401, 403, 404) },
      detail: { summary: "The completion webhook (404 when not set up)", tags },
    })
    .put(
      "/orgs/:orgId/plugins/completion-webhook",
      async ({ orgId, body, status }) => {
        const result = await putPlugin(core, orgId, body);
        return result.created ? status(201, result.record) : status(200, result.record);
      },
      {
        permission: "settings.manage",
        params: OrgParams,
        body: PluginPut,
        transform: refuseUnknownFields(PluginPut),
        response: { 200: PluginRecord, 201: PluginWithSecret, ...errorAnswers(400, 401, 403, 404, 409) },
        detail: {
          summary: "Set up (201, with its secret shown once) or change (200) the completion webhook {url, projectId?, enabled}",
          description: "POSTs the callback payload for every task of the org (or of projectId) that completes, fails or needs attention.",
          tags,
        },
      },
    )
    .delete(
      "/orgs/:orgId/plugins/completion-webhook",
      async ({ orgId, status }) => {
        await core.store.write(deletePlugin(core, orgId));
        return status(204, undefined);
      },
      { permission: "settings.manage", params: OrgParams, detail: { summary: "Remove the completion webhook", tags, responses: noContentDoc("Removed", 401, 403, 404) } },
    )
    .post("/orgs/:orgId/plugins/completion-webhook/rotate-secret", ({ orgId }) => core.store.write(rotatePluginSecret(core, orgId)), {
      permission: "settings.manage",
      params: OrgParams,
      ...noBody,
      response: { 200: PluginWithSecret, ...errorAnswers(400, 401, 403, 404) },
      detail: { summary: "New secret for the completion webhook, in this answer only", tags },
    })
    .get("/orgs/:orgId/plugins/completion-webhook/deliveries", ({ orgId, query }) => core.store.read(listDeliveries(core, orgId, "completion_webhook", query)), {
      permission: "settings.manage",
      params: OrgParams,
      query: DeliveriesQuery,
      response: { 200: pageOf(DeliveryRecord), ...errorAnswers(400, 401, 403, 404) },
      detail: { summary: "Delivery log of the completion webhook, newest first, each with its last 5 tries", description: DELIVERY_LOG, tags },
    })
    .get("/orgs/:orgId/plugins/completion-webhook/deliveries/:deliveryId", ({ orgId, params }) => core.store.read(getDelivery(core, orgId, "completion_webhook", params.deliveryId)), {
      permission: "settings.manage",
      params: PluginDeliveryParams,
      response: { 200: DeliveryDetail, ...errorAnswers(401, 403, 404) },
      detail: { summary: "One completion webhook delivery with its tries (the last 20) and its body", tags },
    })
    .post(
      "/orgs/:orgId/plugins/completion-webhook/deliveries/:deliveryId/redeliver",
      async ({ orgId, params, status }) => {
        const record = await core.store.write(redeliver(core, orgId, "completion_webhook", params.deliveryId));
        relayOf(core)?.wake();
        return status(202, record);
      },
      {
        permission: "settings.manage",
        params: PluginDeliveryParams,
        ...noBody,
        response: { 202: DeliveryRecord, ...errorAnswers(400, 401, 403, 404, 409) },
        detail: { summary: "Send a completion webhook callback again now, with the same delivery id", tags },
      },
    );
