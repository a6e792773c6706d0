// Everything a server instance owns. There are no module-level singletons: tests run several
// servers in one process, and services take the core they act on.
import type { Database } from "bun:sqlite";
import type { Db } from "../db";
import type { Store } from "../db/store";
import type { Bus } from "./bus";
import type { Q } from "../db/query";
import type { Sealer } from "../lib/seal";
import type { Sockets } from "./sockets";
import type { TaskBefore, TaskChange } from "../modules/tasks/store";
import type { TaskRow } from "../modules/tasks/record";
import type { Action } from "../modules/tasks/machine";
import type { Actor } from "../modules/auth/principal";
import type { LogFormat, LogLevel } from "./log";
import type { Metrics } from "./metrics";

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** AO_DATABASE_URL: a postgres:// URL, or null for ao.db in the data directory. */
  databaseUrl: string | null;
  /** AO_MASTER_KEY_FILE: the key every secret derives from (default: master.key in the data directory). */
  masterKeyFile: string;
  publicUrl: string;
  /** argon2id cost; tests lower it. */
  passwordCost: { memoryCost: number; timeCost: number };
  jsonLimitBytes: number;
  artifactLimitBytes: number;
  allowPrivateCallbacks: boolean;
  /** Worker timings; tests shorten them. */
  workerTimeouts: { offerMs: number; offlineMs: number; heartbeatMs: number };
  /**
   * Outbound callbacks: delays before each retry (the list length + 1 is the number of tries) and
   * the per-try timeout; claimMs: how long a relay's claim of a try holds before another server's
   * relay may take the delivery over (default: the timeout plus a margin). Tests shorten them.
   */
  callbacks: { retryDelaysMs: number[]; timeoutMs: number; claimMs?: number };
  /** Client live-updates socket: time to authenticate, and how often open sockets re-check their credential; tests shorten them. */
  liveTimeouts: { authMs: number; recheckMs: number };
  /** How long an access token lasts (900 s; tests shorten it). */
  accessTokenTtlSec: number;
  /**
   * Connections: requests in flight plus open WebSockets per client address (0: no cap); seconds a
   * connection may sit idle or spend receiving a JSON body; seconds a routed request may take.
   */
  connections: { perAddress: number; idleSec: number; requestSec: number };
  /**
   * AO_TRUSTED_PROXIES: addresses and CIDR ranges of the reverse proxies whose X-Forwarded-For
   * names the client (empty: the header is ignored, every client is its connection's address).
   */
  trustedProxies: string[];
  /** AO_LOG_LEVEL and AO_LOG_FORMAT (json lines, or pretty for a person at a terminal). */
  log: { level: LogLevel; format: LogFormat };
  /** AO_METRICS_TOKEN: the bearer token of GET /metrics; null (unset) hides the route. */
  metricsToken: string | null;
  /**
   * GitHub (SPEC §10): AO_GITHUB_URL (web, default https://github.com) and AO_GITHUB_API_URL
   * (default https://api.github.com; GHES: https://HOST/api/v3). retryBaseMs: the first backoff of
   * a pull request or review GitHub refused for the moment (5xx, rate limit), doubling per try;
   * claimMs: how long a job's claim holds unrenewed before another server may take the job over.
   */
  github: { url: string; apiUrl: string; retryBaseMs: number; maxTries: number; claimMs?: number };
}

/** Live fan-out. One small interface so a cross-process driver can replace Bun's in-process pub/sub. */
export interface Publisher {
  publish(topic: string, message: string): void;
  /** Whether anyone listens on the topic, so a message nobody reads is not built (names, JSON). */
  hasSubscribers(topic: string): boolean;
}

export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

