// Keyset pagination (SPEC §1): `limit` 1..200 (default 50) and an opaque `cursor` naming the
// last row of the previous page, so rows inserted meanwhile never shift a page.
import { invalid } from "../../server/errors";
import type { Q } from "../../db/query";

export interface PageQuery {
  limit?: number;
  cursor?: string;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export const DEFAULT_PAGE_SIZE = 50;

function encodeCursor(key: string[]): string {
  return Buffer.from(JSON.stringify(key)).toString("base64url");
}

function decodeCursor(cursor: string | undefined, parts: number): string[] | null {
  if (cursor === undefined || cursor === "") return null;
  try {
    const key = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (Array.isArray(key) && key.length === parts && key.every((k) => typeof k === "string")) return key;
  } catch {}
  throw invalid("the cursor is not valid", [{ field: "cursor", message: "not a cursor returned by this list" }]);
}

/**
 * One page. `fetch(after, n)` is a program reading up to n rows in list order strictly after the
 * key `after` (null: from the start); `keyOf` gives a row's key (always `parts` strings); `view` shapes it.
 */
export function* pageOf<R, T>(
  q: PageQuery,
  parts: number,
  fetch: (after: string[] | null, n: number) => Q<R[]>,
  keyOf: (row: R) => string[],
  view: (row: R) => T,
): Q<Page<T>> {
  const limit = q.limit ?? DEFAULT_PAGE_SIZE;
  const probe = yield* fetch(decodeCursor(q.cursor, parts), limit + 1);
  const rows = probe.slice(0, limit);
  return { items: rows.map(view), nextCursor: probe.length > limit ? encodeCursor(keyOf(rows[rows.length - 1])) : null };
}
