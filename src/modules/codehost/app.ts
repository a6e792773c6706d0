// The app itself: created from a manifest ao builds (GitHub's manifest flow), one per instance.
// The browser flows' states are bound to the person and org that started them, single use and
// expiring; only their hashes are stored.
import { and, asc, eq } from "drizzle-orm";
import type { Core } from "../../server/core";
import { ApiError, conflict, invalid } from "../../server/errors";
import { codehostApps, codehostStates, integrations, projects, type CodehostStatePurpose } from "../../db/schema";
import { newId } from "../../lib/ids";
import { randomBase62, sha256Hex } from "../../lib/tokens";
import { iso } from "../../lib/time";
import { newSecret } from "../integrations/service";
import { insertProject } from "../projects/service";
import { exec, get, isUniqueViolation, row, run, type Q } from "../../db/query";
import { apiClient, githubFailure, type AppCredentials } from "./github";

export const STATE_TTL_MS = 10 * 60_000;
export const APP_ROW_ID = "app";
/** The name of the github integration made for the app's webhooks. */
export const APP_INTEGRATION_NAME = "GitHub app";

export type AppRow = typeof codehostApps.$inferSelect;

export function* appRow(core: Core): Q<AppRow | null> {
  return (yield* row(core.db.select().from(codehostApps).where(eq(codehostApps.id, APP_ROW_ID)))) ?? null;
}

/** The app, or 409 naming what to do first. */
export function* requireApp(core: Core): Q<AppRow> {
  const app = yield* appRow(core);
  if (!app) throw conflict("this server has no GitHub app yet: create it first (POST /orgs/:orgId/codehost/app/manifest)", { reason: "no_app" });
  return app;
}

export function credentialsOf(core: Core, app: AppRow): AppCredentials {
  return {
    appId: app.appId,
    privateKey: core.sealer.open(app.privateKeySealed),
    clientId: app.clientId,
    clientSecret: core.sealer.open(app.clientSecretSealed),
  };
}

/** A new state of a browser flow (run with core.store.write: it also deletes the expired ones). */
export function* newState(core: Core, purpose: CodehostStatePurpose, orgId: string, userId: string, integrationId: string | null = null): Q<string> {
  const state = randomBase62(32);
  const now = Date.now();
  // Expired states of anyone go as new ones come: the table holds only live flows.
  yield* run("DELETE FROM codehost_states WHERE expires_at < ?", now);
  yield* exec(core.db.insert(codehostStates).values({ stateHash: sha256Hex(state), purpose, orgId, userId, integrationId, expiresAt: now + STATE_TTL_MS }));
  return state;
}

export type StateRow = typeof codehostStates.$inferSelect;

const badState = () =>
  new ApiError(400, "invalid_state", "the state is unknown, already used or expired: start again from ao", [{ field: "state", message: "not a live state of this flow" }]);

/** Takes a state out (single use): the row is deleted whether or not it is still valid. */
export function* consumeState(core: Core, purpose: CodehostStatePurpose, state: string | undefined): Q<StateRow> {
  if (!state) throw badState();
  const taken = yield* row(core.db.delete(codehostStates).where(eq(codehostStates.stateHash, sha256Hex(state))).returning());
  if (!taken || taken.purpose !== purpose || taken.expiresAt < Date.now()) throw badState();
  return taken;
}

/** The project of the app's integration: the one asked for, the org's oldest live one, or a new one. */
function* integrationProject(core: Core, orgId: string, projectId: string | undefined): Q<string> {
  if (projectId !== undefined) {
    const p = yield* row(core.db.select().from(projects).where(and(eq(projects.id, projectId), eq(projects.orgId, orgId))));
    if (!p) throw invalid("projectId does not name a project of this organization", [{ field: "projectId", message: "unknown project" }]);
    if (p.archived) throw conflict("the project is archived");
    return p.id;
  }
  const oldest = yield* row(core.db.select().from(projects).where(and(eq(projects.orgId, orgId), eq(projects.archived, false))).orderBy(asc(projects.id)).limit(1));
  return oldest ? oldest.id : (yield* insertProject(core, orgId, { name: "GitHub" })).id;
}

/**
 * The integration that will receive the app's webhooks: made now, because the manifest names its
 * URL before GitHub knows the app. An unfinished earlier attempt's integration is reused.
 */
function* appIntegration(core: Core, orgId: string, projectId: string | undefined): Q<string> {
  const spare = yield* get<{ id: string }>(
    "SELECT id FROM integrations WHERE org_id = ? AND kind = 'github' AND name = ? AND id NOT IN (SELECT integration_id FROM codehost_apps) ORDER BY id LIMIT 1",
    orgId,
    APP_INTEGRATION_NAME,
  );
  if (spare) {
    if (projectId !== undefined) {
      const project = yield* integrationProject(core, orgId, projectId);
      yield* exec(core.db.update(integrations).set({ projectId: project, updatedAt: iso() }).where(eq(integrations.id, spare.id)));
    }
    return spare.id;
  }
  const now = iso();
  // Replaced by the app's webhook secret when GitHub converts the manifest.
  const placeholder = newSecret();
  const id = newId("int");
  const project = yield* integrationProject(core, orgId, projectId);
  yield* exec(
    core.db.insert(integrations).values({
      id,
      orgId,
      kind: "github",
      name: APP_INTEGRATION_NAME,
      projectId: project,
      enabled: true,
      callbackUrl: null,
      callbackDisabledAt: null,
      config: {},
      secretSealed: core.sealer.seal(placeholder),
      secretLast4: placeholder.slice(-4),
      createdAt: now,
      updatedAt: now,
    }),
  );
  return id;
}

