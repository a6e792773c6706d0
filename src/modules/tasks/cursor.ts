// Opaque keyset cursors (SPEC §1): the base64url of the last id of a page. Ids sort by creation
// time, so "strictly before this id" stays a stable position while rows are inserted.
import { invalid } from "../../server/errors";

export const DEFAULT_LIMIT = 50;
export const MAX_LIMIT = 200;

export function encodeCursor(lastId: string): string {
  return Buffer.from(lastId, "utf8").toString("base64url");
}

const badCursor = () => invalid("the cursor is not valid", [{ field: "cursor", message: "not a cursor returned by this list" }]);

const SHAPES = new Map<string, RegExp>();

/** The id a cursor names, or null for no cursor; 400 for anything this list did not hand out. */
export function decodeCursor(cursor: string | undefined, prefix: string): string | null {
  if (cursor === undefined || cursor === "") return null;
  if (!/^[A-Za-z0-9_-]{1,96}$/.test(cursor)) throw badCursor();
  const id = Buffer.from(cursor, "base64url").toString("utf8");
  let shape = SHAPES.get(prefix);
  if (!shape) SHAPES.set(prefix, (shape = new RegExp(`^${prefix}_[0-9a-z]{26}$`)));
  if (!shape.test(id)) throw badCursor();
  return id;
}

/** Cuts a probe of limit+1 rows into a page. */
export function pageFrom<R, T>(probe: R[], limit: number, idOf: (r: R) => string, view: (r: R) => T) {
  const rows = probe.length > limit ? probe.slice(0, limit) : probe;
  return { items: rows.map(view), nextCursor: probe.length > limit ? encodeCursor(idOf(rows[rows.length - 1])) : null };
}
