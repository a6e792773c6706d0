// `ao serve` and `ao healthcheck`.
import { parseArgs } from "node:util";
import { startServer } from "../server/serve";
import { NewerDatabaseError } from "../db";

export async function serve(args: string[]): Promise<number | void> {
  const { values } = parseArgs({
    args,
    options: {
      port: { type: "string" },
      host: { type: "string" },
      "data-dir": { type: "string" },
      "public-url": { type: "string" },
    },
    strict: true,
  });
  let running;
  try {
    running = await startServer({
      port: values.port !== undefined ? parsePort(values.port) : undefined,
      host: values.host,
      dataDir: values["data-dir"],
      publicUrl: values["public-url"],
    });
  } catch (err) {
    if (err instanceof NewerDatabaseError) {
      console.error(`ao: ${err.message}`);
      return 1;
    }
    throw err;
  }
  running.core.log.info(`ao listening on ${running.core.config.publicUrl}`, { dataDir: running.core.config.dataDir });
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
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`--port must be a port number, got ${value}`);
  return n;
}

export async function healthcheck(args: string[]): Promise<number> {
  const port = args[0] ?? process.env.AO_PORT ?? "7070";
  try {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/health`, { signal: AbortSignal.timeout(3000) });
    return res.ok ? 0 : 1;
  } catch {
    return 1;
  }
}
