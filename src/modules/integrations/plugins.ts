// The completion webhook plugin (SPEC §9): one per org, for every task of the org or of one
// project, whatever created it. Its own secret signs its callbacks and is shown once.
import { and, eq } from "drizzle-orm";
import type { Core } from "../../server/core";
import { notFound } from "../../server/errors";
import { plugins } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { checkCallbackUrl, newSecret, requireLiveProject } from "./service";
import type { PluginPut, PluginRecord } from "./model";

type PluginRow = typeof plugins.$inferSelect;
const KIND = "completion_webhook" as const;

function toRecord(row: PluginRow): PluginRecord {
  return {
    id: row.id,
    orgId: row.orgId,
    url: row.url,
    projectId: row.projectId,
    enabled: row.enabled,
    secretLast4: row.secretLast4,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}

function findRow(core: Core, orgId: string): PluginRow | undefined {
  return core.db.select().from(plugins).where(and(eq(plugins.orgId, orgId), eq(plugins.kind, KIND))).get();
}

export function getPlugin(core: Core, orgId: string): PluginRecord {
  const row = findRow(core, orgId);
  if (!row) throw notFound("completion webhook");
  return toRecord(row);
}

/** The plugin's id, for its delivery log. */
export function pluginId(core: Core, orgId: string): string {
  return getPlugin(core, orgId).id;
}

/** Creates (201, with the secret) or replaces the settings of (200) the org's completion webhook. */
export async function putPlugin(
  core: Core,
  orgId: string,
  body: PluginPut,
): Promise<{ created: true; record: PluginRecord & { secret: string } } | { created: false; record: PluginRecord }> {
  if (body.projectId) requireLiveProject(core, orgId, body.projectId);
  const url = await checkCallbackUrl(core, body.url, "url");
  const now = iso();
  const existing = findRow(core, orgId);
  if (existing) {
    const updated = core.db
      .update(plugins)
      .set({ url, projectId: body.projectId ?? null, enabled: body.enabled ?? true, updatedAt: now })
      .where(eq(plugins.id, existing.id))
      .returning()
      .get();
    return { created: false, record: toRecord(updated) };
  }
  const secret = newSecret();
  const row: PluginRow = {
    id: newId("plg"),
    orgId,
    kind: KIND,
    url,
    projectId: body.projectId ?? null,
    enabled: body.enabled ?? true,
    secretSealed: core.sealer.seal(secret),
    secretLast4: secret.slice(-4),
    createdAt: now,
    updatedAt: now,
  };
  // Two concurrent first PUTs: the unique (org, kind) index lets one create; the other updates.
  const inserted = core.db.insert(plugins).values(row).onConflictDoNothing().returning().get();
  if (!inserted) return putPlugin(core, orgId, body);
  return { created: true, record: { ...toRecord(row), secret } };
}

export function rotatePluginSecret(core: Core, orgId: string): PluginRecord & { secret: string } {
  const row = findRow(core, orgId);
  if (!row) throw notFound("completion webhook");
  const secret = newSecret();
  const updated = core.db
    .update(plugins)
    .set({ secretSealed: core.sealer.seal(secret), secretLast4: secret.slice(-4), updatedAt: iso() })
    .where(eq(plugins.id, row.id))
    .returning()
    .get();
  return { ...toRecord(updated), secret };
}

export function deletePlugin(core: Core, orgId: string): void {
  core.sqlite
    .transaction(() => {
      const row = findRow(core, orgId);
      if (!row) throw notFound("completion webhook");
      core.sqlite
        .query("UPDATE deliveries SET status = 'failed', last_error = 'the completion webhook was removed', updated_at = ? WHERE target_id = ? AND status = 'pending'")
        .run(iso(), row.id);
      core.db.delete(plugins).where(eq(plugins.id, row.id)).run();
    })
    .immediate();
}
