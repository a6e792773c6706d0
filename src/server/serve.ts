// Starts one server instance: data directory, keys, database (migrated before any request),
// the Elysia app and Bun's WebSocket server on one port.
import { mkdirSync, existsSync, readFileSync, writeFileSync, chmodSync } from "node:fs";
import { join } from "node:path";
import type { Server } from "bun";
import { openDatabase } from "../db";
import { startCheckpointer } from "../db/checkpointer";
import { Sealer, deriveKey } from "../lib/seal";
import { createApp, type App } from "./app";
import { CoreEvents, type Config, type Core, type Logger } from "./core";
import { defaultConfig, publicUrlFor } from "./config";
import { createLogger } from "./log";
import { createMetrics } from "./metrics";
import { observeRequests } from "./observe";
import { Sockets, type SocketData } from "./sockets";

export interface RunningServer {
  core: Core;
  app: App;
  server: Server<SocketData>;
  url: string;
  stop(): Promise<void>;
}

export interface StartOptions extends Partial<Config> {
  logger?: Logger;
}

/** The data directory's master key: created once with mode 0600; everything secret derives from it. */
function loadMasterKey(dataDir: string): Uint8Array {
  const path = join(dataDir, "master.key");
  if (!existsSync(path)) {
    writeFileSync(path, Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64") + "\n", { mode: 0o600 });
  }
  chmodSync(path, 0o600);
  const key = Buffer.from(readFileSync(path, "utf8").trim(), "base64");
  if (key.length !== 32) throw new Error(`${path} is not a valid key file`);
  return key;
}

export async function startServer(options: StartOptions = {}): Promise<RunningServer> {
  const { logger, ...overrides } = options;
  const config = defaultConfig(overrides);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  mkdirSync(join(config.dataDir, "artifacts"), { recursive: true });
  const masterKey = loadMasterKey(config.dataDir);
  const db = openDatabase(join(config.dataDir, "ao.db"));

  let server: Server<SocketData> | null = null;
  const log = logger ?? createLogger(config.log);
  const core: Core = {
    instanceId: crypto.randomUUID(),
    config,
    db,
    sqlite: db.$client,
    sealer: new Sealer(masterKey),
    jwtSecret: Buffer.from(deriveKey(masterKey, "ao access tokens v1")).toString("base64"),
    hub: { publish: (topic, message) => void server?.publish(topic, message) },
    sockets: new Sockets(log),
    log,
    metrics: createMetrics(),
    events: new CoreEvents((name, error) => log.error(`listener of ${name} failed`, { error: String((error as Error)?.stack ?? error) })),
    taskHooks: [],
    onClose: [],
  };

  // WAL checkpoints run on a thread of their own, outside every request (db/checkpointer.ts).
  const checkpointer = startCheckpointer(db.$client, join(config.dataDir, "ao.db"), 200, (message) =>
    core.log.warn("background checkpoints failed; the server checkpoints inline again", { message }),
  );

  const app = createApp(core);
  app.compile();
  const sockets = core.sockets;
  const handle = observeRequests(core, (request) => app.fetch(request));
  server = Bun.serve<SocketData>({
    port: config.port,
    hostname: config.host,
    maxRequestBodySize: config.artifactLimitBytes + 1024 * 1024,
    idleTimeout: 60,
    development: false,
    fetch(request, srv) {
      const path = pathOf(request.url);
      if (sockets.handlerFor(path)) return sockets.upgrade(request, srv, path);
      return handle(request);
    },
    websocket: sockets.websocket,
  });
  // Elysia reads the client address through app.server.
  (app as unknown as { server: Server<SocketData> }).server = server;
  if (!config.publicUrl) config.publicUrl = publicUrlFor(config, server.port!);

  let stopped = false;
  return {
    core,
    app,
    server,
    url: `http://${server.hostname === "0.0.0.0" ? "127.0.0.1" : server.hostname}:${server.port}`,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server!.stop(true);
      for (const fn of core.onClose.reverse()) await fn();
      await checkpointer.stop();
      // Fold the WAL back into the database so a stopped data directory is one file to copy.
      db.$client.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      db.$client.close();
    },
  };
}

function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", start);
  return q === -1 ? url.slice(start) : url.slice(start, q);
}
