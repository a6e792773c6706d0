// People: accounts, password hashes and the public view of a user.
import { desc, eq, lt, sql } from "drizzle-orm";
import type { Core } from "../../server/core";
import { users } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { conflict } from "../../server/errors";
import { pageOf, type Page, type PageQuery } from "../orgs/paging";
import { exec, row, rows, type Q } from "../../db/query";

/** What user and org creation needs of a core; the admin CLI builds this from a bare database. */
export type IdentityStore = Pick<Core, "db" | "store" | "config">;

export type UserRow = typeof users.$inferSelect;

export interface UserView {
  id: string;
  email: string;
  name: string;
  isAdmin: boolean;
  twoFactorEnabled: boolean;
  createdAt: string;
}

export const userView = (u: UserRow): UserView => ({
  id: u.id,
  email: u.email,
  name: u.name,
  isAdmin: u.isAdmin,
  twoFactorEnabled: u.totpEnabled,
  createdAt: u.createdAt,
});

export const normaliseEmail = (email: string) => email.trim().toLowerCase();

const argon2 = (core: Pick<Core, "config">) => ({ algorithm: "argon2id" as const, ...core.config.passwordCost });

export function hashPassword(core: Pick<Core, "config">, password: string): Promise<string> {
  return Bun.password.hash(password, argon2(core));
}

/** For startup and the CLI, where nothing else waits on the event loop. */
export function hashPasswordSync(core: Pick<Core, "config">, password: string): string {
  return Bun.password.hashSync(password, argon2(core));
}

// One hash per core, made with the same cost, so an unknown email costs the same time as a known one.
const dummyHashes = new WeakMap<object, Promise<string>>();

/** Verifies a password; with no stored hash it still spends one verification (timing parity). */
export async function verifyPassword(core: Core, password: string, hash: string | null | undefined): Promise<boolean> {
  if (!hash) {
    let dummy = dummyHashes.get(core);
    if (!dummy) dummyHashes.set(core, (dummy = hashPassword(core, randomPasswordFiller())));
    await Bun.password.verify(password, await dummy);
    return false;
  }
  return Bun.password.verify(password, hash);
}

const randomPasswordFiller = () => Buffer.from(crypto.getRandomValues(new Uint8Array(24))).toString("base64");

export function* findUserByEmail(core: IdentityStore, email: string): Q<UserRow | undefined> {
  return yield* row(core.db.select().from(users).where(eq(users.email, normaliseEmail(email))));
}

export function* getUser(core: IdentityStore, id: string): Q<UserRow | undefined> {
  return yield* row(core.db.select().from(users).where(eq(users.id, id)));
}

export function* countUsers(core: IdentityStore): Q<number> {
  return (yield* row(core.db.select({ n: sql<number>`count(*)` }).from(users)))!.n;
}

/** Inserts a user with an already computed hash (a program: the caller's write transaction checks and inserts). */
export function* insertUser(core: IdentityStore, input: { email: string; passwordHash: string; name?: string; isAdmin?: boolean }): Q<UserRow> {
  const email = normaliseEmail(input.email);
  if (yield* findUserByEmail(core, email)) throw conflict("a user with this email already exists");
  const now = iso();
  const user = {
    id: newId("usr"),
    email,
    name: input.name?.trim() ?? "",
    passwordHash: input.passwordHash,
    isAdmin: input.isAdmin ?? false,
    totpSecretSealed: null,
    totpEnabled: false,
    totpLastStep: 0,
    createdAt: now,
    updatedAt: now,
  };
  yield* exec(core.db.insert(users).values(user));
  return user;
}

/** Hashes the password (not inside a transaction: it takes a while), then inserts in one write. */
export async function createUser(core: Core, input: { email: string; password: string; name?: string; isAdmin?: boolean }): Promise<UserRow> {
  // Refused before spending a hash; insertUser checks again inside its transaction.
  if (await core.store.read(findUserByEmail(core, input.email))) throw conflict("a user with this email already exists");
  const passwordHash = await hashPassword(core, input.password);
  return core.store.write(insertUser(core, { ...input, passwordHash }));
}

/** Every user, newest first (instance administration). */
export function listUsers(core: IdentityStore, q: PageQuery): Q<Page<UserView>> {
  return pageOf(
    q,
    1,
    (cursor, limit) =>
      rows(
        core.db
          .select()
          .from(users)
          .where(cursor ? lt(users.id, cursor[0]) : undefined)
          .orderBy(desc(users.id))
          .limit(limit),
      ),
    (u) => [u.id],
    userView,
  );
}
