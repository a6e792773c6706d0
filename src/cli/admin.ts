// `ao admin create-user`: creates a user (and org) straight in the service's database (the data
// directory's ao.db, or PostgreSQL with --database-url / AO_DATABASE_URL, migrated first), for
// first setup from a shell or recovery when nobody can sign in. Safe while servers run: the write
// is one transaction (SQLite WAL; on PostgreSQL it takes the writers' lock as the servers do).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openDatabase } from "../db";
import { SqliteStore, type Store } from "../db/store";
import type { Db } from "../db";
import type { Config } from "../server/core";
import { defaultConfig } from "../server/config";
import { createFirstAdmin, DEFAULT_ORG_NAME, MIN_PASSWORD_LENGTH } from "../server/bootstrap";
import { findUserByEmail, hashPasswordSync, insertUser, type IdentityStore } from "../modules/auth/users";
import { createOrg, findOrgByName, setMembership } from "../modules/orgs/service";
import { ROLES, type Role } from "../modules/orgs/roles";
import type { Q } from "../db/query";

const USAGE = `usage: ao admin create-user --email EMAIL --password PASSWORD [--name NAME]
                             [--org NAME [--role owner|admin|member|viewer]] [--admin]
                             [--data-dir DIR | --database-url URL]

The first user of an instance is always an administrator and owner of --org (default "${DEFAULT_ORG_NAME}").
Later users join --org, when given, with --role (default member; owner when this command creates
the org); without --org they join no organization (an owner can add them later).
An existing user is only added to --org (or has their role there changed).
--database-url (default AO_DATABASE_URL) writes to that PostgreSQL database instead of DIR/ao.db.`;

export async function admin(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "--help" || sub === "-h" || sub === "help" || (sub === "create-user" && (rest.includes("--help") || rest.includes("-h")))) {
    console.log(USAGE);
    return 0;
  }
  if (sub !== "create-user") {
    console.error(sub ? `ao admin: unknown subcommand '${sub}'\n${USAGE}` : USAGE);
    return 2;
  }
  const { values } = parseArgs({
    args: rest,
    options: {
      email: { type: "string" },
      password: { type: "string" },
      name: { type: "string" },
      org: { type: "string" },
      role: { type: "string" },
      admin: { type: "boolean", default: false },
      "data-dir": { type: "string" },
      "database-url": { type: "string" },
    },
    strict: true,
  });
  const email = values.email?.trim();
  if (!email || !/^[^\s@]+@[^\s@]+$/.test(email)) return fail("--email is required and must be an email address");
  if (values.role !== undefined && !(ROLES as readonly string[]).includes(values.role)) return fail(`--role must be one of ${ROLES.join(", ")}`);
  const role = values.role as Role | undefined;

  let config: Config;
  try {
    config = defaultConfig({ dataDir: values["data-dir"], databaseUrl: values["database-url"] });
  } catch (error) {
    return fail((error as Error).message);
  }
  const opened = await openStore(config.databaseUrl, config.dataDir);
  const store: IdentityStore = { config, db: opened.db, store: opened.store };
  try {
    const existing = await store.store.read(findUserByEmail(store, email));
    if (existing) {
      if (!values.org) return fail(`a user with email ${existing.email} already exists (give --org to add them to an org)`);
      const joined = await store.store.write(join_(store, existing.id, values.org, role));
      return done({ user: { id: existing.id, email: existing.email, isAdmin: existing.isAdmin }, ...joined, created: false });
    }
    const password = values.password;
    if (!password || password.length < MIN_PASSWORD_LENGTH) return fail(`--password is required (at least ${MIN_PASSWORD_LENGTH} characters)`);
    const passwordHash = hashPasswordSync(store, password);
    const orgName = values.org ?? process.env.AO_ORG_NAME ?? DEFAULT_ORG_NAME;

    const first = await store.store.write(createFirstAdmin(store, { email, passwordHash, name: values.name, orgName }));
    if (first) return done({ user: { id: first.user.id, email: first.user.email, isAdmin: true }, org: { id: first.org.id, name: first.org.name }, role: "owner", created: true });

    const result = await store.store.write(newUser(store, { email, passwordHash, name: values.name, isAdmin: values.admin }, values.org, role));
    return done({ user: { id: result.user.id, email: result.user.email, isAdmin: result.user.isAdmin }, org: result.org, role: result.role, created: true });
  } finally {
    await opened.close();
  }
}

/** The database `ao serve` would use with the same settings, migrated. */
async function openStore(databaseUrl: string | null, dataDir: string): Promise<{ db: Db; store: Store; close(): Promise<void> }> {
  if (databaseUrl) {
    // Loaded only for PostgreSQL: the command on SQLite starts as fast as before.
    const [{ openPostgres }, { PgStore, pgDrizzle }] = await Promise.all([import("../db/postgres"), import("../db/pg-store")]);
    await (await openPostgres(databaseUrl)).close();
    const store = new PgStore({ url: databaseUrl, max: 2 });
    return { store, db: pgDrizzle(store) as unknown as Db, close: () => store.close() };
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const db = openDatabase(join(dataDir, "ao.db"));
  return { db, store: new SqliteStore(db.$client), close: async () => db.$client.close() };
}

/** A later user, in the org named `orgName` when given (see join_), in one transaction. */
function* newUser(store: IdentityStore, input: Parameters<typeof insertUser>[1], orgName: string | undefined, role: Role | undefined) {
  const user = yield* insertUser(store, input);
  return { user, ...(orgName ? yield* join_(store, user.id, orgName, role) : { org: null, role: null }) };
}

/** Puts the user in the org named `orgName`: with `role` (default member), or as owner of a new org of that name. */
function* join_(store: IdentityStore, userId: string, orgName: string, role: Role | undefined): Q<{ org: { id: string; name: string }; role: Role }> {
  const found = yield* findOrgByName(store, orgName);
  const org = found ?? (yield* createOrg(store, orgName, userId));
  const given: Role = found ? (role ?? "member") : "owner";
  if (found) yield* setMembership(store, org.id, userId, given);
  return { org: { id: org.id, name: org.name }, role: given };
}

function done(result: unknown): number {
  console.log(JSON.stringify(result));
  return 0;
}

function fail(message: string): number {
  console.error(`ao admin: ${message}`);
  return 2;
}
