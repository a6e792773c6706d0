// Runs a background job (sweeps, expiries, deliveries) on exactly one server at a time. With SQLite
// there is one server and it always leads. With PostgreSQL, each server's contender holds its own
// connection and tries a session advisory lock every retryMs; the one holding it leads. When the
// leader's connection ends (its server was killed, or the network failed), PostgreSQL releases the
// lock and another contender takes it on its next try; a leader that sees its connection fail, or
// not answer, steps down at once, so two servers lead together only while PostgreSQL has not yet
// noticed a dead connection that the old leader has already given up.
import { createHash } from "node:crypto";
import type { ReservedSQL, SQL } from "bun";
import type { Logger } from "./core";

export interface Leadership {
  /** Whether this server runs the job now. */
  isLeader(): boolean;
  /** Calls fn(leader) on each gain and loss (not for the state at registration: read isLeader()); returns its removal. */
  onChange(fn: (leader: boolean) => void): () => void;
  /** Resolves once the first try has answered (leader or not). */
  ready: Promise<void>;
  /** Stops trying and gives the lead up (onChange hears the loss). */
  close(): Promise<void>;
}

export interface LeadershipOptions {
  /** PostgreSQL URL; without it this is the only server, always the leader. */
  url?: string;
  /** How often a contender tries the lock and the leader checks its connection (ms). */
  retryMs?: number;
  log: Logger;
}

/** A stable signed 64-bit advisory lock key for the name (PostgreSQL's bigint is signed). */
export function lockKey(name: string): bigint {
  return createHash("sha256").update(`ao:leader:${name}`).digest().readBigInt64BE(0);
}

export function leadership(name: string, opts: LeadershipOptions): Leadership {
  if (!opts.url) {
    return { isLeader: () => true, onChange: () => () => {}, ready: Promise.resolve(), close: async () => {} };
  }
  return new Contender(name, opts.url, opts.retryMs ?? 2000, opts.log);
}

/** One connection that holds (or tries to take) the lock; replaced whenever it fails. */
interface Session {
  sql: SQL;
  conn: ReservedSQL | null;
  lost: boolean;
}

class Contender implements Leadership {
  private readonly key: bigint;
  private readonly listeners = new Set<(leader: boolean) => void>();
  // A check that has not answered in this time counts as a failed connection.
  private readonly timeoutMs: number;
  private leader = false;
  private closed = false;
  private failing = false;
  private session: Session | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private running: Promise<void>;
  readonly ready: Promise<void>;

  constructor(
    private readonly name: string,
    private readonly url: string,
    private readonly retryMs: number,
    private readonly log: Logger,
  ) {
    this.key = lockKey(name);
    this.timeoutMs = Math.max(5000, retryMs);
    this.running = this.ready = this.tick();
  }

  isLeader() {
    return this.leader;
  }

  onChange(fn: (leader: boolean) => void) {
    const one = (leader: boolean) => fn(leader);
    this.listeners.add(one);
    return () => void this.listeners.delete(one);
  }

  async close() {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    const session = this.session;
    this.session = null;
    if (session?.conn && this.leader) {
      // Closing the connection releases the lock too, but only once the backend notices; unlock now.
      await this.timed(session.conn`SELECT pg_advisory_unlock(${this.key}::bigint)`).catch(() => {});
    }
    this.setLeader(false);
    if (session) await this.end(session);
  }

  private async tick(): Promise<void> {
    try {
      const session = (this.session ??= this.open());
      session.conn ??= await this.timed(session.sql.reserve());
      if (session.lost) throw new Error("connection closed");
      if (this.leader) {
        await this.timed(session.conn`SELECT 1`);
      } else {
        const [row] = await this.timed(session.conn`SELECT pg_try_advisory_lock(${this.key}::bigint) AS ok`);
        if (session.lost) throw new Error("connection closed");
        if (row?.ok) this.setLeader(true);
      }
      this.failing = false;
    } catch (error) {
      if (this.closed) return;
      // Once per outage: a database that is down would otherwise log every retry.
      if (!this.failing) this.log.warn("leadership connection failed", { name: this.name, error: String((error as Error)?.message ?? error) });
      this.failing = true;
      this.drop();
    } finally {
      if (!this.closed) this.timer = setTimeout(() => (this.running = this.tick()), this.retryMs);
    }
  }

  private open(): Session {
    const session: Session = {
      conn: null,
      lost: false,
      sql: new Bun.SQL(this.url, {
        max: 1,
        connection: {
          application_name: `ao leader ${this.name}`,
          // Lets PostgreSQL notice a vanished leader (and free the lock) in about 20 s, not hours.
          tcp_keepalives_idle: 10,
          tcp_keepalives_interval: 5,
          tcp_keepalives_count: 2,
        },
        // The leader steps down the moment its connection goes, not at its next check.
        onclose: () => {
          session.lost = true;
          if (this.session === session) this.drop();
        },
      }),
    };
    return session;
  }

  /** Gives up the current connection, and the lead with it. */
  private drop() {
    const session = this.session;
    this.session = null;
    this.setLeader(false);
    if (session) void this.end(session);
  }

  private async end(session: Session) {
    session.lost = true;
    await session.sql.close({ timeout: 0 }).catch(() => {});
  }

  private setLeader(leader: boolean) {
    if (this.leader === leader) return;
    this.leader = leader;
    this.log.info(leader ? "leading" : "no longer leading", { name: this.name });
    for (const fn of [...this.listeners]) {
      try {
        fn(leader);
      } catch (error) {
        this.log.error("leadership listener failed", { name: this.name, error: String((error as Error)?.stack ?? error) });
      }
    }
  }

  private timed<T>(work: Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout>;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
  }
}
