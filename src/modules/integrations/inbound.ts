// POST /hooks/:id: the signature is checked over the raw bytes first, then the body is parsed,
// interpreted by the integration's kind and turned into a task. Duplicates are refused by the
// primary key of inbound_keys, written in the task's own transaction (never check-then-insert).
import { createHmac } from "node:crypto";
import type { Core } from "../../server/core";
import { ApiError, invalid, unauthorized } from "../../server/errors";
import { iso } from "../../lib/time";
import { sha256Hex } from "../../lib/tokens";
import type { IntegrationKind } from "../../db/schema";
import { txCreateTask } from "../tasks/service";
import { publishChanges } from "../tasks/store";
import { verifyGithub, verifyGitlab, verifySvc } from "./signing";
import { interpretGithub } from "./github";
import { interpretGitlab } from "./gitlab";
import { interpretSignedJson } from "./signed-json";
import type { Interpretation } from "./interpret";
import type { HookAnswer } from "./model";
import { appTaskTarget, isAppIntegration, txAppEvent } from "../codehost/webhooks";

interface HookRow {
  id: string;
  org_id: string;
  kind: IntegrationKind;
  project_id: string;
  enabled: number;
  config: string;
  secret_sealed: string;
}

const statements = new WeakMap<Core, ReturnType<typeof prepare>>();
function prepare(core: Core) {
  const q = core.sqlite;
  return {
    integration: q.query<HookRow, [string]>("SELECT id, org_id, kind, project_id, enabled, config, secret_sealed FROM integrations WHERE id = ?"),
    insertKey: q.query<unknown, [string, string, string, string]>("INSERT INTO inbound_keys (integration_id, key, task_id, created_at) VALUES (?, ?, ?, ?)"),
    taskOfKey: q.query<{ task_id: string }, [string, string]>("SELECT task_id FROM inbound_keys WHERE integration_id = ? AND key = ?"),
    // Opened secrets, keyed by their sealed form: a rotation changes the key, so no invalidation.
    secrets: new Map<string, string>(),
  };
}
function stmts(core: Core) {
  let s = statements.get(core);
  if (!s) statements.set(core, (s = prepare(core)));
  return s;
}

function secretOf(core: Core, sealed: string): string {
  const cache = stmts(core).secrets;
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

const decoder = new TextDecoder("utf-8", { fatal: true });

function parseJson(raw: Uint8Array): unknown {
  let value: unknown;
  try {
    value = JSON.parse(decoder.decode(raw));
  } catch {
    throw invalid("the body is not valid JSON");
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) throw invalid("the body must be a JSON object");
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

function isKeyConflict(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === "SQLITE_CONSTRAINT_PRIMARYKEY" || code === "SQLITE_CONSTRAINT_UNIQUE";
}

export function receiveDelivery(core: Core, integrationId: string, headers: Headers, raw: Uint8Array): HookResult {
  const s = stmts(core);
  const row = s.integration.get(integrationId);
  if (!row) {
    // An unknown id answers like a bad signature, after the same work, so ids cannot be probed.
    createHmac("sha256", "aos_unknown").update(raw).digest("hex");
    throw badSignature();
  }
  const { deliveryId, signature } = authenticate(core, row, headers, raw);
  if (!row.enabled) return { status: 200, body: { status: "ignored", reason: "the integration is disabled" } };
  const payload = parseJson(raw);
  // The GitHub app's own events (installations, its pull requests), and where its tasks go.
  let target = { orgId: row.org_id, projectId: row.project_id };
  if (row.kind === "github" && isAppIntegration(core, row.id)) {
    const app = core.sqlite.transaction(() => txAppEvent(core, headers.get("x-github-event"), payload)).immediate();
    publishChanges(core, app.changes);
    if (app.handled !== null) return { status: 200, body: { status: "processed", reason: app.handled } };
    const to = appTaskTarget(core, row, payload);
    if ("refused" in to) return { status: 200, body: { status: "ignored", reason: to.refused } };
    target = to;
  }
  const meaning = interpret(row, headers, payload);
  if (meaning.kind === "pong") return { status: 200, body: { status: "pong" } };
  if (meaning.kind === "ignored") return { status: 200, body: { status: "ignored", reason: meaning.reason } };

  const task = meaning.task;
  const keys = [...task.itemKeys];
  if (signature) keys.unshift(`signature:${signature}`);
  // Long sender ids are hashed so the key stays small; the same id always gives the same key.
  if (deliveryId) keys.unshift(`delivery:${deliveryId.length <= 200 ? deliveryId : sha256Hex(deliveryId)}`);
  const source = {
    integrationId: row.id,
    integrationKind: row.kind,
    deliveryId,
    ...(task.item ? { item: task.item } : {}),
    ...(task.ref !== undefined ? { ref: task.ref } : {}),
  };
  try {
    const change = core.sqlite
      .transaction(() => {
        const change = core.store.sync(txCreateTask(core, target.orgId, {
          projectId: target.projectId,
          title: task.title,
          prompt: task.prompt,
          priority: task.priority,
          kind: task.kind,
          review: task.review,
          createdBy: { type: "integration", id: row.id },
          source,
        }));
        const now = iso();
        for (const key of keys) s.insertKey.run(row.id, key, change.after.id, now);
        return change;
      })
      .immediate();
    publishChanges(core, [change]);
    return { status: 201, body: { status: "created", taskId: change.after.id } };
  } catch (err) {
    if (isKeyConflict(err)) {
      for (const key of keys) {
        const existing = s.taskOfKey.get(row.id, key);
        if (existing) return { status: 200, body: { status: "duplicate", taskId: existing.task_id } };
      }
    }
    if (err instanceof ApiError && err.status === 409) return { status: 200, body: { status: "ignored", reason: "the integration's project is archived" } };
    throw err;
  }
}
