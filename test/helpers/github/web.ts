// The web side of github.com: the app manifest form, an app's installation page, the OAuth
// authorize page and token exchange, all as the signed-in person; and git over HTTP, with
// GitHub's answers to a missing, unreadable or read-only repository.
import { randomBytes } from "node:crypto";
import { body, HTML } from "./answers";
import { gitService, serveGit } from "./git-http";
import { now, randomToken, type Json, type StandInApp, type Token, type World } from "./world";

// ---- web side: github.com ------------------------------------------------------------

export async function web(w: World, req: Request, u: URL): Promise<Response | null> {
  const p = u.pathname;
  let m: RegExpMatchArray | null;
  if (req.method === "POST" && (p === "/settings/apps/new" || (m = p.match(/^\/organizations\/([^/]+)\/settings\/apps\/new$/)))) {
    const orgLogin = p.startsWith("/organizations/") ? decodeURIComponent(p.split("/")[2]!) : null;
    const form = await req.formData().catch(() => null);
    let manifest: Json;
    try {
      manifest = JSON.parse(String(form?.get("manifest") ?? ""));
    } catch {
      return new Response("<p>Invalid GitHub App configuration: the manifest is not JSON</p>", { status: 422, headers: HTML });
    }
    if (!manifest?.url || typeof manifest.url !== "string")
      return new Response("<p>Invalid GitHub App configuration: url wasn't supplied</p>", { status: 422, headers: HTML });
    const made = w.createApp(manifest, orgLogin);
    if (typeof made === "string") return new Response(`<p>${made}</p>`, { status: 422, headers: HTML });
    const a = made;
    const code = randomBytes(20).toString("hex");
    w.manifestCodes.set(code, a.record.id);
    const to = new URL(a.redirectUrl ?? `${w.url}/settings/apps/${a.record.slug}`);
    to.searchParams.set("code", code);
    const state = u.searchParams.get("state");
    if (state !== null) to.searchParams.set("state", state);
    return Response.redirect(to.toString(), 302);
  }
  if (req.method === "GET" && (m = p.match(/^\/(?:github-)?apps\/([^/]+)\/installations\/new$/))) {
    let a: StandInApp;
    try {
      a = w.app(decodeURIComponent(m[1]!));
    } catch {
      return new Response("Not Found", { status: 404, headers: HTML });
    }
    const state = u.searchParams.get("state");
    if (state !== null) a.installStates.push(state);
    return new Response(`<h1>Install ${a.record.name}</h1>`, { status: 200, headers: HTML });
  }
  if (req.method === "GET" && p === "/login/oauth/authorize") {
    const clientId = u.searchParams.get("client_id");
    const a = [...w.apps.values()].find((x) => x.clientId === clientId);
    if (!a) return new Response("Not Found", { status: 404, headers: HTML });
    const redirect = u.searchParams.get("redirect_uri") ?? a.callbackUrls[0] ?? null;
    if (!redirect) return new Response("no callback URL", { status: 400, headers: HTML });
    const to = new URL(redirect);
    const state = u.searchParams.get("state");
    // GitHub accepts a redirect_uri on the host and port of a callback URL, under its path
    const allowed = a.callbackUrls.some((c) => {
      const cu = new URL(c);
      return cu.host === to.host && to.pathname.startsWith(cu.pathname);
    });
    if (!allowed) {
      const back = new URL(a.callbackUrls[0] ?? redirect);
      back.searchParams.set("error", "redirect_uri_mismatch");
      back.searchParams.set("error_description", "The redirect_uri MUST match the registered callback URL for this application.");
      if (state !== null) back.searchParams.set("state", state);
      return Response.redirect(back.toString(), 302);
    }
    const code = randomBytes(10).toString("hex");
    w.oauthCodes.set(code, { appId: a.record.id, login: w.signedIn.login, redirectUri: u.searchParams.get("redirect_uri"), expiresAt: Date.now() + 600_000 });
    to.searchParams.set("code", code);
    if (state !== null) to.searchParams.set("state", state);
    return Response.redirect(to.toString(), 302);
  }
  if (req.method === "POST" && p === "/login/oauth/access_token") {
    const b = (await body(req)) ?? {};
    const a = [...w.apps.values()].find((x) => x.clientId === b.client_id);
    const answer = (o: Json) =>
      (req.headers.get("accept") ?? "").includes("json")
        ? new Response(JSON.stringify(o), { status: 200, headers: { "content-type": "application/json; charset=utf-8" } })
        : new Response(new URLSearchParams(o).toString(), { status: 200, headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" } });
    if (!a || a.clientSecret !== b.client_secret)
      return answer({
        error: "incorrect_client_credentials",
        error_description: "The client_id and/or client_secret passed are incorrect.",
        error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#incorrect-client-credentials",
      });
    let login: string;
    if (b.grant_type === "refresh_token") {
      const r = w.refreshTokens.get(b.refresh_token);
      if (!r || r.appId !== a.record.id)
        return answer({ error: "bad_refresh_token", error_description: "The refresh token passed is incorrect or expired.", error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors" });
      w.refreshTokens.delete(b.refresh_token);
      login = r.login;
    } else {
      const c = w.oauthCodes.get(b.code);
      w.oauthCodes.delete(b.code);
      if (!c || c.appId !== a.record.id || c.expiresAt <= Date.now())
        return answer({
          error: "bad_verification_code",
          error_description: "The code passed is incorrect or expired.",
          error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#bad-verification-code",
        });
      if (b.redirect_uri && c.redirectUri && b.redirect_uri !== c.redirectUri)
        return answer({ error: "redirect_uri_mismatch", error_description: "The redirect_uri MUST match the registered callback URL for this application.", error_uri: "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/#redirect-uri-mismatch" });
      login = c.login;
    }
    const access = randomToken("ghu_");
    const refresh = randomToken("ghr_") + randomToken("");
    w.tokens.set(access, { kind: "user", login, appId: a.record.id, expiresAt: Date.now() + 28_800_000 });
    w.refreshTokens.set(refresh, { appId: a.record.id, login });
    return answer({ access_token: access, expires_in: "28800", refresh_token: refresh, refresh_token_expires_in: "15897600", scope: "", token_type: "bearer" });
  }
  return null;
}

// ---- git over HTTP -------------------------------------------------------------------

export async function gitRoute(w: World, req: Request, u: URL): Promise<Response | null> {
  const m = u.pathname.match(/^\/([^/]+)\/([^/]+?)\.git(\/.*)$/);
  if (!m) return null;
  const service = gitService(u.pathname, u.searchParams);
  if (!service) return new Response("Not Found", { status: 404 });
  const r = w.repos.get(w.repoKey(decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)));
  const challenge = () =>
    new Response("Invalid username or token. Password authentication is not supported for Git operations.\n", {
      status: 401,
      headers: { "www-authenticate": 'Basic realm="GitHub"', "content-type": "text/plain" },
    });
  const h = req.headers.get("authorization");
  let t: Token | null = null;
  let user = "anonymous";
  if (h) {
    const basic = h.match(/^basic\s+(\S+)$/i);
    if (!basic) return challenge();
    const decoded = Buffer.from(basic[1]!, "base64").toString();
    const i = decoded.indexOf(":");
    const password = i < 0 ? "" : decoded.slice(i + 1);
    const found = w.tokens.get(password);
    if (!found || found.expiresAt <= Date.now()) return challenge();
    t = found;
    user = decoded.slice(0, i) || "x-access-token";
  }
  if (!r) return t ? new Response("Repository not found.\n", { status: 404 }) : challenge();
  const access = w.repoAccess(t, r);
  const canContents = !t || t.kind === "user" || w.coveredBy(t, r);
  if (access === "none" || !canContents) return t ? new Response("Repository not found.\n", { status: 404 }) : challenge();
  if (service === "receive-pack") {
    if (!t) return challenge();
    if (access !== "write") return new Response(`Permission to ${r.record.owner.login}/${r.record.name}.git denied to ${user}.\n`, { status: 403 });
  }
  const res = await serveGit(req, w.gitRoot, `/${r.record.owner.login}/${r.record.name}.git${m[3]}`, user);
  if (service === "receive-pack" && !u.pathname.endsWith("/info/refs")) r.record.pushedAt = now();
  return res;
}