export interface ManifestRequest {
  name?: string;
  organization?: string;
  public?: boolean;
  projectId?: string;
}

/** Step 1 of the manifest flow: the manifest, where to post it, and a state bound to the caller. Run with core.store.write. */
export function* startManifest(core: Core, orgId: string, userId: string, body: ManifestRequest) {
  if (yield* appRow(core)) throw conflict("this server already has its GitHub app (one per server): install it instead (POST /orgs/:orgId/codehost/installations)", { reason: "app_exists" });
  const integrationId = yield* appIntegration(core, orgId, body.projectId);
  const state = yield* newState(core, "manifest", orgId, userId, integrationId);
  const base = core.config.publicUrl;
  const host = new URL(base).host;
  const manifest = {
    name: body.name ?? `ao ${host}`.slice(0, 34),
    url: base,
    description: "ao runs coding agents on your repositories and opens pull requests with their work.",
    hook_attributes: { url: `${base}/api/v1/hooks/${integrationId}`, active: true },
    redirect_url: `${base}/api/v1/codehost/app/callback`,
    callback_urls: [`${base}/api/v1/codehost/user/callback`],
    setup_url: `${base}/api/v1/codehost/installations/callback`,
    setup_on_update: true,
    request_oauth_on_install: false,
    public: body.public ?? false,
    default_permissions: { contents: "write", pull_requests: "write", issues: "write", metadata: "read", administration: "write" },
    default_events: ["issues", "issue_comment", "pull_request", "installation", "installation_repositories"],
  };
  const gh = core.config.github.url;
  const path = body.organization ? `/organizations/${encodeURIComponent(body.organization)}/settings/apps/new` : "/settings/apps/new";
  return { url: `${gh}${path}?state=${encodeURIComponent(state)}`, manifest, state };
}

interface Conversion {
  id: number;
  slug?: string;
  name: string;
  html_url: string;
  client_id: string;
  client_secret: string;
  webhook_secret: string | null;
  pem: string;
}

/**
 * Step 2: GitHub sent the browser back with a code. It is converted into the app's credentials
 * (POST /app-manifests/{code}/conversions), which are sealed; the integration then verifies the
 * app's webhooks with the app's webhook secret.
 */
export async function finishManifest(core: Core, code: string | undefined, state: string | undefined): Promise<AppRow> {
  const flow = await core.store.write(consumeState(core, "manifest", state));
  if (!code) throw invalid("the callback has no code", [{ field: "code", message: "required" }]);
  if (await core.store.read(appRow(core))) throw conflict("this server already has its GitHub app", { reason: "app_exists" });
  let data: Conversion;
  try {
    data = (await (await apiClient(core)).request("POST /app-manifests/{code}/conversions", { code })).data as unknown as Conversion;
  } catch (err) {
    throw githubFailure(err, "converting the app manifest");
  }
  const now = iso();
  const app: AppRow = {
    id: APP_ROW_ID,
    orgId: flow.orgId,
    integrationId: flow.integrationId!,
    appId: data.id,
    slug: data.slug ?? data.name,
    name: data.name,
    htmlUrl: data.html_url,
    clientId: data.client_id,
    clientSecretSealed: core.sealer.seal(data.client_secret),
    webhookSecretSealed: core.sealer.seal(data.webhook_secret ?? ""),
    privateKeySealed: core.sealer.seal(data.pem),
    createdBy: flow.userId,
    createdAt: now,
  };
  const secret = data.webhook_secret;
  try {
    await core.store.write(
      (function* () {
        yield* exec(core.db.insert(codehostApps).values(app));
        if (secret) {
          yield* exec(
            core.db
              .update(integrations)
              .set({ secretSealed: app.webhookSecretSealed, secretLast4: secret.slice(-4), enabled: true, updatedAt: now })
              .where(eq(integrations.id, app.integrationId)),
          );
        }
      })(),
    );
  } catch (err) {
    if (isUniqueViolation(err)) throw conflict("this server already has its GitHub app", { reason: "app_exists" });
    throw err;
  }
  core.log.info("GitHub app created", { appId: app.appId, slug: app.slug, orgId: app.orgId });
  return app;
}

/** The app's webhook secret in clear, for the integration's signature check. */
export function appWebhookSecret(core: Core, app: AppRow): string {
  return core.sealer.open(app.webhookSecretSealed);
}
