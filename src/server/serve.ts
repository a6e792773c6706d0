// Starts one server instance: data directory, keys, database (migrated before any request),
// the Elysia app and Bun's WebSocket server on one port.
import { mkdirSync, existsSync, readFileSync, writeFileSync, chmodSync, linkSync, unlinkSync } from "node:fs";
import { dirname, join } from "node:path";
import type { Server } from "bun";
import { openDatabase } from "../db";
import { SqliteStore } from "../db/store";
import { PgStore, pgDrizzle } from "../db/pg-store";
import { openPostgres } from "../db/postgres";
import type { Db } from "../db";
import { localBus, postgresBus } from "./bus";
import { startCheckpointer } from "../db/checkpointer";
import { Sealer, deriveKey } from "../lib/seal";
import { createApp, type App } from "./app";
import { bootstrap } from "./bootstrap";
import { CoreEvents, type Config, type Core, type Logger } from "./core";
import { defaultConfig, publicUrlFor } from "./config";
import { createLogger, withoutRepeats } from "./log";
import { createMetrics } from "./metrics";
import { observeRequests } from "./observe";
import { Sockets, type SocketData } from "./sockets";
import { pathOf } from "./limits";
import { AddressGate } from "./connections";
import { clientAddresses } from "./client-address";
import { AFTER_UNFINISHED_RESTORE, unfinishedRestore } from "../modules/backup/unfinished";

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

/**
 * The master key, everything secret derives from: read from its file, or made by the first start
 * (mode 0600). Linked into place whole, so servers starting at once on a shared file agree on one key.
 */
