// `ao admin create-user` on PostgreSQL (--database-url or AO_DATABASE_URL, as `ao serve` takes it):
// the database is migrated first, and the people it creates sign in through a server on it. Runs
// on PostgreSQL whatever AO_TEST_DATABASE says (SQLite's case is in test/identity/bootstrap.test.ts).
import { expect, test } from "bun:test";
import { freshDatabase } from "../helpers/postgres";
import { startTestServer } from "../helpers/server";
import { runCli } from "./helpers";

test("create-user writes to the PostgreSQL database; a server on it signs the people in", async () => {
  const databaseUrl = await freshDatabase("ao_admin");
  // A fresh database: the command migrates it.
  const first = await runCli(["admin", "create-user", "--email", "boss@example.test", "--password", "boss password", "--org", "acme", "--database-url", databaseUrl]);
  expect(first.stderr).toBe("");
  expect(first.code).toBe(0);
  expect(JSON.parse(first.stdout)).toMatchObject({ user: { email: "boss@example.test", isAdmin: true }, org: { name: "acme" }, role: "owner", created: true });
  // AO_DATABASE_URL as well; a later user joins the org with a role.
  const second = await runCli(["admin", "create-user", "--email", "dev@example.test", "--password", "dev password", "--org", "acme", "--role", "viewer"], { AO_DATABASE_URL: databaseUrl });
  expect(second.code).toBe(0);
  expect(JSON.parse(second.stdout)).toMatchObject({ user: { isAdmin: false }, org: { name: "acme" }, role: "viewer", created: true });

  const s = await startTestServer({ databaseUrl });
  try {
    const login = (email: string, password: string) => s.api("POST", "/auth/login", { body: { email, password } });
    const boss = await login("boss@example.test", "boss password");
    expect(boss.status).toBe(200);
    expect(boss.body.user.isAdmin).toBe(true);
    const dev = await login("dev@example.test", "dev password");
    expect(dev.status).toBe(200);
    const orgs = (await s.api("GET", "/orgs", { token: dev.body.accessToken })).body.items.map((o: { name: string; role: string }) => [o.name, o.role]);
    expect(orgs).toEqual([["acme", "viewer"]]);
    // The server is up: the command still writes beside it.
    const third = await runCli(["admin", "create-user", "--email", "ops@example.test", "--password", "ops password", "--admin", "--database-url", databaseUrl]);
    expect(third.code).toBe(0);
    expect((await login("ops@example.test", "ops password")).body.user.isAdmin).toBe(true);
  } finally {
    await s.stop();
  }
}, 60_000);

test("a --database-url that is not a PostgreSQL URL: exit 2 with the reason", async () => {
  const r = await runCli(["admin", "create-user", "--email", "x@example.test", "--password", "long enough", "--database-url", "mysql://nope"]);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain("ao admin: AO_DATABASE_URL (--database-url) must be a postgres:// or postgresql:// URL");
});