export interface Core {
  /** Unique per server instance (plugin de-duplication seed). */
  instanceId: string;
  config: Config;
  /** Runs the services' database programs (db/query.ts) on SQLite or PostgreSQL. */
  store: Store;
  /** Drizzle's query builder: build with it, run through store (yield* rows(core.db.select()...)). */
  db: Db;
  /** The SQLite database (its group commit, checkpoints, backups); null on PostgreSQL. */
  sqlite: Database | null;
  /** Messages between the servers on one database (PostgreSQL); this process alone on SQLite. */
  bus: Bus;
  sealer: Sealer;
  /** Key for signing access tokens. */
  jwtSecret: string;
  hub: Publisher;
  /** WebSocket paths; modules register their socket handlers here. */
  sockets: Sockets;
  log: Logger;
  /** Prometheus counters the hot paths increment (GET /metrics). */
  metrics: Metrics;
  /** Hooks other features attach to, e.g. "a task changed state" for the worker dispatcher and outbox. */
  events: CoreEvents;
  /**
   * Run inside the transaction of every task change (e.g. the outbox row of a callback), so the
   * change and what follows from it commit together. A program (db/query.ts), run inside the change's.
   */
  taskHooks: ((change: TaskChange) => Q<void>)[];
  /** Cleanups to run at shutdown (timers, relays). */
  onClose: (() => void | Promise<void>)[];
}

type Listener<T> = (payload: T) => void;

export class CoreEvents {
  private listeners = new Map<string, Listener<any>[]>();

  /** `onError` hears a listener's failure; it must not reach the emitter, whose change has committed. */
  constructor(private readonly onError: (name: string, error: unknown) => void = () => {}) {}

  on<K extends keyof CoreEventMap>(name: K, fn: Listener<CoreEventMap[K]>) {
    const list = this.listeners.get(name) ?? [];
    list.push(fn);
    this.listeners.set(name, list);
  }

  emit<K extends keyof CoreEventMap>(name: K, payload: CoreEventMap[K]) {
    for (const fn of this.listeners.get(name) ?? []) {
      try {
        fn(payload);
      } catch (error) {
        this.onError(name, error);
      }
    }
  }
}

/** Emitted after the transaction that made the change has committed. */
export interface CoreEventMap {
  /** A task was created or its record changed (not emitted for events-only appends). */
  "task.changed": TaskChange;
  /**
   * Another server on the database committed a task change of the record (PostgreSQL): what this
   * server's dispatcher needs of it. `after` is the row read on arrival (possibly newer than the
   * change); `before` is null for a create. Not "task.changed": its listeners write, once, on the origin.
   */
  "task.changedElsewhere": { before: TaskBefore | null; after: TaskRow };
  /** A person applied an action; the worker running the task may need a control message. */
  "task.action": { change: TaskChange; action: Action; input?: string; reason?: string; actor: Actor };
  /**
   * The org's workers changed, here or on another server: one connected, went, was approved,
   * revoked or edited. Why its queued tasks wait (their waitingReason) may have changed with them.
   */
  "workers.changed": { orgId: string };
  /** A project's policy was written: budgets and preferred agents are read afresh, the queue looked at again. */
  "project.policyChanged": { orgId: string; projectId: string };
  /** A usage report took a project to its daily budget (here or on another server): its queued tasks now wait for it. */
  "project.budgetReached": { orgId: string; projectId: string };
  /**
   * A session, API token or membership of the user was revoked, removed or changed. What holds
   * their access open (live sockets) re-checks it at once; SPEC §4: a revoked session stops at once.
   */
  "access.changed": { userId: string; reason: AccessChange };
}

export type AccessChange = "session_revoked" | "token_revoked" | "membership_removed" | "role_changed";

/**
 * Wraps a timer or socket callback so that an error (a busy database, a bug) is logged instead of
 * ending the process: Bun exits on an uncaught exception, and one failed tick must not stop the server.
 */
export function guarded<A extends unknown[]>(log: Logger, what: string, fn: (...args: A) => void): (...args: A) => void {
  return (...args: A) => {
    try {
      fn(...args);
    } catch (error) {
      log.error(`${what} failed`, { error: String((error as Error)?.stack ?? error) });
    }
  };
}
