// First run (SPEC §2): the administrator from AO_ADMIN_* variables, the one-time setup link,
// and `ao admin create-user`.
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { onPostgres, startTestServer, type TestServer } from "../helpers/server";
import { checkSetupToken, renewSetupLink, setupTokenOf } from "../../src/server/bootstrap";
import { all, get, run, type Op } from "../../src/db/query";
import { SETUP_TOKEN_LIFETIME_MS } from "../../src/modules/auth/setup-tokens";
import { iso } from "../../src/lib/time";
import { sha256Hex } from "../../src/lib/tokens";

const ENV = ["AO_ADMIN_EMAIL", "AO_ADMIN_PASSWORD", "AO_ORG_NAME"] as const;

async function withEnv<T>(vars: Partial<Record<(typeof ENV)[number], string>>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(ENV.map((k) => [k, process.env[k]]));
  for (const k of ENV) delete process.env[k];
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const k of ENV) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  }
}

/** A server whose info and warning log lines are kept. */
async function serverWithLog(dataDir?: string): Promise<{ s: TestServer; lines: string[] }> {
  const lines: string[] = [];
  const s = await startTestServer({ dataDir, logger: { info: (m) => void lines.push(m), warn: (m) => void lines.push(m), error: (m, f) => console.error(m, f) } });
  await Bun.sleep(0); // the setup line is written once the port is known
  return { s, lines };
}

const login = (s: TestServer, email: string, password: string) => s.api("POST", "/auth/login", { body: { email, password } });

