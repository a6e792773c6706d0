// The person behind a user or an API token (a token acts for its owner), as a claim names a task's
// creator for the co-author line of its commits (workers/leases.ts). Read at every claim, so kept
// in memory: forgotten when a name changes or access changes (a token revoked), on the other
// servers through the bus, and after another connection's commit (db/cache.ts).
import type { Core } from "../../server/core";
import { RowCache } from "../../db/cache";
import { get, type Q } from "../../db/query";
import { forgetTokens } from "./principal";

export interface Person {
  name: string;
  email: string;
}

const USER = "SELECT name, email FROM users WHERE id = ?";
const TOKEN_OWNER = "SELECT u.name, u.email FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.id = ?";

const caches = new WeakMap<Core, RowCache<Person>>();

function cacheOf(core: Core): RowCache<Person> {
  let c = caches.get(core);
  if (!c) {
    const cache = (c = new RowCache<Person>(core));
    caches.set(core, cache);
    core.events.on("access.changed", () => cache.clear());
  }
  return c;
}

/** The user, or the token's owner: their name (the email's local part when they gave none) and email; null when gone. */
export function personOf(core: Core, type: "user" | "token", id: string): Q<Person | null> {
  return cacheOf(core).readThrough(`${type}:${id}`, function* () {
    const row = yield* get<Person>(type === "user" ? USER : TOKEN_OWNER, id);
    return row ? { name: row.name || row.email.split("@")[0]!, email: row.email } : null;
  });
}

/** After a user's name changed: the people and the tokens (which carry their owner's name) are read afresh, here and on every server. */
export function renamed(core: Core) {
  caches.get(core)?.clear();
  forgetTokens(core);
}
