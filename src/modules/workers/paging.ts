// Keyset pages (orgs/paging.ts) whose rows are read by a database program.
import { pageOf, type Page, type PageQuery } from "../orgs/paging";
import type { Q } from "../../db/query";

/**
 * pageOf (orgs/paging.ts) over a fetch that is a program: a first call that reads nothing decodes
 * the cursor and gives the page size, the second shapes the page from the rows read.
 */
export function* pageOfQ<R>(query: PageQuery, parts: number, fetch: (after: string[] | null, n: number) => Q<R[]>, keyOf: (row: R) => string[]): Q<Page<R>> {
  let args: [string[] | null, number] = [null, 0];
  pageOf(query, parts, (after, n) => ((args = [after, n]), []), keyOf, (row) => row);
  const rows = yield* fetch(...args);
  return pageOf(query, parts, () => rows, keyOf, (row) => row);
}
