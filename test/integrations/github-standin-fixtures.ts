// What the GitHub stand-in's tests share: a stand-in with an app made through the manifest flow
// and converted by GitHub's own client (@octokit/rest), that app as ao makes one (@octokit/app)
// and its installation on the organization acme with 150 repositories.
import { App } from "@octokit/app";
import { Octokit } from "@octokit/rest";
import { startGitHubStandIn, type GitHubStandIn } from "../helpers/github-standin";

export const redirect = "http://127.0.0.1:9/codehost/app/callback";
export const manifest = {
  name: "ao test",
  url: "http://127.0.0.1:9",
  hook_attributes: { url: "http://127.0.0.1:9/api/v1/hooks/x", active: false },
  redirect_url: redirect,
  callback_urls: ["http://127.0.0.1:9/api/v1/codehost/user/callback"],
  setup_url: "http://127.0.0.1:9/api/v1/codehost/installations/callback",
  public: true,
  default_permissions: { contents: "write", pull_requests: "write", issues: "write", metadata: "read", administration: "write" },
  default_events: ["issues", "issue_comment", "pull_request"],
};

/** An App as ao makes one: @octokit/app signing JWTs with `privateKey`, talking to the stand-in's API. */
function newApp(GHOctokit: typeof Octokit, created: any, privateKey: string) {
  return new App({ appId: created.id, privateKey, Octokit: GHOctokit, oauth: { clientId: created.client_id, clientSecret: created.client_secret } });
}
export type OctokitApp = ReturnType<typeof newApp>;

export interface StandInWithApp {
  gh: GitHubStandIn;
  /** @octokit/rest pointed at the stand-in's API. */
  GHOctokit: typeof Octokit;
  /** What the manifest conversion handed back. */
  created: any;
  app: OctokitApp;
  installationId: number;
  /** Another App as ao makes one, signing with `privateKey`. */
  makeApp(privateKey: string): OctokitApp;
  /** Posts `m` to the manifest page at `path` with `state`, as a person's browser does: GitHub's answer. */
  manifestCode(state: string, path?: string, m?: object): Promise<Response>;
}

export async function startStandInWithApp(): Promise<StandInWithApp> {
  const gh = await startGitHubStandIn();
  const GHOctokit = Octokit.defaults({ baseUrl: gh.apiUrl });
  const manifestCode = async (state: string, path = "/settings/apps/new", m: object = manifest) => {
    const form = new FormData();
    form.set("manifest", JSON.stringify(m));
    return fetch(`${gh.url}${path}?state=${state}`, { method: "POST", body: form, redirect: "manual" });
  };
  const res = await manifestCode("st-1");
  const location = new URL(res.headers.get("location")!);
  const created = (await new GHOctokit().request("POST /app-manifests/{code}/conversions", { code: location.searchParams.get("code")! })).data as any;
  const makeApp = (privateKey: string) => newApp(GHOctokit, created, privateKey);
  const app = makeApp(created.pem);
  const { installation } = await gh.install(created.slug, "acme", { repositories: 150, type: "Organization" });
  return { gh, GHOctokit, created, app, installationId: installation.record.id, makeApp, manifestCode };
}
