// Starts a real server on a random loopback port with a fresh data directory.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startServer, type RunningServer, type StartOptions } from "../../src/server/serve";

export interface TestServer extends RunningServer {
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
  const running = await startServer({
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
    dataDir,
    api,
    async stop() {
      await running.stop();
      if (!options.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
