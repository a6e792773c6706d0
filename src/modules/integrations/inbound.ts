// POST /hooks/:id: the signature is checked over the raw bytes first, then the body is parsed,
// interpreted by the integration's kind and turned into a task. Duplicates are refused by the
// primary key of inbound_keys, written in the task's own transaction (never check-then-insert).
import { createHmac } from "node:crypto";
import type { Core } from "../../server/core";
import { ApiError, invalid, nestsTooDeep, tooDeep, unauthorized } from "../../server/errors";
import { decodeUtf8 } from "../../server/utf8";
import { iso } from "../../lib/time";
import { sha256Hex } from "../../lib/tokens";
import type { IntegrationKind } from "../../db/schema";
import { txCreateTask, type NewTask } from "../tasks/service";
import { publishChanges, type TaskChange } from "../tasks/store";
import { all, get, isUniqueViolation, run, type Q } from "../../db/query";
import { verifyGithub, verifyGitlab, verifySvc } from "./signing";
import { interpretGithub } from "./github";
import { interpretGitlab } from "./gitlab";
import { interpretSignedJson } from "./signed-json";
import type { Interpretation } from "./interpret";
import type { HookAnswer } from "./model";
import { appEvent, appOfIntegration, appTaskTarget } from "../codehost/webhooks";

interface HookRow {
  id: string;
  org_id: string;
  kind: IntegrationKind;
  project_id: string;
  enabled: number;
  config: string;
  secret_sealed: string;
}

const INTEGRATION = "SELECT id, org_id, kind, project_id, enabled, config, secret_sealed FROM integrations WHERE id = ?";
const INSERT_KEY = "INSERT INTO inbound_keys (integration_id, key, task_id, created_at) VALUES (?, ?, ?, ?)";
const TASKS_OF_KEYS = `SELECT k.key, k.task_id, t.org_id FROM inbound_keys k JOIN tasks t ON t.id = k.task_id
  WHERE k.integration_id = ? AND k.key IN (SELECT value FROM json_each(?))`;

// Opened secrets, keyed by their sealed form: a rotation changes the key, so no invalidation.
const secrets = new WeakMap<Core, Map<string, string>>();

function secretOf(core: Core, sealed: string): string {
  let cache = secrets.get(core);
  if (!cache) secrets.set(core, (cache = new Map()));
  let secret = cache.get(sealed);
  if (secret === undefined) {
    secret = core.sealer.open(sealed);
    if (cache.size > 10_000) cache.clear();
    cache.set(sealed, secret);
  }
  return secret;
}

// One answer for every signature failure and for unknown ids: the message must not tell a prober
// whether the id exists or which kind it is. Only a correctly signed but stale delivery hears more.
const badSignature = (message = "the delivery's signature (X-Hub-Signature-256, X-Gitlab-Token or X-Svc-Signature) is not valid") =>
  unauthorized(message);

export interface HookResult {
  status: 200 | 201;
  body: HookAnswer;
}

/**
 * Authenticates a delivery by its integration's kind. `deliveryId` is the sender's delivery id when
 * there is one; `signature` names one signed request (signed JSON only).
 */
function authenticate(core: Core, row: HookRow, headers: Headers, raw: Uint8Array): { deliveryId: string | null; signature?: string } {
  const secret = secretOf(core, row.secret_sealed);
  switch (row.kind) {
    case "github":
      if (!verifyGithub(secret, raw, headers.get("x-hub-signature-256"))) throw badSignature();
      return { deliveryId: headers.get("x-github-delivery") };
    case "gitlab":
      if (!verifyGitlab(secret, headers.get("x-gitlab-token"))) throw badSignature();
      // Idempotency-Key stays the same across GitLab's retries; older versions send only the event UUID.
      return { deliveryId: headers.get("idempotency-key") ?? headers.get("x-gitlab-event-uuid") };
    case "signed_json": {
      const verdict = verifySvc(secret, raw, headers.get("x-svc-signature"));
      if (!verdict.ok) throw verdict.stale ? badSignature(verdict.reason) : badSignature();
      // X-Svc-Delivery is not signed: a captured request replayed with another (or no) delivery id
      // is still the same request, so the matching v1 value itself is a key as well. It covers
      // "<t>.<body>", so it cannot be altered, and a stale t is refused above.
      return { deliveryId: headers.get("x-svc-delivery"), signature: verdict.signature };
    }
  }
}

// GitHub's webhook form offers application/x-www-form-urlencoded too: its sender should hear what to change.
const FORM_ENCODED = /^\s*application\/x-www-form-urlencoded\s*(;|$)/i;

