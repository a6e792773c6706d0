// The API routes a GitHub App calls as itself: turning a manifest's code into the app's
// credentials, then with its JWT its own record, its installations, their access tokens and
// the installation on a repository, organization or user.
import * as shapes from "./shapes";
import { checkAppJwt } from "./jwt";
import { answers, body } from "./answers";
import { randomToken, type Credentials, type Permissions, type StandInRepository, type World } from "./world";

/** Answers the app's routes; null when `p` is none of them. */
export async function appApi(w: World, req: Request, p: string, auth: Credentials): Promise<Response | null> {
  const { json, error, notFound, validation, paged } = answers(w);
  const method = req.method;
  let m: RegExpMatchArray | null;

  if (method === "POST" && (m = p.match(/^\/app-manifests\/([^/]+)\/conversions$/))) {
    const appId = w.manifestCodes.get(m[1]!);
    w.manifestCodes.delete(m[1]!);
    if (appId === undefined) return notFound();
    const a = w.apps.get(appId)!;
    return json(201, {
      ...shapes.app(w.hosts, a.record, a.clientId),
      client_id: a.clientId,
      client_secret: a.clientSecret,
      webhook_secret: a.webhookSecret,
      pem: a.pem,
    });
  }

  // routes an app calls with its JWT: its own, and finding its installation on a repository or account
  const installationOf = p.match(/^\/(?:repos\/([^/]+)\/([^/]+)|orgs\/([^/]+)|users\/([^/]+))\/installation$/);
  if (p === "/app" || p.startsWith("/app/") || (installationOf && method === "GET")) {
    if (!auth.jwt) return error(401, "A JSON web token could not be decoded");
    const check = checkAppJwt(auth.jwt, (iss) => [...w.apps.values()].find((a) => String(a.record.id) === iss || a.clientId === iss)?.publicKey ?? null);
    if (!check.ok) return error(401, check.message);
    const a = [...w.apps.values()].find((x) => String(x.record.id) === check.iss || x.clientId === check.iss)!;
    const mine = [...w.installations.values()].filter((i) => i.record.app.id === a.record.id).sort((x, y) => x.record.id - y.record.id);
    if (method === "GET" && p === "/app") return json(200, { ...shapes.app(w.hosts, a.record, a.clientId), installations_count: mine.length });
    if (installationOf) {
      const [, owner, name, org, user] = installationOf.map((x) => (x === undefined ? undefined : decodeURIComponent(x)));
      const login = (owner ?? org ?? user)!.toLowerCase();
      const repo = owner && name ? w.repos.get(w.repoKey(owner, name)) : null;
      const inst = mine.find((i) => i.record.account.login.toLowerCase() === login && (!repo || w.installationRepos(i).includes(repo)));
      if (!inst || (owner && !repo)) return notFound();
      return json(200, shapes.installation(w.hosts, inst.record));
    }
    if (method === "GET" && p === "/app/installations") return paged(req, mine.map((i) => shapes.installation(w.hosts, i.record)));
    if ((m = p.match(/^\/app\/installations\/(\d+)$/))) {
      const inst = mine.find((i) => i.record.id === Number(m![1]));
      if (!inst) return notFound();
      if (method === "GET") return json(200, shapes.installation(w.hosts, inst.record));
      if (method === "DELETE") {
        w.installations.delete(inst.record.id);
        return json(204, null);
      }
    }
    if (method === "POST" && (m = p.match(/^\/app\/installations\/(\d+)\/access_tokens$/))) {
      const inst = mine.find((i) => i.record.id === Number(m![1]));
      if (!inst) return notFound();
      if (inst.record.suspendedAt) return error(403, "This installation has been suspended");
      const b = (await body(req)) ?? {};
      const available = w.installationRepos(inst);
      let chosen: StandInRepository[] | null = null;
      if (Array.isArray(b.repositories) || Array.isArray(b.repository_ids)) {
        chosen = [];
        for (const n of b.repositories ?? []) {
          const r = available.find((x) => x.record.name.toLowerCase() === String(n).toLowerCase());
          if (!r) return validation([], "There is at least one repository that does not exist or is not accessible to the parent installation.");
          chosen.push(r);
        }
        for (const rid of b.repository_ids ?? []) {
          const r = available.find((x) => x.record.id === Number(rid));
          if (!r) return validation([], "There is at least one repository that does not exist or is not accessible to the parent installation.");
          chosen.push(r);
        }
      }
      let permissions = inst.record.permissions;
      if (b.permissions && typeof b.permissions === "object") {
        const rank = (v: string | undefined) => (v === "write" || v === "admin" ? 2 : v === "read" ? 1 : 0);
        for (const [k, v] of Object.entries(b.permissions as Permissions))
          if (rank(v) > rank(inst.record.permissions[k])) return validation([], "The permissions requested are not granted to this installation.");
        permissions = b.permissions;
      }
      const token = randomToken("ghs_");
      const expiresAt = Date.now() + 3600_000;
      w.tokens.set(token, { kind: "installation", installationId: inst.record.id, repositoryIds: chosen ? new Set(chosen.map((r) => r.record.id)) : null, permissions, expiresAt });
      return json(201, {
        token,
        expires_at: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, "Z"),
        permissions,
        repository_selection: chosen ? "selected" : inst.record.repositorySelection,
        ...(chosen ? { repositories: chosen.map((r) => shapes.repository(w.hosts, r.record)) } : {}),
      });
    }
    return notFound();
  }
  return null;
}
