// Integrations: create, change, rotate the secret, delete (SPEC §9). The secret is needed in clear
// to verify HMACs, so it is sealed at rest and shown in full only when created or rotated.
import { and, desc, eq, lt } from "drizzle-orm";
import type { Core } from "../../server/core";
import { ApiError, invalid, notFound } from "../../server/errors";
import { integrations, projects, type IntegrationKind } from "../../db/schema";
import { newId } from "../../lib/ids";
import { randomBase62 } from "../../lib/tokens";
import { iso } from "../../lib/time";
import { pageOf, type Page, type PageQuery } from "../orgs/paging";
import { exec, get, row, rows, run, type Q } from "../../db/query";
import { checkTargetAtConfiguration, TargetRefused } from "./netguard";
import type { IntegrationCreate, IntegrationPatch, IntegrationRecord } from "./model";

type IntegrationRow = typeof integrations.$inferSelect;

export function newSecret(): string {
  return "aos_" + randomBase62(40);
}

export function toIntegrationRecord(core: Core, row: IntegrationRow): IntegrationRecord {
  return {
    id: row.id,
    orgId: row.orgId,
    kind: row.kind,
    name: row.name,
    projectId: row.projectId,
    enabled: row.enabled,
    callbackUrl: row.callbackUrl,
    callbackDisabledAt: row.callbackDisabledAt,
    config: row.config,
    hookUrl: `${core.config.publicUrl}/api/v1/hooks/${row.id}`,
    secretLast4: row.secretLast4,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

/** A live project of the org, or 400 naming the field. */
export function* requireLiveProject(core: Core, orgId: string, projectId: string, field = "projectId"): Q<void> {
  const project = yield* row(core.db.select().from(projects).where(and(eq(projects.id, projectId), eq(projects.orgId, orgId))));
  if (!project) throw invalid(`${field} does not name a project of this organization`, [{ field, message: "unknown project" }]);
  if (project.archived) throw new ApiError(409, "conflict", "the project is archived");
}

/** Validates a callback target now (shape and address); 400 with the reason. */
export async function checkCallbackUrl(core: Core, value: string, field: string): Promise<string> {
  try {
    return await checkTargetAtConfiguration(value, core.config.allowPrivateCallbacks);
  } catch (err) {
    if (err instanceof TargetRefused) throw invalid(`${field} is refused: ${err.message}`, [{ field, message: err.message }]);
    throw err;
  }
}

function* findRow(core: Core, orgId: string, id: string): Q<IntegrationRow> {
  const found = yield* row(core.db.select().from(integrations).where(and(eq(integrations.id, id), eq(integrations.orgId, orgId))));
  if (!found) throw notFound("integration");
  return found;
}

export function* getIntegration(core: Core, orgId: string, id: string): Q<IntegrationRecord> {
  return toIntegrationRecord(core, yield* findRow(core, orgId, id));
}

function integrationsAfter(core: Core, orgId: string, after: string[] | null, n: number): Q<IntegrationRow[]> {
  return rows(
    core.db
      .select()
      .from(integrations)
      .where(after ? and(eq(integrations.orgId, orgId), lt(integrations.id, after[0])) : eq(integrations.orgId, orgId))
      .orderBy(desc(integrations.id))
      .limit(n),
  );
}

export function* listIntegrations(core: Core, orgId: string, q: PageQuery): Q<Page<IntegrationRecord>> {
  return yield* pageOf(
    q,
    1,
    (after, n) => integrationsAfter(core, orgId, after, n),
    (found) => [found.id],
    (found) => toIntegrationRecord(core, found),
  );
}

/** label and command say which issues and comments become tasks: signed JSON has neither. */
function cleanConfig(kind: IntegrationKind, config: IntegrationCreate["config"]): { label?: string; command?: string } {
  const given = (["label", "command"] as const).filter((k) => config?.[k] !== undefined);
  if (kind === "signed_json" && given.length) {
    throw invalid(
      "only github and gitlab integrations have a label or command",
      given.map((k) => ({ field: `config.${k}`, message: "only for kind github or gitlab" })),
    );
  }
  const out: { label?: string; command?: string } = {};
  const label = config?.label?.trim();
  const command = config?.command?.trim();
  if (label) out.label = label;
  if (command) out.command = command;
  return out;
}

async function callbackFor(core: Core, kind: IntegrationKind, value: string | null | undefined): Promise<string | null> {
  if (value === undefined || value === null) return null;
  if (kind !== "signed_json") {
    throw invalid("only signed_json integrations have a callback URL", [{ field: "callbackUrl", message: "only for kind signed_json" }]);
  }
  return checkCallbackUrl(core, value, "callbackUrl");
}

/** An edge: the callback URL's address is looked up (DNS) outside any transaction. */
export async function createIntegration(core: Core, orgId: string, body: IntegrationCreate): Promise<IntegrationRecord & { secret: string }> {
  await core.store.read(requireLiveProject(core, orgId, body.projectId));
  const callbackUrl = await callbackFor(core, body.kind, body.callbackUrl);
  const secret = newSecret();
  const now = iso();
  const created: IntegrationRow = {
    id: newId("int"),
    orgId,
    kind: body.kind,
    name: body.name.trim(),
    projectId: body.projectId,
    enabled: body.enabled ?? true,
    callbackUrl,
    callbackDisabledAt: null,
    config: cleanConfig(body.kind, body.config),
    secretSealed: core.sealer.seal(secret),
    secretLast4: secret.slice(-4),
    createdAt: now,
    updatedAt: now,
  };
  await core.store.write(exec(core.db.insert(integrations).values(created)));
  return { ...toIntegrationRecord(core, created), secret };
}

/** An edge, as createIntegration. */
export async function updateIntegration(core: Core, orgId: string, id: string, patch: IntegrationPatch): Promise<IntegrationRecord> {
  const found = await core.store.read(findRow(core, orgId, id));
  if (patch.projectId !== undefined) await core.store.read(requireLiveProject(core, orgId, patch.projectId));
  const changes: Partial<IntegrationRow> = { updatedAt: iso() };
  if (patch.name !== undefined) changes.name = patch.name.trim();
  if (patch.projectId !== undefined) changes.projectId = patch.projectId;
  if (patch.enabled !== undefined) changes.enabled = patch.enabled;
  if (patch.config !== undefined) changes.config = cleanConfig(found.kind, patch.config);
  if (patch.callbackUrl !== undefined) {
    changes.callbackUrl = await callbackFor(core, found.kind, patch.callbackUrl);
    // Setting the URL again is how a person re-enables callbacks after a 410.
    changes.callbackDisabledAt = null;
  }
  const updated = await core.store.write(row(core.db.update(integrations).set(changes).where(and(eq(integrations.id, id), eq(integrations.orgId, orgId))).returning()));
  if (!updated) throw notFound("integration");
  return toIntegrationRecord(core, updated);
}

/** The GitHub app's own integration: its secret is the app's webhook secret, which GitHub keeps signing with. */
const APP_INTEGRATION = "SELECT 1 AS app FROM codehost_apps WHERE integration_id = ?";

/** A new secret; the old one stops verifying at once (every delivery reads the current row). */
export function* rotateIntegrationSecret(core: Core, orgId: string, id: string): Q<IntegrationRecord & { secret: string }> {
  yield* findRow(core, orgId, id);
  // A new secret here would not reach GitHub: every webhook of the app would be refused from then on.
  if (yield* get(APP_INTEGRATION, id)) {
    throw new ApiError(409, "conflict", "this integration receives the GitHub app's webhooks, signed with the app's own webhook secret: its secret cannot be rotated here");
  }
  const secret = newSecret();
  const updated = yield* row(
    core.db
      .update(integrations)
      .set({ secretSealed: core.sealer.seal(secret), secretLast4: secret.slice(-4), updatedAt: iso() })
      .where(and(eq(integrations.id, id), eq(integrations.orgId, orgId)))
      .returning(),
  );
  if (!updated) throw notFound("integration");
  return { ...toIntegrationRecord(core, updated), secret };
}

/** Run it in a write: the checks and the deletion are one transaction. */
export function* deleteIntegration(core: Core, orgId: string, id: string): Q<void> {
  yield* findRow(core, orgId, id);
  if (yield* get(APP_INTEGRATION, id)) {
    throw new ApiError(409, "conflict", "this integration receives the GitHub app's webhooks: it stays while the app exists (disable it instead)");
  }
  // Callbacks not yet sent have nowhere to go any more; sent ones stay in the log.
  yield* run("UPDATE deliveries SET status = 'failed', last_error = 'the integration was deleted', updated_at = ? WHERE target_id = ? AND status = 'pending'", iso(), id);
  yield* exec(core.db.delete(integrations).where(and(eq(integrations.id, id), eq(integrations.orgId, orgId))));
}
