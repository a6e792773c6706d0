// `ao admin create-user`: creates a user (and org) straight in the data directory's database,
// for first setup from a shell or recovery when nobody can sign in. Safe while the server runs
// (SQLite WAL; the write is one transaction).
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { openDatabase } from "../db";
import { SqliteStore } from "../db/store";
import { defaultConfig } from "../server/config";
import { createFirstAdmin, DEFAULT_ORG_NAME, MIN_PASSWORD_LENGTH } from "../server/bootstrap";
import { findUserByEmail, hashPasswordSync, insertUser, type IdentityStore } from "../modules/auth/users";
import { createOrg, findOrgByName, setMembership } from "../modules/orgs/service";
import { ROLES, type Role } from "../modules/orgs/roles";
import type { Q } from "../db/query";

const USAGE = `usage: ao admin create-user --email EMAIL --password PASSWORD [--name NAME]
                             [--org NAME [--role owner|admin|member|viewer]] [--admin] [--data-dir DIR]

The first user of an instance is always an administrator and owner of --org (default "${DEFAULT_ORG_NAME}").
Later users join --org with --role (default member; owner when this command creates the org).
An existing user is only added to --org (or has their role there changed).`;

export async function admin(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
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
    },
    strict: true,
  });
  const email = values.email?.trim();
  if (!email || !/^[^\s@]+@[^\s@]+$/.test(email)) return fail("--email is required and must be an email address");
  if (values.role !== undefined && !(ROLES as readonly string[]).includes(values.role)) return fail(`--role must be one of ${ROLES.join(", ")}`);
  const role = values.role as Role | undefined;

  const config = defaultConfig({ dataDir: values["data-dir"] });
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  const db = openDatabase(join(config.dataDir, "ao.db"));
  const store: IdentityStore = { db, store: new SqliteStore(db.$client), config };
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
    db.$client.close();
  }
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
