// The compiled executable, as a user gets it: built from the current source by scripts/build.ts
// (always, into a temp dir, so it never tests a stale dist/ao), copied alone into an empty
// directory and run from another empty directory.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { onPostgres } from "../helpers/server";
import { argvOf, environOf, inheritedEnv } from "../helpers/processes";
import { startGitHubStandIn } from "../helpers/github-standin";

const root = join(import.meta.dir, "..", "..");
const journal = JSON.parse(readFileSync(join(root, "migrations", "meta", "_journal.json"), "utf8")) as { entries: unknown[] };

let tmp: string;
let ao: string;

// The child sees no AO_* variables of ours, so only what a test passes configures it.
// These scenarios read the log's lines as a person would (pretty); test/e2e/observe.test.ts reads the JSON.
// Nor MIMALLOC_* (src/server/allocator.ts): the server sets those itself.
const baseEnv = { ...inheritedEnv(), AO_LOG_FORMAT: "pretty" };

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "ao-binary-"));
  ao = join(tmp, "bin", "ao");
  const build = Bun.spawn([process.execPath, join(root, "scripts", "build.ts"), ao], {
    cwd: root,
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, err] = await Promise.all([build.exited, new Response(build.stderr).text()]);
  if (code !== 0) throw new Error(`scripts/build.ts failed (exit ${code}):\n${err}`);
}, 120_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** A fresh empty working directory for one run. */
function workdir(name: string): string {
  const dir = join(tmp, name);
  mkdirSync(dir, { recursive: true });
  return dir;
}

interface Running {
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  port: number;
  stderr: () => string;
}