function parseJson(raw: Uint8Array, contentType: string | null): unknown {
  const text = decodeUtf8(raw);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    if (contentType && FORM_ENCODED.test(contentType)) {
      throw invalid("the body is form-encoded (Content-Type: application/x-www-form-urlencoded), not JSON: set the webhook's content type to application/json");
    }
    throw invalid("the body is not valid JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw invalid("the body must be a JSON object");
  if (nestsTooDeep(value)) throw tooDeep();
  return value;
}

function interpret(row: HookRow, headers: Headers, payload: unknown): Interpretation {
  const config = JSON.parse(row.config) as { label?: string; command?: string };
  switch (row.kind) {
    case "github":
      return interpretGithub(headers.get("x-github-event"), payload, config);
    case "gitlab":
      return interpretGitlab(headers.get("x-gitlab-event"), payload, config);
    case "signed_json":
      return interpretSignedJson(payload);
  }
}

/** The task a delivery makes, with the keys that refuse its duplicates, in one transaction. */
function* createTaskOfDelivery(core: Core, integrationId: string, target: { orgId: string; projectId: string }, input: NewTask, keys: string[]): Q<TaskChange> {
  const change = yield* txCreateTask(core, target.orgId, input);
  const now = iso();
  for (const key of keys) yield* run(INSERT_KEY, integrationId, key, change.after.id, now);
  return change;
}

/** The task an earlier delivery with one of these keys made, trying the keys in order. */
function* taskOfKeys(integrationId: string, keys: string[]): Q<{ id: string; orgId: string } | null> {
  const rows = yield* all<{ key: string; task_id: string; org_id: string }>(TASKS_OF_KEYS, integrationId, JSON.stringify(keys));
  const found = new Map(rows.map((r) => [r.key, { id: r.task_id, orgId: r.org_id }]));
  for (const key of keys) {
    const task = found.get(key);
    if (task) return task;
  }
  return null;
}

/**
 * The task's id in the answer, unless the task is another org's than the integration's: the GitHub
 * app's tasks of other orgs, whose ids the app's owner would read in GitHub's delivery log.
 */
const taskIdFor = (row: HookRow, task: { id: string; orgId: string }) => (task.orgId === row.org_id ? { taskId: task.id } : {});

/**
 * An edge: the signature is checked over the raw bytes before the body is parsed. `refusal` (the
 * route's: its query) is answered once the signature holds, before anything else.
 */
export async function receiveDelivery(core: Core, integrationId: string, headers: Headers, raw: Uint8Array, refusal: ApiError | null = null): Promise<HookResult> {
  const row = await core.store.read(get<HookRow>(INTEGRATION, integrationId));
  if (!row) {
    // An unknown id answers like a bad signature, after the same work, so ids cannot be probed.
    createHmac("sha256", "aos_unknown").update(raw).digest("hex");
    throw badSignature();
  }
  const { deliveryId, signature } = authenticate(core, row, headers, raw);
  if (refusal) throw refusal;
  if (!row.enabled) return { status: 200, body: { status: "ignored", reason: "the integration is disabled" } };
  const payload = parseJson(raw, headers.get("content-type"));
  // The GitHub app's own events (installations, its pull requests), and where its tasks go.
  let target = { orgId: row.org_id, projectId: row.project_id };
  let createdBy: NewTask["createdBy"] = { type: "integration", id: row.id };
  const app = row.kind === "github" ? await core.store.read(appOfIntegration(core, row.id)) : null;
  if (app) {
    const recorded = await core.store.write(appEvent(core, headers.get("x-github-event"), payload));
    publishChanges(core, recorded.changes);
    if (recorded.handled !== null) return { status: 200, body: { status: "processed", reason: recorded.handled } };
  }
  const meaning = interpret(row, headers, payload);
  if (meaning.kind === "pong") return { status: 200, body: { status: "pong" } };
  if (meaning.kind === "ignored") return { status: 200, body: { status: "ignored", reason: meaning.reason } };
  if (app) {
    const to = await core.store.read(appTaskTarget(core, row, payload));
    if ("refused" in to) return { status: 200, body: { status: "ignored", reason: to.refused } };
    target = to;
    // The integration is the app owner's: a task of another org names the app, never an id of an
    // organization its readers cannot see.
    if (target.orgId !== row.org_id) createdBy = { type: "app", id: app.slug };
  }

  const task = meaning.task;
  const keys = [...task.itemKeys];
  if (signature) keys.unshift(`signature:${signature}`);
  // Long sender ids are hashed so the key stays small; the same id always gives the same key.
  if (deliveryId) keys.unshift(`delivery:${deliveryId.length <= 200 ? deliveryId : sha256Hex(deliveryId)}`);
  const source = {
    ...(createdBy.type === "integration" ? { integrationId: row.id } : {}),
    integrationKind: row.kind,
    deliveryId,
    ...(task.item ? { item: task.item } : {}),
    ...(task.ref !== undefined ? { ref: task.ref } : {}),
  };
  const input: NewTask = {
    projectId: target.projectId,
    title: task.title,
    prompt: task.prompt,
    priority: task.priority,
    kind: task.kind,
    review: task.review,
    createdBy,
    source,
  };
  try {
    const change = await core.store.write(createTaskOfDelivery(core, row.id, target, input, keys));
    publishChanges(core, [change]);
    return { status: 201, body: { status: "created", ...taskIdFor(row, { id: change.after.id, orgId: change.after.org_id }) } };
  } catch (err) {
    // A key already taken rolled the whole write back (on PostgreSQL the transaction is over): look it up afresh.
    if (isUniqueViolation(err)) {
      const existing = await core.store.read(taskOfKeys(row.id, keys));
      if (existing) return { status: 200, body: { status: "duplicate", ...taskIdFor(row, existing) } };
    }
    if (err instanceof ApiError && err.status === 409) return { status: 200, body: { status: "ignored", reason: "the integration's project is archived" } };
    throw err;
  }
}
