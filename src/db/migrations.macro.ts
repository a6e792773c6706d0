// A Bun macro: runs at build (and transpile) time, so the compiled executable carries
// the SQL of every migration and needs no migrations folder beside it.
import { readFileSync } from "node:fs";
import { join } from "node:path";

export interface EmbeddedMigration {
  tag: string;
  folderMillis: number;
  hash: string;
  sql: string[];
}

/** SQLite's migrations (migrations/) or PostgreSQL's (migrations/pg/), oldest first. */
export function embeddedMigrations(dialect: "sqlite" | "postgres" = "sqlite"): EmbeddedMigration[] {
  const dir = join(import.meta.dir, "..", "..", "migrations", ...(dialect === "postgres" ? ["pg"] : []));
  const journal = JSON.parse(readFileSync(join(dir, "meta", "_journal.json"), "utf8")) as {
    entries: { tag: string; when: number; breakpoints: boolean }[];
  };
  return journal.entries.map((entry) => {
    const text = readFileSync(join(dir, `${entry.tag}.sql`), "utf8");
    return {
      tag: entry.tag,
      folderMillis: entry.when,
      // The same hash drizzle's own migrator records, so drizzle-kit tooling agrees with us.
      hash: new Bun.CryptoHasher("sha256").update(text).digest("hex"),
      sql: text.split("--> statement-breakpoint"),
    };
  });
}