/** Starts `ao serve` and waits for its "listening on" line, which names the bound port. */
async function startServe(cwd: string, args: string[], env: Record<string, string> = {}): Promise<Running> {
  const proc = Bun.spawn([ao, "serve", "--port", "0", "--host", "127.0.0.1", ...args], {
    cwd,
    env: { ...baseEnv, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  let text = "";
  const decoder = new TextDecoder();
  const reading = (async () => {
    for await (const chunk of proc.stderr) text += decoder.decode(chunk);
  })();
  const deadline = Date.now() + 15_000;
  for (;;) {
    const m = /listening on http:\/\/[^:]+:(\d+)/.exec(text);
    if (m) return { proc, port: Number(m[1]), stderr: () => text };
    if (proc.exitCode !== null || Date.now() > deadline) {
      proc.kill("SIGKILL");
      await reading;
      throw new Error(`ao serve did not start (exit ${proc.exitCode}):\n${text}`);
    }
    await Bun.sleep(20);
  }
}

async function run(cwd: string, args: string[], env: Record<string, string> = {}) {
  const proc = Bun.spawn([ao, ...args], { cwd, env: { ...baseEnv, ...env }, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

// The executable as a user first runs it: on SQLite in its data directory. These scenarios check
// that file itself (ao.db, its WAL, its migrations, ao backup of it), so they are SQLite's;
// observe.test.ts runs the executable on PostgreSQL too.
describe.skipIf(onPostgres)("the compiled executable", () => {
  test("prints its version from an empty directory", async () => {
    const r = await run(workdir("version"), ["version"]);
    expect(r).toMatchObject({ code: 0, stdout: `${pkg.version}\n` });
    const unknown = await run(workdir("version"), ["no-such-command"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'no-such-command'");
  });

  test("loads the worker, an entry point of its own inside the executable, from an empty directory", async () => {
    const r = await run(workdir("worker"), ["worker", "--help"]);
    expect(r.code).toBe(0);
    expect(r.stdout + r.stderr).toContain("usage: ao worker --server URL");
  });

  test("serves, answers health and the healthcheck, and stops cleanly on SIGTERM", async () => {
    const cwd = workdir("serve");
    const s = await startServe(cwd, ["--data-dir", "data"]);
    const base = `http://127.0.0.1:${s.port}/api/v1`;

    const health = await fetch(`${base}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok", version: pkg.version });
    // The process started again in place with the allocator's settings: the same pid serves.
    expect(environOf(s.proc.pid).MIMALLOC_PURGE_HOLES).toBe("0");
    expect(argvOf(s.proc.pid).slice(0, 2)).toEqual([ao, "serve"]);
    // Elysia's compiled handlers and the OpenAPI plugin survive bytecode compilation.
    const doc = await fetch(`${base}/openapi.json`);
    expect(doc.status).toBe(200);
    expect(((await doc.json()) as { paths: Record<string, unknown> }).paths["/api/v1/health"]).toBeDefined();
    // The reference page's script is embedded in the executable, not fetched from elsewhere.
    const page = await (await fetch(`${base}/docs`)).text();
    const src = /<script[^>]*\ssrc="(\/api\/v1\/docs\/scalar\.js[^"]*)"/.exec(page)![1];
    expect(src).toStartWith("/api/v1/docs/scalar.js");
    const script = await fetch(`http://127.0.0.1:${s.port}${src}`);
    expect(script.status).toBe(200);
    expect((await script.arrayBuffer()).byteLength).toBe(Bun.file(join(root, "vendor", "scalar", "scalar.standalone.js")).size);
    const missing = await fetch(`${base}/nope`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ error: { code: "not_found" } });

    expect((await run(cwd, ["healthcheck", String(s.port)])).code).toBe(0);
    expect((await run(cwd, ["healthcheck"], { AO_PORT: String(s.port) })).code).toBe(0);
    expect((await run(cwd, ["healthcheck", "--port", String(s.port), "--host", "127.0.0.1"])).code).toBe(0);
    expect((await run(cwd, ["healthcheck"], { AO_PORT: String(s.port), AO_HOST: "::" })).code).toBe(1); // bound to IPv4 loopback only
    // A wrong command line is 2, never 1: a typo does not read as an unhealthy server.
    const badPort = await run(cwd, ["healthcheck", "--port", "x"]);
    expect(badPort.code).toBe(2);
    expect(badPort.stderr).toContain("--port must be a port number");

    s.proc.kill("SIGTERM");
    expect(await s.proc.exited).toBe(0);
    expect(s.stderr()).toContain("shutting down");
    expect((await run(cwd, ["healthcheck", String(s.port)])).code).toBe(1);

    // --data-dir is relative to the working directory; the WAL was folded back on shutdown.
    const data = join(cwd, "data");
    expect(existsSync(join(data, "ao.db"))).toBe(true);
    expect(existsSync(join(data, "ao.db-wal"))).toBe(false);
    expect(existsSync(join(data, "ao.db-shm"))).toBe(false);
    expect(existsSync(join(data, "master.key"))).toBe(true);
    expect(existsSync(join(data, "artifacts"))).toBe(true);

    // The migrations embedded at build time were all applied.
    const db = new Database(join(data, "ao.db"), { readonly: true });
    try {
      const applied = db.query<{ n: number }, []>("SELECT count(*) AS n FROM __drizzle_migrations").get()!.n;
      expect(applied).toBe(journal.entries.length);
      const tables = db.query<{ n: number }, []>("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != '__drizzle_migrations'").get()!.n;
      expect(tables).toBeGreaterThan(0);
    } finally {
      db.close();
    }

    // A second start on the same data directory applies nothing new and stops on SIGINT. An
    // operator's own allocator setting is kept.
    const again = await startServe(cwd, ["--data-dir", "data"], { MIMALLOC_PURGE_HOLES: "1" });
    expect((await fetch(`http://127.0.0.1:${again.port}/api/v1/health`)).status).toBe(200);
    expect(environOf(again.proc.pid).MIMALLOC_PURGE_HOLES).toBe("1");
    again.proc.kill("SIGINT");
    expect(await again.proc.exited).toBe(0);
    const db2 = new Database(join(data, "ao.db"), { readonly: true });
    try {
      expect(db2.query<{ n: number }, []>("SELECT count(*) AS n FROM __drizzle_migrations").get()!.n).toBe(journal.entries.length);
    } finally {
      db2.close();
    }
  });

  test("refuses a database written by a newer version, with exit code 1", async () => {
    const cwd = workdir("newer");
    const s = await startServe(cwd, ["--data-dir", "data"]);
    s.proc.kill("SIGTERM");
    expect(await s.proc.exited).toBe(0);
    const path = join(cwd, "data", "ao.db");
    const db = new Database(path);
    db.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('from-the-future', 99999999999999)");
    db.close();

    const r = await run(cwd, ["serve", "--port", "0", "--host", "127.0.0.1", "--data-dir", "data"]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("this database was written by a newer version of ao");
    expect(r.stderr).not.toContain("listening");
    expect(r.stderr).not.toContain("    at "); // a message for a person, not a stack trace

    const after = new Database(path, { readonly: true });
    try {
      expect(after.query<{ n: number }, []>("SELECT count(*) AS n FROM __drizzle_migrations").get()!.n).toBe(journal.entries.length + 1);
    } finally {
      after.close();
    }
  });

  test("ignores bunfig.toml and .env in its working directory", async () => {
    const cwd = workdir("autoload");
    writeFileSync(join(cwd, ".env"), "AO_DATA_DIR=from-dotenv\nAO_PORT=1\n");
    writeFileSync(join(cwd, "bunfig.toml"), 'preload = ["./preload.ts"]\n');
    writeFileSync(join(cwd, "preload.ts"), `require("node:fs").writeFileSync(${JSON.stringify(join(cwd, "preloaded"))}, "x");\n`);

    const s = await startServe(cwd, []);
    expect((await fetch(`http://127.0.0.1:${s.port}/api/v1/health`)).status).toBe(200);
    s.proc.kill("SIGTERM");
    expect(await s.proc.exited).toBe(0);
    expect(existsSync(join(cwd, "ao-data", "ao.db"))).toBe(true); // the documented default
    expect(existsSync(join(cwd, "from-dotenv"))).toBe(false);
    expect(existsSync(join(cwd, "preloaded"))).toBe(false);
  });

  test("first run creates the administrator from AO_ADMIN_EMAIL/AO_ADMIN_PASSWORD (the README's quick start)", async () => {
    const cwd = workdir("first-run");
    const admin = { AO_ADMIN_EMAIL: "admin@example.com", AO_ADMIN_PASSWORD: "change-me-now" };
    const login = (port: number, password: string) =>
      fetch(`http://127.0.0.1:${port}/api/v1/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "admin@example.com", password }),
      });

    const first = await startServe(cwd, [], admin);
    const ok = await login(first.port, "change-me-now");
    expect(ok.status).toBe(200);
    const session = (await ok.json()) as { accessToken: string };
    const orgs = await fetch(`http://127.0.0.1:${first.port}/api/v1/orgs`, { headers: { authorization: `Bearer ${session.accessToken}` } });
    expect(orgs.status).toBe(200);
    expect(((await orgs.json()) as { items: unknown[] }).items).toEqual([expect.objectContaining({ name: "default", role: "owner" })]);
    first.proc.kill("SIGTERM");
    expect(await first.proc.exited).toBe(0);

    // Once a user exists the variables are ignored: the password stays the first one.
    const second = await startServe(cwd, [], { ...admin, AO_ADMIN_PASSWORD: "another-password" });
    expect((await login(second.port, "another-password")).status).toBe(401);
    expect((await login(second.port, "change-me-now")).status).toBe(200);
    second.proc.kill("SIGTERM");
    expect(await second.proc.exited).toBe(0);

    // Without them, a fresh data directory gets a one-time setup link in the log.
    const bare = await startServe(workdir("setup-link"), []);
    const deadline = Date.now() + 5000;
    while (!bare.stderr().includes("/setup?token=") && Date.now() < deadline) await Bun.sleep(20);
    expect(bare.stderr()).toMatch(/finish setup at http:\/\/127\.0\.0\.1:\d+\/setup\?token=\S+/);
    bare.proc.kill("SIGTERM");
    expect(await bare.proc.exited).toBe(0);
  });

  test("talks to GitHub through octokit, an entry point of its own loaded on first use: the app made from the manifest, its installations listed with its JWT", async () => {
    const gh = await startGitHubStandIn();
    try {
      gh.signIn("octo-admin");
      const s = await startServe(workdir("github"), [], {
        AO_ADMIN_EMAIL: "admin@example.com",
        AO_ADMIN_PASSWORD: "change-me-now",
        AO_GITHUB_URL: gh.url,
        AO_GITHUB_API_URL: gh.apiUrl,
      });
      const base = `http://127.0.0.1:${s.port}/api/v1`;
      const login = await fetch(`${base}/auth/login`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "admin@example.com", password: "change-me-now" }),
      });
      const { accessToken } = (await login.json()) as { accessToken: string };
      const headers = { authorization: `Bearer ${accessToken}`, "content-type": "application/json" };
      const orgId = ((await (await fetch(`${base}/orgs`, { headers })).json()) as { items: { id: string }[] }).items[0]!.id;
      const made = await fetch(`${base}/orgs/${orgId}/codehost/app/manifest`, { method: "POST", headers, body: JSON.stringify({ name: "ao binary app" }) });
      expect(made.status).toBe(200);
      const { url, manifest } = (await made.json()) as { url: string; manifest: unknown };
      // The browser posts the manifest to GitHub and follows its redirect back: ao converts the code (octokit).
      const atGithub = await fetch(url, { method: "POST", body: new URLSearchParams({ manifest: JSON.stringify(manifest) }), redirect: "manual" });
      const back = await fetch(atGithub.headers.get("location")!, { redirect: "manual" });
      expect({ status: back.status, location: back.headers.get("location") }).toEqual({ status: 302, location: expect.stringContaining("/github?app=") });
      // Listing the app's installations signs a JWT with its key (@octokit/auth-app).
      const synced = await fetch(`${base}/orgs/${orgId}/codehost/sync`, { method: "POST", headers });
      expect(synced.status).toBe(200);
      s.proc.kill("SIGTERM");
      expect(await s.proc.exited).toBe(0);
    } finally {
      await gh.close();
    }
  });

  test("reads AO_PORT, AO_HOST, AO_DATA_DIR and AO_PUBLIC_URL; a flag wins over its variable", async () => {
    const cwd = workdir("env");
    const probe = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
    const port = probe.port!;
    probe.stop(true);
    const env = { AO_PORT: String(port), AO_HOST: "127.0.0.1", AO_DATA_DIR: "from-env", AO_PUBLIC_URL: "https://ao.example.test/" };
    const serveWith = async (args: string[], vars: Record<string, string>) => {
      const proc = Bun.spawn([ao, "serve", ...args], { cwd, env: { ...baseEnv, ...vars }, stdin: "ignore", stdout: "ignore", stderr: "pipe" });
      let text = "";
      const decoder = new TextDecoder();
      const reading = (async () => {
        for await (const chunk of proc.stderr) text += decoder.decode(chunk);
      })();
      const deadline = Date.now() + 15_000;
      while (!/bound="[^"]*:\d+"/.test(text) && proc.exitCode === null && Date.now() < deadline) await Bun.sleep(20);
      const bound = /bound="([^"]*):(\d+)"/.exec(text);
      return { proc, text: () => text, host: bound?.[1], port: Number(bound?.[2]), reading };
    };

    const a = await serveWith([], env);
    expect(a.text()).toContain("listening on https://ao.example.test ");
    expect([a.host, a.port]).toEqual(["127.0.0.1", port]);
    const started = await fetch(`http://127.0.0.1:${port}/api/v1/auth/device/start`, { method: "POST" });
    expect(((await started.json()) as { verificationUri: string }).verificationUri).toBe("https://ao.example.test/device");
    a.proc.kill("SIGTERM");
    expect(await a.proc.exited).toBe(0);
    expect(existsSync(join(cwd, "from-env", "ao.db"))).toBe(true);

    // Flags win: a variable that would not even parse is not read when its flag is given.
    const b = await serveWith(["--port", "0", "--data-dir", "from-flag", "--public-url", "http://flag.example.test"], { ...env, AO_PORT: "not a port" });
    expect(b.text()).toContain("listening on http://flag.example.test ");
    expect(b.port).toBeGreaterThan(0);
    expect((await fetch(`http://127.0.0.1:${b.port}/api/v1/health`)).status).toBe(200);
    b.proc.kill("SIGTERM");
    expect(await b.proc.exited).toBe(0);
    expect(existsSync(join(cwd, "from-flag", "ao.db"))).toBe(true);

    const bad = await run(cwd, ["serve"], { ...env, AO_PORT: "not a port" });
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain("AO_PORT must be a port number");
  });

  test("ao admin create-user writes the first administrator into a data directory the server then uses", async () => {
    const cwd = workdir("admin-cli");
    const made = await run(cwd, ["admin", "create-user", "--email", "root@example.test", "--password", "root password", "--org", "acme", "--data-dir", "data"]);
    expect(made.code).toBe(0);
    expect(JSON.parse(made.stdout)).toMatchObject({ user: { email: "root@example.test", isAdmin: true }, org: { name: "acme" }, role: "owner" });
    const s = await startServe(cwd, ["--data-dir", "data"]);
    expect(s.stderr()).not.toContain("/setup?token=");
    const r = await fetch(`http://127.0.0.1:${s.port}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "root@example.test", password: "root password" }),
    });
    expect(r.status).toBe(200);
    s.proc.kill("SIGTERM");
    expect(await s.proc.exited).toBe(0);
  });

  test("ao backup of a running server, ao restore into a new directory, ao doctor on both (the README's Back up and Operations)", async () => {
    const cwd = workdir("backup");
    const s = await startServe(cwd, ["--data-dir", "data"], { AO_ADMIN_EMAIL: "admin@example.com", AO_ADMIN_PASSWORD: "change-me-now" });
    const url = `http://127.0.0.1:${s.port}`;
    const made = await run(cwd, ["backup", "--data-dir", "data", "--output", "ao-backup.tar"]);
    expect(made.stderr).toBe("");
    expect(made.code).toBe(0);
    const restored = await run(cwd, ["restore", "ao-backup.tar", "--data-dir", "restored"]);
    expect(restored.code).toBe(0);
    const checked = await run(cwd, ["doctor", "--data-dir", "data", "--server", url, "--public-url", url]);
    expect(checked.stdout).not.toMatch(/^fail/m);
    expect(checked.code).toBe(0);
    s.proc.kill("SIGTERM");
    expect(await s.proc.exited).toBe(0);

    // The restored directory serves the administrator made in the original.
    const r = await startServe(cwd, ["--data-dir", "restored"]);
    const login = await fetch(`http://127.0.0.1:${r.port}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ email: "admin@example.com", password: "change-me-now" }),
    });
    expect(login.status).toBe(200);
    expect((await run(cwd, ["doctor", "--data-dir", "restored", "--offline"])).code).toBe(0);
    r.proc.kill("SIGTERM");
    expect(await r.proc.exited).toBe(0);
  });

  test("rejects a bad flag with a message", async () => {
    const cwd = workdir("badflag");
    // A wrong command line exits 2, with the way to the command's usage.
    const port = await run(cwd, ["serve", "--port", "70000", "--data-dir", "data"]);
    expect(port.code).toBe(2);
    expect(port.stderr).toContain("--port must be a port number");
    const unknown = await run(cwd, ["serve", "--bogus"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("--bogus");
    expect(unknown.stderr).toContain("run 'ao help serve' for usage");
  });
});
