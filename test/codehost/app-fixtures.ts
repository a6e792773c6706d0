// What the code-hosting app's tests share: the GitHub stand-in (real HTTP on loopback) with
// octo-admin signed in, a server pointed at it and the server's admin; the API as that admin, a
// browser that follows no redirect, a person's own GitHub connection; and, for tests that are not
// about making them, ao's app made from its manifest and installed on the organization acme.
import { expect } from "bun:test";
import { startTestServer, type ApiResponse, type TestServer } from "../helpers/server";
import { createAdmin, type Session } from "../helpers/identity";
import { startGitHubStandIn, type GitHubStandIn } from "../helpers/github-standin";

export interface Codehost {
  gh: GitHubStandIn;
  s: TestServer;
  owner: Session;
  /** The path of the admin's organization in the API. */
  org(): string;
  /** The API, as the admin unless `token` says otherwise. */
  api(method: string, path: string, body?: unknown, token?: string): Promise<ApiResponse>;
  /**
   * The person's own GitHub connection (the app's OAuth web flow), as `login` at GitHub; the
   * stand-in is signed in as octo-admin again after.
   */
  connectGithub(who: Session, login: string): Promise<void>;
  stop(): Promise<void>;
}

/** A browser following one redirect without following it further. */
export async function visit(url: string, init: RequestInit = {}) {
  const r = await fetch(url, { ...init, redirect: "manual" });
  return { status: r.status, location: r.headers.get("location"), body: await r.text() };
}

export async function startCodehost(): Promise<Codehost> {
  const gh = await startGitHubStandIn();
  gh.signIn("octo-admin");
  const s = await startTestServer({ github: { url: gh.url, apiUrl: gh.apiUrl, retryBaseMs: 300, maxTries: 6 } });
  const owner = await createAdmin(s);
  const api: Codehost["api"] = (method, path, body, token = owner.accessToken) => s.api(method, path, { token, body });
  return {
    gh,
    s,
    owner,
    org: () => `/orgs/${owner.orgId}`,
    api,
    async connectGithub(who, login) {
      gh.signIn(login);
      try {
        const r = await api("POST", `/orgs/${who.orgId}/codehost/user`, undefined, who.accessToken);
        expect(r.status).toBe(200);
        const atGithub = await visit(r.body.url);
        const back = await visit(atGithub.location!);
        expect(back.location).toBe(`${s.url}/github?connection=${login}`);
      } finally {
        gh.signIn("octo-admin");
      }
    },
    async stop() {
      await s.stop();
      await gh.close();
    },
  };
}

/**
 * ao's app "ao test app" made from its manifest, the admin's own connection as octo-admin, and the
 * app installed on the organization acme (130 repositories) through the setup callback: where
 * app.test.ts's tests leave them, for tests that are not about how they are made.
 */
export async function installApp({ gh, owner, org, api, connectGithub }: Codehost) {
  const { url, manifest } = (await api("POST", `${org()}/codehost/app/manifest`, { name: "ao test app" })).body;
  const made = await visit(url, { method: "POST", body: new URLSearchParams({ manifest: JSON.stringify(manifest) }) });
  expect((await visit(made.location!)).status).toBe(302);
  const slug = gh.app("ao-test-app").record.slug;
  await connectGithub(owner, "octo-admin");
  expect((await visit((await api("POST", `${org()}/codehost/installations`)).body.url)).status).toBe(200);
  const done = await gh.install(slug, "acme", { type: "Organization", repositories: 130 });
  expect((await visit(done.setupRedirect!)).status).toBe(302);
  return { slug, hookUrl: manifest.hook_attributes.url as string, installationId: done.installation.record.id };
}
