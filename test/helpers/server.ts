// Starts a real server on a random loopback port with a fresh data directory.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Database } from "bun:sqlite";
import { startServer, type RunningServer, type StartOptions } from "../../src/server/serve";
import { freshDatabase } from "./postgres";

/** AO_TEST_DATABASE=postgres (npm run test:postgres): every test server gets a fresh PostgreSQL database. */
export const onPostgres = process.env.AO_TEST_DATABASE === "postgres";

export interface TestServer extends RunningServer {
  /** The tests that reach into SQLite itself run on SQLite only (skipped on PostgreSQL). */
  core: RunningServer["core"] & { sqlite: Database };
  dataDir: string;
  /** fetch relative to /api/v1 with JSON in and out. */
  api(method: string, path: string, opts?: { body?: unknown; token?: string; headers?: Record<string, string>; raw?: RequestInit["body"] }): Promise<ApiResponse>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  body: any;
}

export async function startTestServer(options: StartOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), "ao-test-"));
  const databaseUrl = options.databaseUrl !== undefined ? options.databaseUrl : onPostgres ? await freshDatabase() : null;
  const running = await startServer({
    ...(databaseUrl ? { databaseUrl } : {}),
    port: 0,
    host: "127.0.0.1",
    passwordCost: { memoryCost: 1024, timeCost: 1 },
    logger: { info() {}, warn() {}, error: (m, f) => console.error(m, f) },
    ...options,
    dataDir,
  });
  const base = running.url + "/api/v1";
  const api: TestServer["api"] = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: RequestInit["body"] = opts.raw;
    if (opts.body !== undefined) {
      headers["content-type"] ??= "application/json";
      body = typeof opts.body === "string" ? opts.body : JSON.stringify(opts.body);
    }
    const res = await fetch(base + path, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {}
    return { status: res.status, headers: res.headers, body: parsed };
  };
  return {
    ...running,
    core: running.core as TestServer["core"],
    dataDir,
    api,
    async stop() {
      await running.stop();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
