// `ao login` (device sign-in approved through the API), the session file, refresh by rotation,
// `ao logout`, AO_SERVER + AO_TOKEN, `ao token create`.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startTestServer, type TestServer } from "../helpers/server";
import { createAdmin, login, makeToken, type Session } from "../helpers/identity";
import { newConfigDir, readSessionFile, runCli, seedSession, sessionFile, spawnCli, writeSessionFile } from "./helpers";
import { ApiClient } from "../../src/cli/client/http";
import type { Session as CliSession } from "../../src/cli/client/config";
import { run } from "../../src/db/query";

let s: TestServer;
let owner: Session;

beforeAll(async () => {
  s = await startTestServer();
  owner = await createAdmin(s);
});
afterAll(() => s.stop());

/** A fresh sign-in of the owner, written as a session file in a new config directory. */
async function signedInDir(): Promise<{ dir: string; refreshToken: string; accessToken: string }> {
  const dir = newConfigDir();
  const t = await login(s, owner.email);
  seedSession(dir, s.url, { ...t, email: owner.email, orgId: owner.orgId });
  return { dir, ...t };
}

const mode = (path: string) => statSync(path).mode & 0o777;

// The server's device polling interval is 5 s, so the three sign-ins run side by side.
describe("ao login (device sign-in)", () => {
  test.concurrent("approved in the web app: stores the session 0600 in a 0700 directory", async () => {
    const dir = join(newConfigDir(), "nested", "ao");
    const cli = spawnCli(["login", "--server", s.url], { AO_CONFIG_DIR: dir });
    const [, code] = await cli.waitFor(/Code: ([B-Z]{4}-[B-Z]{4})/);
    expect(cli.output().stdout).toContain(`${s.url}/device?code=${code}`);
    expect(existsSync(sessionFile(dir))).toBe(false);

    const approved = await s.api("POST", "/auth/device/approve", { body: { userCode: code!.toLowerCase() }, token: owner.accessToken });
    expect(approved.status).toBe(200);
    const r = await cli.done;
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Signed in to ${s.url} as ${owner.email}, organization admin-org (${owner.orgId})`);

    expect(mode(sessionFile(dir))).toBe(0o600);
    expect(mode(dir)).toBe(0o700);
    const saved = readSessionFile(dir);
    expect(saved).toMatchObject({ server: s.url, orgId: owner.orgId, orgName: "admin-org", user: { id: owner.userId, email: owner.email } });
    expect(Date.parse(saved.accessTokenExpiresAt!)).toBeGreaterThan(Date.now() + 14 * 60_000);
    // The stored pair is a working sign-in.
    expect((await s.api("GET", "/me", { token: saved.accessToken })).body.id).toBe(owner.userId);
    expect((await s.api("POST", "/auth/refresh", { body: { refreshToken: saved.refreshToken } })).status).toBe(200);
  }, 20_000);

  test.concurrent("denied in the web app: exit 1, nothing stored", async () => {
    const dir = newConfigDir();
    const cli = spawnCli(["login", "--server", s.url + "/api/v1/"], { AO_CONFIG_DIR: dir });
    const [, code] = await cli.waitFor(/Code: ([B-Z]{4}-[B-Z]{4})/);
    expect((await s.api("POST", "/auth/device/deny", { body: { userCode: code }, token: owner.accessToken })).status).toBe(200);
    const r = await cli.done;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("sign-in was denied");
    expect(existsSync(sessionFile(dir))).toBe(false);
  }, 20_000);

  test.concurrent("code expired before anyone confirmed it: exit 1 with advice", async () => {
    const dir = newConfigDir();
    const cli = spawnCli(["login", "--server", s.url], { AO_CONFIG_DIR: dir });
    const [, code] = await cli.waitFor(/Code: ([B-Z]{4}-[B-Z]{4})/);
    await s.core.store.write(run("UPDATE device_grants SET expires_at = ? WHERE user_code = ?", Date.now() - 1000, code!.replace("-", "")));
    const r = await cli.done;
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("the code expired before it was confirmed; run `ao login` again");
    expect(existsSync(sessionFile(dir))).toBe(false);
  }, 20_000);

  test.concurrent("someone in no organization is signed in all the same, and told so", async () => {
    const email = `loner-${Date.now()}@example.test`;
    expect((await s.api("POST", "/admin/users", { body: { email, password: owner.password }, token: owner.accessToken })).status).toBe(201);
    const loner = await login(s, email, owner.password);
    const dir = newConfigDir();
    const cli = spawnCli(["login", "--server", s.url], { AO_CONFIG_DIR: dir });
    const [, code] = await cli.waitFor(/Code: ([B-Z]{4}-[B-Z]{4})/);
    expect((await s.api("POST", "/auth/device/approve", { body: { userCode: code }, token: loner.accessToken })).status).toBe(200);
    const r = await cli.done;
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`as ${email}. You are in no organization yet`);
    expect(readSessionFile(dir)).toMatchObject({ orgId: "", user: { email } });
    const list = await runCli(["task", "list"], { AO_CONFIG_DIR: dir });
    expect(list.code).toBe(1);
    expect(list.stderr).toContain("you are not a member of any organization");
  }, 20_000);

  test("bad command lines exit 2", async () => {
    const table: [string[], RegExp][] = [
      [["login"], /--server is required/],
      [["login", "--server", "not a url"], /not a URL/],
      [["login", "--server", s.url, "--bogus"], /Unknown option '--bogus'/],
    ];
    for (const [args, message] of table) {
      const r = await runCli(args, { AO_CONFIG_DIR: newConfigDir() });
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr).toMatch(message);
    }
  });

  test("an unreachable server: exit 1 naming it", async () => {
    const r = await runCli(["login", "--server", "http://127.0.0.1:1"], { AO_CONFIG_DIR: newConfigDir() });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("cannot reach http://127.0.0.1:1");
  });
});

describe("refresh by rotation", () => {
  test("a refused access token is rotated once; the new pair is stored 0600", async () => {
    const { dir, refreshToken } = await signedInDir();
    const before = readSessionFile(dir);
    writeSessionFile(dir, { ...before, accessToken: "eyJhbGciOiJIUzI1NiJ9.e30.invalid" });
    const r = await runCli(["token", "create", "--name", "after-refresh", "--json"], { AO_CONFIG_DIR: dir });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).token).toStartWith("aot_");
    const after = readSessionFile(dir);
    expect(after.refreshToken).not.toBe(refreshToken);
    expect(after.accessToken).not.toBe("eyJhbGciOiJIUzI1NiJ9.e30.invalid");
    expect(mode(sessionFile(dir))).toBe(0o600);
    expect((await s.api("GET", "/me", { token: after.accessToken })).status).toBe(200);
  });

  test("an access token past its expiry is rotated before use", async () => {
    const { dir, refreshToken } = await signedInDir();
    const before = readSessionFile(dir);
    writeSessionFile(dir, { ...before, accessTokenExpiresAt: new Date(Date.now() - 1000).toISOString() });
    const r = await runCli(["token", "create", "--name", "proactive"], { AO_CONFIG_DIR: dir });
    expect(r.code).toBe(0);
    const after = readSessionFile(dir);
    expect(after.refreshToken).not.toBe(refreshToken);
    expect(Date.parse(after.accessTokenExpiresAt!)).toBeGreaterThan(Date.now());
  });

  test("several ao processes at once rotate once between them (the file lock), and all succeed", async () => {
    const { dir } = await signedInDir();
    writeSessionFile(dir, { ...readSessionFile(dir), accessTokenExpiresAt: new Date(0).toISOString() });
    const results = await Promise.all([1, 2, 3, 4].map((i) => runCli(["token", "create", "--name", `parallel-${i}`], { AO_CONFIG_DIR: dir })));
    for (const r of results) expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    // Had two of them used the same refresh token, the family would be revoked: it is not.
    const final = readSessionFile(dir);
    expect((await s.api("POST", "/auth/refresh", { body: { refreshToken: final.refreshToken } })).status).toBe(200);
    expect(existsSync(join(dir, "session.lock"))).toBe(false);
  });

  test("parallel requests of one process single-flight their refresh", async () => {
    const { dir } = await signedInDir();
    const session: CliSession = { ...readSessionFile(dir), accessToken: "eyJhbGciOiJIUzI1NiJ9.e30.invalid" };
    const client = new ApiClient(s.url, { kind: "session", session, configDir: dir });
    const answers = await Promise.all(Array.from({ length: 6 }, () => client.request("GET", "/me")));
    expect(answers.map((a) => a.id)).toEqual(Array(6).fill(owner.userId));
    const final = readSessionFile(dir);
    expect(final.refreshToken).toBe(client.session!.refreshToken);
    expect((await s.api("POST", "/auth/refresh", { body: { refreshToken: final.refreshToken } })).status).toBe(200);
  });

  test("a reused refresh token: exit 1, told to log in again", async () => {
    const { dir, refreshToken } = await signedInDir();
    expect((await s.api("POST", "/auth/refresh", { body: { refreshToken } })).status).toBe(200); // someone else used it
    writeSessionFile(dir, { ...readSessionFile(dir), accessTokenExpiresAt: new Date(0).toISOString() });
    const r = await runCli(["token", "create", "--name", "x"], { AO_CONFIG_DIR: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("already been used");
    expect(r.stderr).toContain("run `ao login` again");
  });

  test("a corrupt session file: exit 1 with advice", async () => {
    const dir = newConfigDir();
    writeFileSync(sessionFile(dir), "{nope", { mode: 0o600 });
    const r = await runCli(["task", "list"], { AO_CONFIG_DIR: dir });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("is not a valid session file");
  });
});

describe("ao logout", () => {
  test("revokes the sign-in on the server and deletes the file", async () => {
    const { dir, refreshToken } = await signedInDir();
    const { accessToken } = readSessionFile(dir);
    const r = await runCli(["logout"], { AO_CONFIG_DIR: dir });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Signed out of ${s.url}`);
    expect(existsSync(sessionFile(dir))).toBe(false);
    expect((await s.api("GET", "/me", { token: accessToken })).status).toBe(401);
    expect((await s.api("POST", "/auth/refresh", { body: { refreshToken } })).status).toBe(401);
    const again = await runCli(["logout"], { AO_CONFIG_DIR: dir });
    expect(again).toMatchObject({ code: 0, stdout: "Not signed in.\n" });
  });

  test("a session already ended elsewhere still logs out locally", async () => {
    const { dir, accessToken } = await signedInDir();
    expect((await s.api("POST", "/auth/logout", { token: accessToken })).status).toBe(204);
    const r = await runCli(["logout"], { AO_CONFIG_DIR: dir });
    expect(r.code).toBe(0);
    expect(r.stderr).toBe("");
    expect(existsSync(sessionFile(dir))).toBe(false);
  });
});