function loadMasterKey(path: string): Uint8Array {
  if (!existsSync(path)) {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const draft = `${path}.${process.pid}.${Date.now()}.new`;
    writeFileSync(draft, Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64") + "\n", { mode: 0o600 });
    try {
      linkSync(draft, path);
    } catch (error) {
      if ((error as { code?: string }).code !== "EEXIST") throw error;
    } finally {
      unlinkSync(draft);
    }
  }
  chmodSync(path, 0o600);
  const key = Buffer.from(readFileSync(path, "utf8").trim(), "base64");
  if (key.length !== 32) throw new Error(`${path} is not a valid key file`);
  return key;
}

/**
 * The database: ao.db in the data directory (SQLite, the default), or PostgreSQL when
 * config.databaseUrl is set, migrated before anything reads it; and the bus between the servers
 * on that database (this process alone on SQLite).
 */
async function openStorage(config: Config, instanceId: string, log: Logger): Promise<Pick<Core, "store" | "db" | "sqlite" | "bus">> {
  if (!config.databaseUrl) {
    const db = openDatabase(join(config.dataDir, "ao.db"));
    return { store: new SqliteStore(db.$client), db, sqlite: db.$client, bus: localBus(log) };
  }
  await (await openPostgres(config.databaseUrl)).close();
  const store = new PgStore({ url: config.databaseUrl });
  const bus = postgresBus(config.databaseUrl, instanceId, log);
  try {
    await bus.ready;
  } catch (error) {
    await store.close();
    throw error;
  }
  // The services build queries with drizzle's SQLite builder; on PostgreSQL its text runs through
  // the store (db/pg-store.ts), so the two databases share one type here.
  return { store, db: pgDrizzle(store) as unknown as Db, sqlite: null, bus };
}

export async function startServer(options: StartOptions = {}): Promise<RunningServer> {
  const { logger, ...overrides } = options;
  const config = defaultConfig(overrides);
  const unfinished = unfinishedRestore(config.dataDir);
  if (unfinished) throw new Error(`${unfinished}: ${AFTER_UNFINISHED_RESTORE}`);
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  mkdirSync(join(config.dataDir, "artifacts"), { recursive: true });
  const masterKey = loadMasterKey(config.masterKeyFile);
  const log = withoutRepeats(logger ?? createLogger(config.log));
  const instanceId = crypto.randomUUID();
  const storage = await openStorage(config, instanceId, log);

  let server: Server<SocketData> | null = null;
  const core: Core = {
    instanceId,
    config,
    ...storage,
    sealer: new Sealer(masterKey),
    jwtSecret: Buffer.from(deriveKey(masterKey, "ao access tokens v1")).toString("base64"),
    hub: {
      publish: (topic, message) => void server?.publish(topic, message),
      hasSubscribers: (topic) => (server?.subscriberCount(topic) ?? 0) > 0,
    },
    sockets: new Sockets(log),
    log,
    metrics: createMetrics(),
    events: new CoreEvents((name, error) => log.error(`listener of ${name} failed`, { error: String((error as Error)?.stack ?? error) })),
    taskHooks: [],
    onClose: [],
  };

  // WAL checkpoints run on a thread of their own while the server writes, outside every request (db/checkpointer.ts).
  const checkpointer = storage.sqlite
    ? startCheckpointer(storage.sqlite, join(config.dataDir, "ao.db"), {
        onError: (message) => core.log.warn("background checkpoints failed; the server checkpoints inline again", { message, cause: message }),
        onRecovered: () => core.log.info("background checkpoints work again"),
      })
    : null;

  await bootstrap(core);
  const app = createApp(core);
  app.compile();
  const sockets = core.sockets;
  const gate = new AddressGate(config.connections.perAddress);
  const addressOf = clientAddresses(config.trustedProxies);
  const handle = observeRequests(core, (request) => app.fetch(request));
  server = Bun.serve<SocketData>({
    port: config.port,
    hostname: config.host,
    // Bodies are limited per route before they are read (limits.ts) and while streamed; Bun's own
    // refusal past this size would answer 413 with an empty body, so it never comes first.
    maxRequestBodySize: Number.MAX_SAFE_INTEGER,
    // Measured with Bun 1.4.5: a connection idle this long is closed, and so is one whose request
    // body has not arrived whole this long after its headers (unless the request's own timeout is
    // set, as app.ts does once a request is routed). Headers must arrive within about 10 s (uWS).
    idleTimeout: config.connections.idleSec,
    development: false,
    async fetch(request, srv) {
      const address = addressOf(request, srv);
      if (!gate.enter(address)) return gate.refusal();
      let upgraded = false;
      try {
        const path = pathOf(request.url);
        if (sockets.handlerFor(path)) {
          const refused = await sockets.upgrade(request, srv, path, address);
          upgraded = refused === undefined;
          return refused;
        }
        return await handle(routable(request));
      } finally {
        // An open WebSocket stays counted until it closes.
        if (!upgraded) gate.leave(address);
      }
    },
    websocket: {
      ...sockets.websocket,
      // ws.data.clientAddress: the address the socket was counted under at its upgrade.
      close(ws, code, reason) {
        gate.leave(ws.data.clientAddress as string);
        sockets.websocket.close(ws, code, reason);
      },
    },
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
      await stopModules(core);
      await core.bus.close();
      if (checkpointer) await checkpointer.stop();
      if (core.sqlite) {
        // Fold the WAL back into the database so a stopped data directory is one file to copy.
        core.sqlite.exec("PRAGMA wal_checkpoint(TRUNCATE)");
        core.sqlite.close();
      }
      await core.store.close();
    },
  };
}

/** How long a stop waits, in all, for the modules' work under way (then the database's close ends it). */
const STOP_WAIT_MS = 5_000;

/**
 * Runs the modules' stops (core.onClose), last registered first. They wait for their work under way
 * (worker requests, the callback relay's pass), which waits for the database: on PostgreSQL a query
 * blocked by a lock held elsewhere would hold the stop until the lock went. So after STOP_WAIT_MS the
 * stops still running are no longer waited for (the later ones are still called); closing the
 * database then ends their queries, their transactions rolled back, and a worker asks again when it
 * reconnects.
 */
async function stopModules(core: Core) {
  let timer: Timer | undefined;
  const late = new Promise<"late">((resolve) => (timer = setTimeout(() => resolve("late"), STOP_WAIT_MS)));
  let left = 0;
  for (const fn of core.onClose.reverse()) if ((await Promise.race([Promise.resolve(fn()).then(() => "done" as const), late])) === "late") left++;
  clearTimeout(timer);
  if (left) core.log.warn("stopped without waiting longer for work under way: the database's close ends it", { stops: left, waitedMs: STOP_WAIT_MS });
}

/**
 * Elysia finds the path at the first "/" from index 11 of the URL, assuming an authority of at least
 * 4 characters: a Host of "a" or "ao:80" (Bun drops the port; nginx sends it for `proxy_pass http://ao;`)
 * would route "/api/v1/health" as "/v1/health", and "/zzz/api/v1/health" as health. Such a URL gets
 * a canonical authority. The same Request object is kept (Bun's requestIP knows only the original),
 * so its url is shadowed in place.
 */
function routable(request: Request): Request {
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start >= 11) return request;
  Object.defineProperty(request, "url", { value: `http://localhost${start === -1 ? "/" : url.slice(start)}` });
  return request;
}
