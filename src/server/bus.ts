// The bus carries small messages (ids, not rows) between the servers that make one ao service, so
// that what happens on one server reaches the sockets, live subscribers and caches of every other.
// With SQLite there is one server, and localBus delivers in-process. With PostgreSQL, postgresBus
// also sends each message with NOTIFY on one channel, and every server LISTENs to it.
//
// Delivery guarantees:
// - On the publishing server, every handler hears each message once, on a microtask after
//   publish() (never inside the publisher's call stack), in publish order.
// - On the other servers, at most once, and in publish order for one publisher, while their
//   LISTEN connection is up. NOTIFY is not stored: a server that was disconnected misses what was
//   sent meanwhile. Bun reconnects and re-LISTENs by itself; the bus then calls its onReconnect
//   hooks, and a receiver that must not miss anything re-reads the state it follows there.
// - A receiver reads the rows a message names, so publish after the write has committed (after
//   core.store.write resolves): a NOTIFY is sent on its own connection, outside the transaction.
// - Messages published while a NOTIFY is on its way leave together in the next one (a JSON array
//   of envelopes, under PostgreSQL's size limit): one round trip and one notification for many
//   changes under load, in the same order.
import type { Logger } from "./core";
import { CLOSE_WAIT_S } from "../db/pg-store";

export type Handler = (payload: any) => void;

export interface Bus {
  /** Delivers the payload to every handler of the channel on every server. Throws if it is too large. */
  publish(channel: string, payload: Record<string, unknown>): void;
  /** Adds a handler; returns its removal. */
  on(channel: string, handler: Handler): () => void;
  /** Calls fn when the bus is connected again after a loss (messages may have been missed); returns its removal. */
  onReconnect(fn: () => void): () => void;
  /** Resolves once the bus receives other servers' messages; rejects if the first LISTEN failed (no retry then). */
  ready: Promise<void>;
  /** Stops delivering and sending; later publishes are dropped. */
  close(): Promise<void>;
}

/** The PostgreSQL channel every server listens to; the bus's own channel travels in the payload. */
export const NOTIFY_CHANNEL = "ao_bus";

// PostgreSQL refuses a NOTIFY payload of 8,000 bytes or more; the margin keeps a failure at publish.
const MAX_MESSAGE_BYTES = 7000;

/** What travels in a NOTIFY: channel, sending instance, payload. */
interface Envelope {
  c: string;
  s: string;
  p: Record<string, unknown>;
}

/** The handlers of this process, and the in-order, never re-entrant delivery to them. */
class Handlers {
  private readonly byChannel = new Map<string, Set<Handler>>();
  private readonly reconnects = new Set<() => void>();
  closed = false;

  constructor(private readonly log: Logger) {}

  on(channel: string, handler: Handler): () => void {
    let set = this.byChannel.get(channel);
    if (!set) this.byChannel.set(channel, (set = new Set()));
    // A wrapper per registration, so the same function added twice is two handlers.
    const one: Handler = (payload) => handler(payload);
    set.add(one);
    return () => {
      set.delete(one);
      if (set.size === 0 && this.byChannel.get(channel) === set) this.byChannel.delete(channel);
    };
  }

  onReconnect(fn: () => void): () => void {
    const one = () => fn();
    this.reconnects.add(one);
    return () => void this.reconnects.delete(one);
  }

  /** Delivers on a microtask: microtasks run in the order they were queued, so publish order holds. */
  later(channel: string, payload: Record<string, unknown>) {
    queueMicrotask(() => this.deliver(channel, payload));
  }

  deliver(channel: string, payload: unknown) {
    if (this.closed) return;
    const set = this.byChannel.get(channel);
    if (!set) return;
    for (const handler of [...set]) {
      try {
        handler(payload);
      } catch (error) {
        this.log.error("bus handler failed", { channel, error: String((error as Error)?.stack ?? error) });
      }
    }
  }