describe("AO_SERVER and AO_TOKEN", () => {
  test("configure the client without a session file; tokens cannot make tokens", async () => {
    const token = await makeToken(s, owner);
    const env = { AO_CONFIG_DIR: newConfigDir(), AO_SERVER: s.url, AO_TOKEN: token };
    const r = await runCli(["token", "create", "--name", "nested"], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^ao: forbidden: /);
    expect(existsSync(sessionFile(env.AO_CONFIG_DIR))).toBe(false);
  });

  test("misconfigurations exit 2 or 1 with a clear message", async () => {
    const table: [Record<string, string>, number, RegExp][] = [
      [{ AO_TOKEN: "aot_x" }, 2, /AO_TOKEN needs AO_SERVER/],
      [{ AO_TOKEN: "secret", AO_SERVER: s.url }, 2, /must be a personal API token/],
      [{}, 1, /not signed in: run `ao login --server URL`/],
      [{ AO_TOKEN: "aot_0000000000000000000000000000000000ab", AO_SERVER: s.url }, 1, /^ao: unauthorized: /],
    ];
    for (const [env, code, message] of table) {
      const r = await runCli(["task", "list"], { AO_CONFIG_DIR: newConfigDir(), ...env });
      expect({ env, code: r.code }).toEqual({ env, code });
      expect(r.stderr).toMatch(message);
    }
  });
});

