// People: accounts, password hashes and the public view of a user.
import { desc, eq, lt, sql } from "drizzle-orm";
import type { Core } from "../../server/core";
import { users } from "../../db/schema";
import { newId } from "../../lib/ids";
import { iso } from "../../lib/time";
import { conflict } from "../../server/errors";
import { pageOf, type Page, type PageQuery } from "../orgs/paging";

/** What user and org creation needs of a core; the admin CLI builds this from a bare database. */
export type IdentityStore = Pick<Core, "db" | "sqlite" | "store" | "config">;

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

export function findUserByEmail(core: IdentityStore, email: string): UserRow | undefined {
  return core.db.select().from(users).where(eq(users.email, normaliseEmail(email))).get();
}

export function getUser(core: IdentityStore, id: string): UserRow | undefined {
  return core.db.select().from(users).where(eq(users.id, id)).get();
}

export function countUsers(core: IdentityStore): number {
  return core.db.select({ n: sql<number>`count(*)` }).from(users).get()!.n;
}

/** Inserts a user with an already computed hash (synchronous, so it can run inside a transaction). */
export function insertUser(core: IdentityStore, input: { email: string; passwordHash: string; name?: string; isAdmin?: boolean }): UserRow {
  const email = normaliseEmail(input.email);
  if (findUserByEmail(core, email)) throw conflict("a user with this email already exists");
  const now = iso();
  const row = {
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
  core.db.insert(users).values(row).run();
  return row;
}

export async function createUser(core: Core, input: { email: string; password: string; name?: string; isAdmin?: boolean }): Promise<UserRow> {
  if (findUserByEmail(core, input.email)) throw conflict("a user with this email already exists");
  const passwordHash = await hashPassword(core, input.password);
  return insertUser(core, { ...input, passwordHash });
}

/** Every user, newest first (instance administration). */
export function listUsers(core: IdentityStore, q: PageQuery): Page<UserView> {
  return pageOf(q, 1, (cursor, limit) =>
    core.db
      .select()
      .from(users)
      .where(cursor ? lt(users.id, cursor[0]) : undefined)
      .orderBy(desc(users.id))
      .limit(limit)
      .all(),
    (u) => [u.id],
    userView,
  );
}
