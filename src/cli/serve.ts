// `ao serve` and `ao healthcheck`.
import { parseArgs } from "node:util";
import { startServer } from "../server/serve";
import { NewerDatabaseError } from "../db";

const SERVE_USAGE = `usage: ao serve [--port N] [--host ADDRESS] [--data-dir DIR] [--database-url URL] [--public-url URL]

Runs the server: the API, the web app and the worker socket on one port.
  --port          AO_PORT           TCP port (default 7070; 0 picks a free one)
  --host          AO_HOST           address to listen on (default 0.0.0.0; 127.0.0.1 for this machine only)
  --data-dir      AO_DATA_DIR       database, key file and artifacts (default ./ao-data)
  --database-url  AO_DATABASE_URL   postgres:// URL: the database on PostgreSQL instead of DIR/ao.db
  --public-url    AO_PUBLIC_URL     the address people and workers use (default http://localhost:PORT)
Every other setting is an environment variable: README, "Configure".`;

const HEALTHCHECK_USAGE = `usage: ao healthcheck [PORT] [--port N] [--host ADDRESS]

Exits 0 when the server on this machine answers GET /api/v1/health within 3 s, 1 otherwise.
Reads AO_PORT (default 7070) and AO_HOST like ao serve; a server on 0.0.0.0 is asked on 127.0.0.1.`;

export async function serve(args: string[]): Promise<number | void> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: "string" },
      host: { type: "string" },
      "data-dir": { type: "string" },
      "database-url": { type: "string" },
      "public-url": { type: "string" },
      help: { type: "boolean", short: "h" },
    },
    strict: true,
  });
  if (values.help) return void console.log(SERVE_USAGE);
  let running;
  try {
    running = await startServer({
      port: values.port !== undefined ? parsePort(values.port) : undefined,
      host: values.host,
      dataDir: values["data-dir"],
      databaseUrl: values["database-url"],
      publicUrl: values["public-url"],
    });
  } catch (err) {
    if (err instanceof NewerDatabaseError) {
      console.error(`ao: ${err.message}`);
      return 1;
    }
    throw err;
  }
  // The public URL is what people use; the bound address tells where it actually listens (behind a proxy they differ).
  const { server, core } = running;
  core.log.info(`ao listening on ${core.config.publicUrl}`, { bound: `${server.hostname}:${server.port}`, dataDir: core.config.dataDir });
  const shutdown = async (signal: string) => {
    running.core.log.info(`received ${signal}, shutting down`);
    await running.stop();
    process.exit(0);
  };
  process.once("SIGTERM", () => void shutdown("SIGTERM"));
  process.once("SIGINT", () => void shutdown("SIGINT"));
  await new Promise(() => {}); // serve until a signal
}

function parsePort(value: string): number {
  const n = Number(value);
  // A wrong command line, as parseArgs's own refusals: exit status 2 (main.ts).
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw Object.assign(new Error(`--port must be a port number, got ${value}`), { code: "ERR_PARSE_ARGS_INVALID_OPTION_VALUE" });
  return n;
}

/** `ao healthcheck [PORT] [--port N] [--host H]`: exit 0 when the server on this machine answers /api/v1/health. */
export async function healthcheck(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { port: { type: "string" }, host: { type: "string" }, help: { type: "boolean", short: "h" } },
    allowPositionals: true,
    strict: true,
  });
  if (values.help) {
    console.log(HEALTHCHECK_USAGE);
    return 0;
  }
  const port = parsePort(values.port ?? positionals[0] ?? process.env.AO_PORT ?? "7070");
  // A server listening on every address is asked on loopback; one bound to an address, there.
  let host = values.host ?? process.env.AO_HOST ?? "0.0.0.0";
  if (host === "0.0.0.0" || host === "") host = "127.0.0.1";
  if (host === "::") host = "::1";
  if (host.includes(":")) host = `[${host}]`;
  try {
    const res = await fetch(`http://${host}:${port}/api/v1/health`, { signal: AbortSignal.timeout(3000) });
    return res.ok ? 0 : 1;
  } catch {
    return 1;
  }
}
