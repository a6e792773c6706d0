// Request and response schemas of integrations, the completion webhook plugin, deliveries and hooks.
import { t, type Static } from "elysia";
import { Line, Text } from "../../lib/text";
import { RefName } from "../../lib/refname";
import { strictObject } from "../../server/strict";
import { Int } from "../../server/answer-schemas";

export const IntegrationKind = t.Union([t.Literal("github"), t.Literal("gitlab"), t.Literal("signed_json")]);

export const IntegrationConfig = t.Object({
  label: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "Label that turns an issue or pull/merge request into a task (default: ao)" })),
  command: t.Optional(t.String({ minLength: 1, maxLength: 50, description: "Comment prefix that turns a comment into a task (default: /ao)" })),
});
export type IntegrationConfig = Static<typeof IntegrationConfig>;

const CallbackUrl = t.String({ minLength: 1, maxLength: 2048, description: "signed_json only: where task callbacks are POSTed" });

export const IntegrationCreate = t.Object({
  kind: IntegrationKind,
  name: Line(100),
  projectId: t.String({ minLength: 1 }),
  enabled: t.Optional(t.Boolean()),
  callbackUrl: t.Optional(t.Nullable(CallbackUrl)),
  config: t.Optional(IntegrationConfig),
});
export type IntegrationCreate = Static<typeof IntegrationCreate>;

export const IntegrationPatch = t.Object({
  name: t.Optional(Line(100)),
  projectId: t.Optional(t.String({ minLength: 1 })),
  enabled: t.Optional(t.Boolean()),
  callbackUrl: t.Optional(t.Nullable(CallbackUrl)),
  config: t.Optional(IntegrationConfig),
});
export type IntegrationPatch = Static<typeof IntegrationPatch>;

export const IntegrationRecord = t.Object({
  id: t.String(),
  orgId: t.String(),
  kind: IntegrationKind,
  name: t.String(),
  projectId: t.String(),
  enabled: t.Boolean(),
  callbackUrl: t.Nullable(t.String()),
  callbackDisabledAt: t.Nullable(t.String({ description: "Set when the receiver answered 410 Gone; setting callbackUrl again re-enables callbacks" })),
  config: IntegrationConfig,
  hookUrl: t.String({ description: "Where the sender delivers: POST {hookUrl}" }),
  secretLast4: t.String(),
  createdAt: t.String(),
  updatedAt: t.String(),
});
export type IntegrationRecord = Static<typeof IntegrationRecord>;

export const IntegrationWithSecret = t.Composite([IntegrationRecord, t.Object({ secret: t.String({ description: "Shown only now" }) })]);

export const PluginPut = t.Object({
  url: t.String({ minLength: 1, maxLength: 2048 }),
  projectId: t.Optional(t.Nullable(t.String({ minLength: 1, description: "Only tasks of this project; null: every task of the org" }))),
  enabled: t.Optional(t.Boolean()),
});
export type PluginPut = Static<typeof PluginPut>;

export const PluginRecord = t.Object({
  id: t.String(),
  orgId: t.String(),
  url: t.String(),
  projectId: t.Nullable(t.String()),
  enabled: t.Boolean(),
  secretLast4: t.String(),
  createdAt: t.String(),
  updatedAt: t.String(),
});
export type PluginRecord = Static<typeof PluginRecord>;
export const PluginWithSecret = t.Composite([PluginRecord, t.Object({ secret: t.String({ description: "Shown only now" }) })]);

export const DeliveryTry = t.Object({
  attempt: Int({ description: "1, 2, 3... over the delivery's whole life, redeliveries included" }),
  at: t.String({ description: "When the try ended" }),
  outcome: t.Union([t.Literal("succeeded"), t.Literal("retrying"), t.Literal("failed")], {
    description: "succeeded (2xx); retrying (another try is scheduled); failed (no more tries: gave up, 410 Gone, or a refused target)",
  }),
  statusCode: t.Nullable(Int({ description: "The receiver's HTTP status; null when there was no answer" })),
  error: t.Nullable(t.String({ description: "Why it failed: the status, a timeout, a connection error, a refused target" })),
  latencyMs: t.Nullable(Int({ description: "From sending to the answer (or the timeout)" })),
});
export type DeliveryTry = Static<typeof DeliveryTry>;

const DeliveryStatus = t.Union([t.Literal("pending"), t.Literal("delivering"), t.Literal("succeeded"), t.Literal("failed")]);

export const DeliveryRecord = t.Object({
  id: t.String({ description: "The X-Svc-Delivery value; the same on every try and redelivery" }),
  targetType: t.Union([t.Literal("integration"), t.Literal("plugin")]),
  targetId: t.String(),
  taskId: t.String(),
  event: t.Union([t.Literal("completed"), t.Literal("failed"), t.Literal("needs_attention")]),
  status: DeliveryStatus,
  attempts: Int(),
  lastStatusCode: t.Nullable(Int()),
  lastError: t.Nullable(t.String()),
  latencyMs: t.Nullable(Int()),
  nextAttemptAt: t.Nullable(t.String()),
  lastAttemptAt: t.Nullable(t.String()),
  deliveredAt: t.Nullable(t.String()),
  createdAt: t.String(),
  updatedAt: t.String(),
  recentTries: t.Array(DeliveryTry, { description: "The last tries (at most 5), newest first; GET .../deliveries/:deliveryId has up to 20" }),
});
export type DeliveryRecord = Static<typeof DeliveryRecord>;

export const DeliveryDetail = t.Composite([
  DeliveryRecord,
  t.Object({
    tries: t.Array(DeliveryTry, { description: "The last 20 tries, newest first (attempts counts them all)" }),
    body: t.String({ description: "The exact JSON body sent (and signed) on every try" }),
  }),
]);
export type DeliveryDetail = Static<typeof DeliveryDetail>;

export const PageQuery = t.Object({
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 200 })),
  cursor: t.Optional(t.String()),
});

export const DeliveriesQuery = t.Object({
  ...PageQuery.properties,
  status: t.Optional(t.Union(DeliveryStatus.anyOf, { description: "Only the deliveries in this status" })),
});
export type DeliveriesQuery = Static<typeof DeliveriesQuery>;

export const HookAnswer = t.Object({
  status: t.Union([t.Literal("created"), t.Literal("duplicate"), t.Literal("ignored"), t.Literal("pong"), t.Literal("processed")], {
    description: "processed: an event of the GitHub app (installation, installation_repositories, pull_request closed or reopened) was recorded",
  }),
  taskId: t.Optional(t.String()),
  reason: t.Optional(t.String()),
});
export type HookAnswer = Static<typeof HookAnswer>;

/**
 * Body of a signed JSON delivery. Closed: a misspelt field (`priorty`) or one ao does not take
 * from a sender (`projectId`: the integration's project) is refused, not dropped.
 */
export const SignedJsonBody = strictObject({
  title: Line(200),
  prompt: Text(100_000),
  priority: t.Optional(t.Union([t.Literal("LOW"), t.Literal("MEDIUM"), t.Literal("HIGH"), t.Literal("URGENT")])),
  kind: t.Optional(t.Union([t.Literal("task"), t.Literal("review"), t.Literal("plan")])),
  review: t.Optional(strictObject({ base: RefName(), head: RefName() })),
  ref: t.Optional(t.String({ maxLength: 1000, description: "The sender's reference, echoed in callbacks" })),
});
export type SignedJsonBody = Static<typeof SignedJsonBody>;
