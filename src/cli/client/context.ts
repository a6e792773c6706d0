// Who the command talks to and as whom: AO_SERVER + AO_TOKEN (CI), else the stored session.
// The organization: --org, AO_ORG, the session's, or the caller's first one.
import { configDir, readSession } from "./config";
import { ApiClient, normalizeServer } from "./http";
import { CliError, UsageError } from "./errors";

export interface Context {
  client: ApiClient;
  orgId: string;
}

export function clientFromEnvironment(env: NodeJS.ProcessEnv = process.env): ApiClient {
  const token = env.AO_TOKEN;
  if (token) {
    if (!token.startsWith("aot_")) throw new UsageError("AO_TOKEN must be a personal API token (aot_...)");
    if (!env.AO_SERVER) throw new UsageError("AO_TOKEN needs AO_SERVER (the server's URL)");
    return new ApiClient(normalizeServer(env.AO_SERVER), { kind: "token", token });
  }
  const dir = configDir(env);
  const session = readSession(dir);
  if (!session) throw new CliError("not signed in: run `ao login --server URL`, or set AO_SERVER and AO_TOKEN");
  return new ApiClient(session.server, { kind: "session", session, configDir: dir });
}

interface OrgItem {
  id: string;
  name: string;
  role?: string;
}

/** Every org the caller can see (GET /orgs, all pages). */
async function listOrgs(client: ApiClient): Promise<OrgItem[]> {
  const out: OrgItem[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.request<{ items: OrgItem[]; nextCursor: string | null }>("GET", "/orgs", { query: { limit: 200, cursor } });
    out.push(...page.items);
    cursor = page.nextCursor ?? undefined;
  } while (cursor);
  return out;
}

/** An org id from an id or a name; with no choice at all, the caller's first org. */
export async function resolveOrg(client: ApiClient, choice: string | undefined): Promise<OrgItem> {
  if (choice?.startsWith("org_")) return { id: choice, name: choice };
  if (client.kind === "token") return tokenOrg(client, choice);
  const orgs = await listOrgs(client);
  if (choice === undefined) {
    if (orgs.length === 0) throw new CliError("you are not a member of any organization");
    return orgs[0]!;
  }
  const found = orgs.find((o) => o.name === choice) ?? orgs.find((o) => o.name.toLowerCase() === choice.toLowerCase());
  if (!found) throw new CliError(`no organization named '${choice}' among yours (${orgs.map((o) => o.name).join(", ") || "none"})`);
  return found;
}

/** A personal API token works in one org: GET /me names it, GET /orgs/:orgId its name. */
async function tokenOrg(client: ApiClient, choice: string | undefined): Promise<OrgItem> {
  const me = await client.request<{ via?: { orgId?: string } }>("GET", "/me");
  const orgId = me.via?.orgId;
  if (!orgId) throw new CliError("cannot tell the organization of AO_TOKEN; set AO_ORG or pass --org");
  if (choice === undefined) return { id: orgId, name: orgId };
  const org = await client.request<OrgItem>("GET", `/orgs/${encodeURIComponent(orgId)}`);
  if (org.name.toLowerCase() !== choice.toLowerCase()) throw new CliError(`AO_TOKEN belongs to organization ${org.name} (${org.id}), not '${choice}'`);
  return org;
}

export async function connect(orgFlag: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<Context> {
  const client = clientFromEnvironment(env);
  const choice = orgFlag ?? (env.AO_ORG || undefined);
  if (choice === undefined && client.session?.orgId) return { client, orgId: client.session.orgId };
  return { client, orgId: (await resolveOrg(client, choice)).id };
}