describe("ao token create", () => {
  test("prints the value once on stdout; role and expiry are passed on", async () => {
    const { dir } = await signedInDir();
    const r = await runCli(["token", "create", "--name", "ci", "--role", "viewer", "--expires-at", "2099-01-01"], { AO_CONFIG_DIR: dir });
    expect(r.code).toBe(0);
    const value = r.stdout.trim();
    expect(value).toMatch(/^aot_[0-9A-Za-z]{36}$/);
    expect(r.stderr).toContain("not shown again");
    const me = await s.api("GET", "/me", { token: value });
    expect(me.body.via).toMatchObject({ type: "token", orgId: owner.orgId, role: "viewer" });
    const listed = await s.api("GET", "/me/tokens", { token: owner.accessToken });
    expect(listed.body.items.find((t: any) => t.name === "ci")).toMatchObject({ role: "viewer", expiresAt: "2099-01-01T00:00:00.000Z" });
  });

  test("bad command lines exit 2", async () => {
    const { dir } = await signedInDir();
    const table: [string[], RegExp][] = [
      [["token", "create"], /--name is required/],
      [["token", "create", "--name", "x", "--role", "god"], /--role must be one of owner, admin, member, viewer/],
      [["token", "create", "--name", "x", "--expires-at", "soon"], /--expires-at must be an ISO 8601 time/],
      [["token", "mint"], /unknown command 'token mint'/],
      [["token"], /usage: ao token create/],
    ];
    for (const [args, message] of table) {
      const r = await runCli(args, { AO_CONFIG_DIR: dir });
      expect({ args, code: r.code }).toEqual({ args, code: 2 });
      expect(r.stderr + r.stdout).toMatch(message);
    }
  });
});
