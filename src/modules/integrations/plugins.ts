// The completion webhook plugin (SPEC §9): one per org, for every task of the org or of one
// project, whatever created it. Its own secret signs its callbacks and is shown once.
import { and, eq } from "drizzle-orm";
import type { Core } from "../../server/core";
import { notFound } from "../../server/errors";
import { plugins } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { exec, row, run, type Q } from "../../db/query";
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

function findRow(core: Core, orgId: string): Q<PluginRow | undefined> {
  return row(core.db.select().from(plugins).where(and(eq(plugins.orgId, orgId), eq(plugins.kind, KIND))));
}

export function* getPlugin(core: Core, orgId: string): Q<PluginRecord> {
  const found = yield* findRow(core, orgId);
  if (!found) throw notFound("completion webhook");
  return toRecord(found);
}

/** The plugin's id, for its delivery log. */
export function* pluginId(core: Core, orgId: string): Q<string> {
  return (yield* getPlugin(core, orgId)).id;
}

type PluginSettings = Pick<PluginRow, "url" | "projectId" | "enabled">;

/** Creates the org's completion webhook or replaces its settings; run it in a write. */
function* savePlugin(core: Core, orgId: string, settings: PluginSettings): Q<{ created: true; record: PluginRecord & { secret: string } } | { created: false; record: PluginRecord }> {
  const now = iso();
  const existing = yield* findRow(core, orgId);
  if (existing) {
    const updated = yield* row(core.db.update(plugins).set({ ...settings, updatedAt: now }).where(eq(plugins.id, existing.id)).returning());
    return { created: false, record: toRecord(updated!) };
  }
  const secret = newSecret();
  const created: PluginRow = {
    id: newId("plg"),
    orgId,
    kind: KIND,
    ...settings,
    secretSealed: core.sealer.seal(secret),
    secretLast4: secret.slice(-4),
    createdAt: now,
    updatedAt: now,
  };
  // The unique (org, kind) index has the last word: a row it finds was made meanwhile, so update that one.
  const inserted = yield* row(core.db.insert(plugins).values(created).onConflictDoNothing().returning());
  if (!inserted) return yield* savePlugin(core, orgId, settings);
  return { created: true, record: { ...toRecord(created), secret } };
}

/** Creates (201, with the secret) or replaces the settings of (200) the org's completion webhook. An edge: the URL is looked up (DNS) outside any transaction. */
export async function putPlugin(
  core: Core,
  orgId: string,
  body: PluginPut,
): Promise<{ created: true; record: PluginRecord & { secret: string } } | { created: false; record: PluginRecord }> {
  if (body.projectId) await core.store.read(requireLiveProject(core, orgId, body.projectId));
  const url = await checkCallbackUrl(core, body.url, "url");
  return core.store.write(savePlugin(core, orgId, { url, projectId: body.projectId ?? null, enabled: body.enabled ?? true }));
}

export function* rotatePluginSecret(core: Core, orgId: string): Q<PluginRecord & { secret: string }> {
  const found = yield* findRow(core, orgId);
  if (!found) throw notFound("completion webhook");
  const secret = newSecret();
  const updated = yield* row(
    core.db
      .update(plugins)
      .set({ secretSealed: core.sealer.seal(secret), secretLast4: secret.slice(-4), updatedAt: iso() })
      .where(eq(plugins.id, found.id))
      .returning(),
  );
  return { ...toRecord(updated!), secret };
}

/** Run it in a write: the check and the deletion are one transaction. */
export function* deletePlugin(core: Core, orgId: string): Q<void> {
  const found = yield* findRow(core, orgId);
  if (!found) throw notFound("completion webhook");
  yield* run("UPDATE deliveries SET status = 'failed', last_error = 'the completion webhook was removed', updated_at = ? WHERE target_id = ? AND status = 'pending'", iso(), found.id);
  yield* exec(core.db.delete(plugins).where(eq(plugins.id, found.id)));
}
