import { defineConfig } from "drizzle-kit";

// PostgreSQL's migrations, from the schema derived from the SQLite one (src/db/schema-pg.ts).
export default defineConfig({
  dialect: "postgresql",
  schema: "./src/db/schema-pg.ts",
  out: "./migrations/pg",
});