describe("AO_ADMIN_EMAIL and AO_ADMIN_PASSWORD", () => {
  test("create the instance administrator and owner of AO_ORG_NAME once", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ao-boot-"));
    try {
      const s = await withEnv({ AO_ADMIN_EMAIL: "Root@Example.test", AO_ADMIN_PASSWORD: "bootstrap pw", AO_ORG_NAME: "acme" }, () => startTestServer({ dataDir }));
      const r = await login(s, "root@example.test", "bootstrap pw");
      expect(r.status).toBe(200);
      expect(r.body.user.isAdmin).toBe(true);
      const orgs = (await s.api("GET", "/orgs", { token: r.body.accessToken })).body.items;
      expect(orgs.map((o: any) => [o.name, o.role])).toEqual([["acme", "owner"]]);
      expect(setupTokenOf(s.core)).toBeNull();
      expect((await s.api("GET", "/setup")).body).toEqual({ required: false });
      await s.stop();
      // Users exist now: other variables on a restart change nothing.
      // The same instance again: the same data directory and, on PostgreSQL, the same database.
      const restart = { dataDir, databaseUrl: s.core.config.databaseUrl };
      const again = await withEnv({ AO_ADMIN_EMAIL: "other@example.test", AO_ADMIN_PASSWORD: "bootstrap pw" }, () => startTestServer(restart));
      expect((await login(again, "other@example.test", "bootstrap pw")).status).toBe(401);
      expect((await again.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM users")))!.n).toBe(1);
      await again.stop();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("AO_ORG_NAME defaults to 'default'; a too short password refuses to start", async () => {
    const s = await withEnv({ AO_ADMIN_EMAIL: "a@example.test", AO_ADMIN_PASSWORD: "bootstrap pw" }, () => startTestServer());
    const r = await login(s, "a@example.test", "bootstrap pw");
    expect((await s.api("GET", "/orgs", { token: r.body.accessToken })).body.items[0].name).toBe("default");
    await s.stop();
    const dataDir = mkdtempSync(join(tmpdir(), "ao-boot-"));
    try {
      await expect(withEnv({ AO_ADMIN_EMAIL: "a@example.test", AO_ADMIN_PASSWORD: "short" }, () => startTestServer({ dataDir }))).rejects.toThrow(/AO_ADMIN_PASSWORD/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("setup link", () => {
  test("AO_ADMIN_EMAIL without AO_ADMIN_PASSWORD (or the other way) creates nobody and says so beside the link", async () => {
    for (const vars of [{ AO_ADMIN_EMAIL: "root@example.test" }, { AO_ADMIN_PASSWORD: "bootstrap pw" }]) {
      const { s, lines } = await withEnv(vars, () => serverWithLog());
      const missing = "AO_ADMIN_EMAIL" in vars ? "AO_ADMIN_PASSWORD" : "AO_ADMIN_EMAIL";
      expect(lines.find((l) => l.includes("no administrator was created"))).toContain(`set without ${missing}`);
      expect(lines.some((l) => l.includes("/setup?token="))).toBe(true);
      expect((await s.api("GET", "/setup")).body).toEqual({ required: true });
      await s.stop();
    }
  });

  test("logged once; POST /setup with its token creates the first administrator and org, once", async () => {
    const { s, lines } = await withEnv({}, () => serverWithLog());
    try {
      const line = lines.find((l) => l.includes("/setup?token="))!;
      expect(line).toContain(`${s.core.config.publicUrl}/setup?token=`);
      const token = line.split("token=")[1];
      expect((await s.api("GET", "/setup")).body).toEqual({ required: true });

      const body = { token, email: "First@Example.test", password: "first password", name: "First", orgName: "Team" };
      // Another first character, always: a random token starting with "x" made "x" + rest the right one.
      const wrongToken = (token[0] === "x" ? "y" : "x") + token.slice(1);
      const wrong = await s.api("POST", "/setup", { body: { ...body, token: wrongToken } });
      expect(wrong.status).toBe(401);
      expect(wrong.body.error.code).toBe("unauthorized");
      for (const bad of [{ ...body, password: "short" }, { ...body, email: "nope" }, { ...body, token: undefined }]) {
        expect((await s.api("POST", "/setup", { body: bad })).status).toBe(400);
      }

      const ok = await s.api("POST", "/setup", { body });
      expect(ok.status).toBe(201);
      expect(ok.body.user).toMatchObject({ email: "first@example.test", name: "First", isAdmin: true });
      expect(ok.body.org).toMatchObject({ name: "Team", role: "owner" });
      const again = await s.api("POST", "/setup", { body: { ...body, email: "second@example.test" } });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe("conflict");
      expect((await s.api("GET", "/setup")).body).toEqual({ required: false });
      expect((await login(s, "first@example.test", "first password")).status).toBe(200);
    } finally {
      await s.stop();
    }
  });

  test("a restart logs a new link and the old one stops working; only the token's hash is stored", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ao-boot-"));
    try {
      const first = await withEnv({}, () => startTestServer({ dataDir }));
      const old = setupTokenOf(first.core)!;
      await first.stop();
      const again = await withEnv({}, () => startTestServer({ dataDir, databaseUrl: first.core.config.databaseUrl }));
      try {
        const token = setupTokenOf(again.core)!;
        expect(token).not.toBe(old);
        const stored = await again.core.store.read(all<{ token_hash: string }>("SELECT token_hash FROM setup_tokens"));
        expect(stored.map((r) => r.token_hash)).toEqual([sha256Hex(token)]);
        expect((await again.api("GET", "/setup")).body).toEqual({ required: true });
        const body = { email: "first@example.test", password: "first password" };
        expect((await again.api("POST", "/setup", { body: { ...body, token: old } })).status).toBe(401);
        expect((await again.api("POST", "/setup", { body: { ...body, token } })).status).toBe(201);
        expect(await again.core.store.read(all("SELECT * FROM setup_tokens"))).toEqual([]);
      } finally {
        await again.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  test("links last a day: a running server logs a new one at half that; a gone server's link and an expired one are refused", async () => {
    const { s, lines } = await withEnv({}, () => serverWithLog());
    try {
      const hour = 60 * 60_000;
      const age = (token: string, ms: number) =>
        s.core.store.write(run("UPDATE setup_tokens SET created_at = ? WHERE token_hash = ?", iso(Date.now() - ms), sha256Hex(token)));
      const body = { email: "first@example.test", password: "first password" };
      // A server killed on PostgreSQL leaves its token in the shared table: a day on, it stops working.
      await s.core.store.write(run("INSERT INTO setup_tokens (token_hash, server_id, created_at) VALUES (?, ?, ?)", sha256Hex("gone server's token"), "srv_gone", iso(Date.now() - SETUP_TOKEN_LIFETIME_MS - 1000)));
      expect((await s.api("POST", "/setup", { body: { ...body, token: "gone server's token" } })).status).toBe(401);

      const first = setupTokenOf(s.core)!;
      await age(first, 13 * hour);
      await renewSetupLink(s.core);
      const second = setupTokenOf(s.core)!;
      expect(second).not.toBe(first);
      expect(lines.filter((l) => l.includes("/setup?token=")).map((l) => l.split("token=")[1])).toEqual([first, second]);
      expect(await s.core.store.read(checkSetupToken(first))).toBe("valid"); // both work until the first's day is over
      expect(await s.core.store.read(checkSetupToken(second))).toBe("valid");

      await age(first, 25 * hour);
      await age(second, 13 * hour);
      await renewSetupLink(s.core);
      const third = setupTokenOf(s.core)!;
      const kept = await s.core.store.read(all<{ token_hash: string }>("SELECT token_hash FROM setup_tokens WHERE server_id = ? ORDER BY created_at", s.core.instanceId));
      expect(kept.map((r) => r.token_hash)).toEqual([sha256Hex(second), sha256Hex(third)]);
      const expired = await s.api("POST", "/setup", { body: { ...body, token: first } });
      expect(expired.status).toBe(401);
      expect(expired.body.error.message).toContain("expired");
      expect((await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM users")))!.n).toBe(0);
      expect((await s.api("GET", "/setup")).body).toEqual({ required: true });

      expect((await s.api("POST", "/setup", { body: { ...body, token: second } })).status).toBe(201);
      await renewSetupLink(s.core); // setup is done: no new link
      expect(setupTokenOf(s.core)).toBeNull();
      expect(lines.filter((l) => l.includes("/setup?token="))).toHaveLength(3);
      expect(await s.core.store.read(all("SELECT token_hash FROM setup_tokens WHERE server_id = ?", s.core.instanceId))).toEqual([]);
    } finally {
      await s.stop();
    }
  });

  test("a server whose links all passed their day (its machine slept): refused as expired, and its next look logs one that works", async () => {
    const { s, lines } = await withEnv({}, () => serverWithLog());
    try {
      const first = setupTokenOf(s.core)!;
      await renewSetupLink(s.core); // a fresh link: nothing new
      expect(setupTokenOf(s.core)).toBe(first);
      await s.core.store.write(run("UPDATE setup_tokens SET created_at = ?", iso(Date.now() - SETUP_TOKEN_LIFETIME_MS - 1000)));
      expect((await s.api("GET", "/setup")).body).toEqual({ required: true });
      const body = { email: "first@example.test", password: "first password" };
      const refused = await s.api("POST", "/setup", { body: { ...body, token: first } });
      expect(refused.status).toBe(401);
      expect(refused.body.error.message).toContain("expired");
      await renewSetupLink(s.core);
      const next = setupTokenOf(s.core)!;
      expect(lines.filter((l) => l.includes("/setup?token=")).map((l) => l.split("token=")[1])).toEqual([first, next]);
      expect((await s.api("POST", "/setup", { body: { ...body, token: next } })).status).toBe(201);
    } finally {
      await s.stop();
    }
  });

  test("parallel setups with the token: one wins", async () => {
    const s = await withEnv({}, () => startTestServer());
    try {
      const token = setupTokenOf(s.core)!;
      const answers = await Promise.all(
        [1, 2, 3].map((i) => s.api("POST", "/setup", { body: { token, email: `p${i}@example.test`, password: "first password" } })),
      );
      expect(answers.map((a) => a.status).sort()).toEqual([201, 409, 409]);
      expect((await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM users")))!.n).toBe(1);
    } finally {
      await s.stop();
    }
  });

  test("a setup finishing between the token check's reads reads as complete (409), never as a wrong token", async () => {
    // PostgreSQL runs a read's statements in separate snapshots; each statement runs here as its
    // own read, with another setup committing after the first, on either store.
    const s = await withEnv({}, () => startTestServer());
    try {
      const token = setupTokenOf(s.core)!;
      const check = checkSetupToken(token);
      let step = check.next();
      let first = true;
      while (!step.done) {
        const op = step.value;
        const result = await s.core.store.read((function* () {
          return yield op as Op;
        })());
        if (first) {
          first = false;
          const won = await s.api("POST", "/setup", { body: { token, email: "winner@example.test", password: "first password" } });
          expect(won.status).toBe(201);
        }
        step = check.next(result);
      }
      expect(step.value).toBe("complete");
    } finally {
      await s.stop();
    }
  });
});

describe("ao admin create-user", () => {
  const ao = async (args: string[]) => {
    const env = { ...process.env };
    for (const k of ENV) delete env[k];
    const p = Bun.spawn([process.execPath, join(import.meta.dir, "../../src/main.ts"), ...args], { env, stdout: "pipe", stderr: "pipe" });
    const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
    return { code, out, err };
  };

  // Without --database-url the command writes ao.db in the data directory; test/cli/admin.test.ts covers PostgreSQL.
  test.skipIf(onPostgres)("first user: administrator and owner; later users join an org with a role; errors exit 2", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "ao-cli-"));
    try {
      const first = await ao(["admin", "create-user", "--email", "boss@example.test", "--password", "boss password", "--org", "acme", "--data-dir", dataDir]);
      expect(first.err).toBe("");
      expect(first.code).toBe(0);
      expect(JSON.parse(first.out)).toMatchObject({ user: { email: "boss@example.test", isAdmin: true }, org: { name: "acme" }, role: "owner" });
      const second = await ao(["admin", "create-user", "--email", "dev@example.test", "--password", "dev password", "--org", "acme", "--role", "viewer", "--data-dir", dataDir]);
      expect(second.code).toBe(0);
      expect(JSON.parse(second.out)).toMatchObject({ user: { isAdmin: false }, role: "viewer" });
      const noOrg = await ao(["admin", "create-user", "--email", "ops@example.test", "--password", "ops password", "--admin", "--data-dir", dataDir]);
      expect(JSON.parse(noOrg.out)).toMatchObject({ user: { isAdmin: true }, org: null });
      // An existing user joins another org (created, as its owner).
      const join_ = await ao(["admin", "create-user", "--email", "dev@example.test", "--org", "side", "--data-dir", dataDir]);
      expect(JSON.parse(join_.out)).toMatchObject({ org: { name: "side" }, role: "owner", created: false });

      for (const bad of [
        ["admin", "create-user", "--email", "dev@example.test", "--password", "dev password", "--data-dir", dataDir],
        ["admin", "create-user", "--email", "x@example.test", "--password", "short", "--data-dir", dataDir],
        ["admin", "create-user", "--email", "x@example.test", "--password", "long enough", "--org", "acme", "--role", "king", "--data-dir", dataDir],
        ["admin", "create-user", "--password", "long enough", "--data-dir", dataDir],
        ["admin"],
        ["admin", "delete-everything"],
      ]) {
        const r = await ao(bad);
        expect([bad.join(" "), r.code]).toEqual([bad.join(" "), 2]);
        expect(r.err).toContain("ao admin");
      }

      const s = await startTestServer({ dataDir });
      try {
        expect(setupTokenOf(s.core)).toBeNull();
        const boss = await login(s, "boss@example.test", "boss password");
        expect(boss.body.user.isAdmin).toBe(true);
        const dev = await login(s, "dev@example.test", "dev password");
        const orgs = (await s.api("GET", "/orgs", { token: dev.body.accessToken })).body.items.map((o: any) => [o.name, o.role]);
        expect(orgs).toEqual([
          ["side", "owner"],
          ["acme", "viewer"],
        ]);
      } finally {
        await s.stop();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 30_000);
});
