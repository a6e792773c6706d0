// Names for the ids a task record and its timeline carry (who acted, which worker, who created
// it), so people read "build-1" and "ada@example.com" rather than raw ids. Resolved on read, for
// a whole page at once: one query per kind of id, never one per row, and none on the write path
// (rows keep only ids, so a renamed worker or user reads with its current name).
import type { Core } from "../../server/core";
import type { TaskRow } from "./record";
import { all, type Q } from "../../db/query";

export interface Ref {
  type: string;
  id: string;
}

export type Names = ReadonlyMap<string, string>;

const key = (type: string, id: string) => `${type}:${id}`;

/** The name of a ref, or null when its row is gone (a deleted token, a removed integration). */
export const nameOf = (names: Names, type: string, id: string): string | null => names.get(key(type, id)) ?? null;

// Each query takes the ids as one JSON array: one prepared statement for any number of ids.
// A single id (one task's record, the create path) uses `= ?`, about twice as fast as json_each.
const IN = "IN (SELECT value FROM json_each(?))";
const QUERIES: Record<string, string> = {
  // A person's name, or the email when they gave none.
  user: `SELECT id, CASE WHEN name <> '' THEN name ELSE email END AS name FROM users WHERE id ${IN}`,
  // A token acts for its owner: the owner, and which token.
  token: `SELECT t.id, (CASE WHEN u.name <> '' THEN u.name ELSE u.email END) || ' (token ' || t.name || ')' AS name
            FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.id ${IN}`,
  worker: `SELECT id, name FROM workers WHERE id ${IN}`,
  integration: `SELECT id, name FROM integrations WHERE id ${IN}`,
  // Tasks made by a plan: the plan task's title.
  plan: `SELECT id, title AS name FROM tasks WHERE id ${IN}`,
  // Tasks the GitHub app made in an organization other than the one owning it, by the app's slug.
  app: `SELECT slug AS id, name FROM codehost_apps WHERE slug ${IN}`,
};

const SINGLE: Record<string, string> = Object.fromEntries(Object.entries(QUERIES).map(([type, sql]) => [type, sql.replace(IN, "= ?")]));

/** Names already known (the caller's own, read with its credential): no query. */
export const knownNames = (entries: [Ref, string][]): Names => new Map(entries.map(([r, name]) => [key(r.type, r.id), name]));

/** Looks up every ref's name; refs of an unknown type stay unnamed. No refs, no query. */
export function* resolveNames(_core: Core, refs: Iterable<Ref | null | undefined>): Q<Names> {
  const byType = new Map<string, Set<string>>();
  for (const r of refs) {
    if (!r) continue;
    let ids = byType.get(r.type);
    if (!ids) byType.set(r.type, (ids = new Set()));
    ids.add(r.id);
  }
  const names = new Map<string, string>();
  for (const [type, ids] of byType) {
    if (!QUERIES[type]) continue;
    const rows =
      ids.size === 1
        ? yield* all<{ id: string; name: string }>(SINGLE[type], ids.values().next().value!)
        : yield* all<{ id: string; name: string }>(QUERIES[type], JSON.stringify([...ids]));
    for (const row of rows) names.set(key(type, row.id), row.name);
  }
  return names;
}

/** The ids of a task record that carry names: its creator and its worker. */
export function taskRefs(row: TaskRow): Ref[] {
  const refs: Ref[] = [{ type: row.created_by_type, id: row.created_by_id }];
  if (row.worker_id) refs.push({ type: "worker", id: row.worker_id });
  return refs;
}
