// First-run setup with two servers on one PostgreSQL database: a person's load balancer may send
// the setup page to either server, so every server says setup is pending while no user exists and
// accepts the link any of them logged; once one setup is done, it is done everywhere. The token is
// stored as its SHA-256 hash only and logged only in the setup line.
import { afterEach, expect, test } from "bun:test";
import { startCluster, type Cluster } from "../helpers/cluster";
import type { TestServer } from "../helpers/server";
import { setupTokenOf } from "../../src/server/bootstrap";
import { all, get } from "../../src/db/query";
import { sha256Hex } from "../../src/lib/tokens";

const ENV = ["AO_ADMIN_EMAIL", "AO_ADMIN_PASSWORD", "AO_ORG_NAME"] as const;

let cluster: Cluster | null = null;
afterEach(async () => {
  await cluster?.stop();
  cluster = null;
});

/** Two servers on a new database, started with no AO_ADMIN_* (as the first run of a service), each keeping every log line. */
async function twoServers(): Promise<{ a: TestServer; b: TestServer; logs: Map<TestServer, string[]> }> {
  const saved = ENV.map((k) => [k, process.env[k]] as const);
  for (const k of ENV) delete process.env[k];
  try {
    cluster = await startCluster(0);
    const logs = new Map<TestServer, string[]>();
    const start = async () => {
      const lines: string[] = [];
      const keep = (m: string, f?: unknown) => void lines.push(f === undefined ? m : `${m} ${JSON.stringify(f)}`);
      const s = await cluster!.add({ logger: { info: keep, warn: keep, error: keep } });
      logs.set(s, lines);
      return s;
    };
    const a = await start();
    const b = await start();
    await Bun.sleep(0); // the setup line is written once the port is known
    return { a, b, logs };
  } finally {
    for (const [k, v] of saved) if (v !== undefined) process.env[k] = v;
  }
}

const tokenIn = (lines: string[]) => lines.find((l) => l.includes("/setup?token="))!.split("token=")[1]!.trim();
const required = async (s: TestServer) => (await s.api("GET", "/setup")).body.required;
const setup = (s: TestServer, token: string, email = "first@example.test") => s.api("POST", "/setup", { body: { token, email, password: "first password", orgName: "Team" } });
const users = async (s: TestServer) => Number((await s.core.store.read(get<{ n: number }>("SELECT count(*) AS n FROM users")))!.n);
const storedHashes = async (s: TestServer) => (await s.core.store.read(all<{ token_hash: string }>("SELECT token_hash FROM setup_tokens ORDER BY 1"))).map((r) => r.token_hash);

test("the link one server logged works on the other, and both say setup is pending until it is done", async () => {
  const { a, b, logs } = await twoServers();
  const token = tokenIn(logs.get(a)!);
  expect(token).toBe(setupTokenOf(a.core)!);
  expect([await required(a), await required(b)]).toEqual([true, true]);

  const tokens = [token, setupTokenOf(b.core)!];
  const wrong = await setup(b, (token[0] === "x" ? "y" : "x") + token.slice(1));
  expect([wrong.status, wrong.body.error.code]).toEqual([401, "unauthorized"]);
  expect(await users(a)).toBe(0);

  const done = await setup(b, token);
  expect(done.status).toBe(201);
  expect(done.body.user).toMatchObject({ email: "first@example.test", isAdmin: true });
  expect([await required(a), await required(b)]).toEqual([false, false]);
  expect(await storedHashes(a)).toEqual([]);
  // Done everywhere: neither link works again, on either server.
  for (const s of [a, b]) for (const t of tokens) expect((await setup(s, t, "second@example.test")).status).toBe(409);
  expect((await a.api("POST", "/auth/login", { body: { email: "first@example.test", password: "first password" } })).status).toBe(200);

}, 60_000);

test("the tokens are kept as their SHA-256 hashes, one a server; each token is logged in its setup line and nowhere else", async () => {
  const { a, b, logs } = await twoServers();
  const tokens = [setupTokenOf(a.core)!, setupTokenOf(b.core)!];
  expect(await storedHashes(a)).toEqual(tokens.map(sha256Hex).sort());
  const rows = JSON.stringify(await a.core.store.read(all("SELECT * FROM setup_tokens")));
  for (const t of tokens) expect(rows).not.toContain(t);
  expect((await setup(a, tokens[1]!)).status).toBe(201);
  for (const [s, own] of [[a, tokens[0]!], [b, tokens[1]!]] as const) {
    const lines = logs.get(s)!;
    expect(lines.filter((l) => tokens.some((t) => l.includes(t)))).toEqual([lines.find((l) => l.includes(`/setup?token=${own}`))!]);
  }
}, 60_000);

test("a server that stops takes its link with it (a restart logs a new one); the other's link still works on either", async () => {
  const { a, b } = await twoServers();
  const tokenA = setupTokenOf(a.core)!;
  const tokenB = setupTokenOf(b.core)!;
  await a.stop();
  expect(await required(b)).toBe(true);
  expect((await setup(b, tokenA)).status).toBe(401);
  const again = await cluster!.add();
  expect(await required(again)).toBe(true);
  expect((await setup(again, tokenB)).status).toBe(201);
  expect([await required(again), await required(b)]).toEqual([false, false]);
}, 60_000);

test("setups on both servers at once, each with its own link: one creates the administrator, the other is 409", async () => {
  const { a, b } = await twoServers();
  const answers = await Promise.all([setup(a, setupTokenOf(a.core)!, "a@example.test"), setup(b, setupTokenOf(b.core)!, "b@example.test")]);
  expect(answers.map((r) => r.status).sort()).toEqual([201, 409]);
  expect(await users(a)).toBe(1);
  expect(await storedHashes(a)).toEqual([]);
}, 60_000);

test("a server started with AO_ADMIN_EMAIL and AO_ADMIN_PASSWORD creates the administrator: the setup the others logged is over", async () => {
  const { a } = await twoServers();
  const saved = ENV.map((k) => [k, process.env[k]] as const);
  Object.assign(process.env, { AO_ADMIN_EMAIL: "boss@example.test", AO_ADMIN_PASSWORD: "boss password" });
  let c: TestServer;
  try {
    c = await cluster!.add();
  } finally {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
  expect([await required(a), await required(c)]).toEqual([false, false]);
  expect((await setup(a, setupTokenOf(a.core)!)).status).toBe(409);
}, 60_000);
