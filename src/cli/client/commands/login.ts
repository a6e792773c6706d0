// `ao login` (device sign-in) and `ao logout`.
import { hostname } from "node:os";
import { flag, parse, str } from "../args";
import { configDir, deleteSession, readSession, writeSession, type Session } from "../config";
import { resolveOrg } from "../context";
import { ApiFailure, CliError, Unreachable, UsageError } from "../errors";
import { ApiClient, expiryOf, normalizeServer } from "../http";
import { printHelp, run } from "../run";

interface DeviceStart {
  deviceCode: string;
  userCode: string;
  verificationUri: string;
  verificationUriComplete?: string;
  expiresIn: number;
  intervalSec: number;
}

interface SignedIn {
  accessToken: string;
  expiresIn?: number;
  refreshToken: string;
  user?: { id: string; email?: string; name?: string | null };
}

export function login(args: string[]): Promise<number> {
  return run("login", async () => {
    const p = parse(args, { server: { type: "string" }, org: { type: "string" } });
    if (flag(p, "help")) return printHelp("login");
    const serverArg = str(p, "server") ?? process.env.AO_SERVER;
    if (!serverArg) throw new UsageError("--server is required (the URL of your ao server)");
    let server: string;
    try {
      server = normalizeServer(serverArg);
    } catch (err) {
      throw new UsageError(`--server: ${(err as Error).message}`);
    }
    const dir = configDir();
    const anonymous = new ApiClient(server, { kind: "none" });
    const start = await anonymous.request<DeviceStart>("POST", "/auth/device/start", { body: { clientName: `ao cli on ${hostname()}` } });
    const link = start.verificationUriComplete ?? start.verificationUri;
    console.log(`To sign in, open this link and confirm the code ${start.userCode}:\n\n  ${link}\n`);
    console.log(`Code: ${start.userCode} (valid for ${Math.round(start.expiresIn / 60)} minutes). Waiting for confirmation...`);

    const pair = await pollDevice(anonymous, start);
    const draft: Session = { server, accessToken: pair.accessToken, accessTokenExpiresAt: expiryOf(pair), refreshToken: pair.refreshToken, user: pair.user ?? { id: "" }, orgId: "" };
    const client = new ApiClient(server, { kind: "session", session: draft, configDir: dir });
    if (!pair.user) {
      const me = await client.request<any>("GET", "/me");
      draft.user = me?.user ?? me;
    }
    const orgChoice = str(p, "org");
    // Someone in no organization yet is still signed in; the org is chosen when there is one.
    const org = orgChoice === undefined && !(await hasOrg(client)) ? null : await resolveOrg(client, orgChoice);
    const session: Session = { ...(client.session ?? draft), user: pickUser(draft.user), orgId: org?.id ?? "", orgName: org?.name };
    writeSession(session, dir);
    const who = `Signed in to ${server} as ${session.user.email ?? session.user.id}`;
    if (org) console.log(`${who}, organization ${org.name} (${org.id}).`);
    else console.log(`${who}. You are in no organization yet: create one in the web app or ask an administrator to add you.`);
  });
}

async function hasOrg(client: ApiClient): Promise<boolean> {
  const page = await client.request<{ items: unknown[] }>("GET", "/orgs", { query: { limit: 1 } });
  return page.items.length > 0;
}

const pickUser = (u: Session["user"]) => ({ id: u.id, email: u.email, name: u.name ?? null });

/** Polls every intervalSec (RFC 8628): slower after slow_down, done on approval, denial or expiry. */
async function pollDevice(client: ApiClient, start: DeviceStart): Promise<SignedIn> {
  let intervalMs = Math.max(1, start.intervalSec || 5) * 1000;
  const deadline = Date.now() + (start.expiresIn || 600) * 1000;
  let warned = false;
  for (;;) {
    await Bun.sleep(intervalMs);
    try {
      return await client.request<SignedIn>("POST", "/auth/device/poll", { body: { deviceCode: start.deviceCode } });
    } catch (err) {
      if (err instanceof ApiFailure) {
        if (err.code === "authorization_pending") continue;
        if (err.code === "slow_down") {
          const told = (err.details as { intervalSec?: unknown } | undefined)?.intervalSec;
          intervalMs = typeof told === "number" ? told * 1000 : intervalMs + 5_000;
          continue;
        }
        if (err.code === "access_denied") throw new CliError("sign-in was denied in the web app");
        if (err.code === "expired_token") throw new CliError("the code expired before it was confirmed; run `ao login` again");
        throw err;
      }
      // The server may restart while the person confirms; keep trying until the code expires.
      if (!(err instanceof Unreachable) || Date.now() > deadline) throw err;
      if (!warned) console.error(`ao: ${err.message}; still trying`);
      warned = true;
    }
  }
}

export function logout(args: string[]): Promise<number> {
  return run("logout", async () => {
    const p = parse(args, {});
    if (flag(p, "help")) return printHelp("logout");
    const dir = configDir();
    const session = readSession(dir);
    if (!session) {
      console.log(process.env.AO_TOKEN ? "Not signed in (AO_TOKEN is used as is; unset it to stop using it)." : "Not signed in.");
      return;
    }
    try {
      await new ApiClient(session.server, { kind: "session", session, configDir: dir }).request("POST", "/auth/logout");
    } catch (err) {
      // An already ended session is as good as logged out; anything else is worth a warning.
      const ended = (err instanceof ApiFailure && err.status === 401) || (err instanceof CliError && !(err instanceof Unreachable));
      if (!ended) console.error(`ao: could not end the session on the server (${(err as Error).message}); deleting it here anyway`);
    }
    deleteSession(dir);
    console.log(`Signed out of ${session.server}.`);
  });
}