  reconnected() {
    if (this.closed) return;
    for (const fn of [...this.reconnects]) {
      try {
        fn();
      } catch (error) {
        this.log.error("bus reconnect hook failed", { error: String((error as Error)?.stack ?? error) });
      }
    }
  }

  clear() {
    this.closed = true;
    this.byChannel.clear();
    this.reconnects.clear();
  }
}

/** One server: handlers of this process only. */
export function localBus(log: Logger): Bus {
  const handlers = new Handlers(log);
  return {
    publish(channel, payload) {
      if (!handlers.closed) handlers.later(channel, payload);
    },
    on: (channel, handler) => handlers.on(channel, handler),
    onReconnect: (fn) => handlers.onReconnect(fn),
    ready: Promise.resolve(),
    async close() {
      handlers.clear();
    },
  };
}

/** Several servers on one PostgreSQL database: local delivery as localBus, plus NOTIFY to the others. */
export function postgresBus(url: string, instanceId: string, log: Logger): Bus {
  const handlers = new Handlers(log);
  // One connection sends (so NOTIFYs leave in order); Bun's LISTEN takes a dedicated one of its own.
  const sql = new Bun.SQL(url, { max: 1, connection: { application_name: `ao bus ${instanceId}` } });
  // Envelopes not sent yet (JSON, with their size), and the send in progress: one at a time, in
  // publish order; what was published meanwhile leaves in the next (a failed send stops nothing).
  const unsent: { text: string; bytes: number }[] = [];
  let sending: Promise<void> | null = null;
  let listened = false;

  const send = async () => {
    while (unsent.length > 0) {
      let bytes = unsent[0].bytes;
      let n = 1;
      // An array adds its brackets and a comma per envelope.
      while (n < unsent.length && bytes + unsent[n].bytes + n + 2 <= MAX_MESSAGE_BYTES) bytes += unsent[n++].bytes;
      const batch = unsent.splice(0, n);
      const text = batch.length === 1 ? batch[0].text : `[${batch.map((e) => e.text).join(",")}]`;
      await sql.notify(NOTIFY_CHANNEL, text).catch((error) => {
        log.error("bus send failed", { messages: batch.length, error: String(error?.message ?? error) });
      });
    }
    sending = null;
  };

  const receiveOne = (message: Envelope) => {
    // This server's own message was delivered here at publish.
    if (!message || message.s === instanceId || typeof message.c !== "string") return;
    handlers.deliver(message.c, message.p);
  };
  const receive = (text: string) => {
    let message: Envelope | Envelope[];
    try {
      message = JSON.parse(text);
    } catch {
      log.warn("bus message is not JSON; ignored", { length: text.length });
      return;
    }
    if (Array.isArray(message)) for (const one of message) receiveOne(one);
    else receiveOne(message);
  };
  const listening = () => {
    if (listened) handlers.reconnected();
    listened = true;
  };

  const subscription = sql.listen(NOTIFY_CHANNEL, receive, listening);
  const ready = subscription.then(() => undefined);
  // Whoever awaits ready sees the failure; this keeps it from also being an unhandled rejection.
  ready.catch((error) => log.error("bus could not listen", { error: String(error?.message ?? error) }));

  return {
    publish(channel, payload) {
      if (handlers.closed) return;
      const text = JSON.stringify({ c: channel, s: instanceId, p: payload } satisfies Envelope);
      const bytes = Buffer.byteLength(text);
      if (bytes > MAX_MESSAGE_BYTES) {
        throw new Error(
          `bus message on ${channel} is ${bytes} bytes, over ${MAX_MESSAGE_BYTES}: send ids and let receivers read the rows`,
        );
      }
      handlers.later(channel, payload);
      unsent.push({ text, bytes });
      sending ??= send();
    },
    on: (channel, handler) => handlers.on(channel, handler),
    onReconnect: (fn) => handlers.onReconnect(fn),
    ready,
    async close() {
      if (handlers.closed) return;
      handlers.clear();
      await sending;
      await subscription.then((s) => s.unlisten()).catch(() => {});
      await sql.close({ timeout: CLOSE_WAIT_S });
    },
  };
}
