// Preloaded before every test file (bunfig.toml): what the whole run shares is torn down once
// every file has run.
import { afterAll } from "bun:test";
import { stopPostgresServer } from "./helpers/postgres";

afterAll(() => stopPostgresServer());
