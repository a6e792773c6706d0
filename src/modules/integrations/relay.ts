// The in-process relay: sends the outbox's due rows, signed, and records each try. Woken right
// after a commit that wrote rows (and polled every second as a safety net). Only 2xx is success;
// redirects are not followed; 410 disables the target; Retry-After is honoured; rows left
// "delivering" by a crash are due again at startup (at-least-once, with a stable delivery id).
import { isIP } from "node:net";
import type { Core } from "../../server/core";
import { iso } from "../../lib/time";
import { VERSION } from "../../version";
import { checkTargetUrl, resolveTarget, TargetRefused } from "./netguard";
import { signSvc } from "./signing";

interface DueRow {
  id: string;
  target_type: "integration" | "plugin";
  target_id: string;
  event: string;
  payload: string;
  round_attempts: number;
}

interface TargetRow {
  url: string | null;
  secret_sealed: string;
  enabled: number;
  gone: number;
}

type Outcome =
  | { kind: "succeeded"; code: number; latencyMs: number }
  | { kind: "retry"; code: number | null; error: string | null; latencyMs: number | null; retryAfterMs?: number }
  | { kind: "failed"; code: number | null; error: string; latencyMs: number | null; disableTarget?: boolean }
  | { kind: "interrupted" };

/**
 * Callbacks in flight: in all, and to one integration or plugin. A slow or hanging receiver holds
 * at most `perTarget` of them, so it delays only its own callbacks; a burst to one receiver still
 * goes out `perTarget` at a time.
 */
export const IN_FLIGHT = { total: 32, perTarget: 8 };
const POLL_MS = 1000;
/** Tries kept per delivery for its log (older ones are dropped; the delivery counts them all). */
export const DELIVERY_TRIES_KEPT = 20;

type TryOutcome = "succeeded" | "retrying" | "failed";
const MAX_RETRY_AFTER_MS = 24 * 3600 * 1000;

function prepare(core: Core) {
  const q = core.sqlite;
  return {
    recover: q.query<unknown, [number, string]>("UPDATE deliveries SET status = 'pending', next_attempt_at = ?, updated_at = ? WHERE status = 'delivering'"),
    // The second parameter is a JSON list of targets that have IN_FLIGHT.perTarget callbacks in flight.
    due: q.query<DueRow, [number, string, number]>(
      `SELECT id, target_type, target_id, event, payload, round_attempts FROM deliveries
        WHERE status = 'pending' AND next_attempt_at <= ? AND target_id NOT IN (SELECT value FROM json_each(?))
        ORDER BY next_attempt_at LIMIT ?`,
    ),
    claim: q.query<unknown, [string, string]>("UPDATE deliveries SET status = 'delivering', updated_at = ? WHERE id = ? AND status = 'pending'"),
    nextDue: q.query<{ next: number | null }, [string]>(
      "SELECT MIN(next_attempt_at) AS next FROM deliveries WHERE status = 'pending' AND target_id NOT IN (SELECT value FROM json_each(?))",
    ),
    integration: q.query<TargetRow, [string]>(
      "SELECT callback_url AS url, secret_sealed, enabled, callback_disabled_at IS NOT NULL AS gone FROM integrations WHERE id = ?",
    ),
    plugin: q.query<TargetRow, [string]>("SELECT url, secret_sealed, enabled, 0 AS gone FROM plugins WHERE id = ?"),
    record: q.query<{ attempts: number }, [string, number | null, string | null, number | null, string, string | null, number, string, string]>(
      `UPDATE deliveries SET status = ?, attempts = attempts + 1, round_attempts = round_attempts + 1, last_status_code = ?, last_error = ?,
         last_latency_ms = ?, last_attempt_at = ?, delivered_at = ?, next_attempt_at = ?, updated_at = ? WHERE id = ? RETURNING attempts`,
    ),
    insertTry: q.query<unknown, [string, number, string, TryOutcome, number | null, string | null, number | null]>(
      "INSERT INTO delivery_tries (delivery_id, attempt, at, outcome, status_code, error, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ),
    pruneTries: q.query<unknown, [string, number]>("DELETE FROM delivery_tries WHERE delivery_id = ? AND attempt <= ?"),
    backToPending: q.query<unknown, [string, string]>("UPDATE deliveries SET status = 'pending', updated_at = ? WHERE id = ? AND status = 'delivering'"),
    disableIntegration: q.query<unknown, [string, string]>("UPDATE integrations SET callback_disabled_at = ?1, updated_at = ?1 WHERE id = ?2"),
    disablePlugin: q.query<unknown, [string, string]>("UPDATE plugins SET enabled = 0, updated_at = ?1 WHERE id = ?2"),
    failPending: q.query<unknown, [string, string, string]>(
      "UPDATE deliveries SET status = 'failed', last_error = ?, updated_at = ? WHERE target_id = ? AND status = 'pending'",
    ),
  };
}

/** `Retry-After` as milliseconds: delta seconds or an HTTP date. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

export class Relay {
  private readonly s: ReturnType<typeof prepare>;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerDue = Infinity;
  private stopped = false;
  private recovered = false;
  private readonly inFlight = new Map<string, { targetId: string; controller: AbortController; done: Promise<void> }>();

  constructor(private readonly core: Core) {
    this.s = prepare(core);
  }

  /** The first pass makes rows a crash left in flight due again (in a tick, so a locked database delays it, never stops startup). */
  start() {
    this.wake();
  }

  /** Look for due rows at once (after a commit that wrote some, or a redelivery). */
  wake() {
    this.schedule(0);
  }

  async stop() {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const { controller } of this.inFlight.values()) controller.abort();
    await Promise.allSettled([...this.inFlight.values()].map((f) => f.done));
  }

  private schedule(ms: number) {
    if (this.stopped) return;
    const due = Date.now() + ms;
    if (this.timer && this.timerDue <= due) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.timerDue = Infinity;
      this.tick();
    }, ms);
  }

  private tick() {
    if (this.stopped) return;
    try {
      if (!this.recovered) {
        this.s.recover.run(Date.now(), iso());
        this.recovered = true;
      }
      this.claimAndLaunch();
    } catch (err) {
      // A busy or locked database (a backup, another writer) must delay callbacks, never end the server.
      this.core.log.warn("callback relay could not read the outbox; retrying", { error: String(err) });
      this.schedule(POLL_MS);
    }
  }

  /** Callbacks in flight per target id (at most IN_FLIGHT.total entries to count). */
  private perTarget(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const { targetId } of this.inFlight.values()) counts.set(targetId, (counts.get(targetId) ?? 0) + 1);
    return counts;
  }

  /** Targets with IN_FLIGHT.perTarget callbacks in flight, as the JSON list the queries take. */
  private saturated(counts = this.perTarget()): string {
    return JSON.stringify([...counts].filter(([, n]) => n >= IN_FLIGHT.perTarget).map(([id]) => id));
  }

  private claimAndLaunch() {
    const free = IN_FLIGHT.total - this.inFlight.size;
    if (free > 0) {
      const now = Date.now();
      const claimed = this.core.sqlite
        .transaction(() => {
          // Read more than the free slots: some rows may belong to a target that fills up in this pass.
          const counts = this.perTarget();
          const chosen: DueRow[] = [];
          for (const row of this.s.due.all(now, this.saturated(counts), free * IN_FLIGHT.perTarget)) {
            const n = counts.get(row.target_id) ?? 0;
            if (n >= IN_FLIGHT.perTarget) continue;
            counts.set(row.target_id, n + 1);
            chosen.push(row);
            this.s.claim.run(iso(now), row.id);
            if (chosen.length === free) break;
          }
          return chosen;
        })
        .immediate();
      for (const row of claimed) this.launch(row);
    }
    // When every slot is busy, a finishing send wakes the relay; so it does for a full target.
    if (this.inFlight.size >= IN_FLIGHT.total) return;
    const next = this.s.nextDue.get(this.saturated())?.next ?? null;
    this.schedule(next === null ? POLL_MS : Math.min(Math.max(next - Date.now(), 0), POLL_MS));
  }

  private launch(row: DueRow) {
    const controller = new AbortController();
    const done = this.send(row, controller.signal)
      .catch((err): Outcome => {
        // A bug or an unreadable target row: count it as a failed try so the schedule still ends it.
        this.core.log.error("callback delivery failed unexpectedly", { deliveryId: row.id, error: String(err) });
        return { kind: "retry", code: null, error: `internal error: ${String((err as Error)?.message ?? err)}`, latencyMs: null };
      })
      .then((outcome) => this.recordUntilWritten(row, outcome, controller.signal))
      .finally(() => {
        this.inFlight.delete(row.id);
        this.wake();
      });
    this.inFlight.set(row.id, { targetId: row.target_id, controller, done });
  }

  private target(row: DueRow): { url: string; secret: string } | string {
    const t = row.target_type === "integration" ? this.s.integration.get(row.target_id) : this.s.plugin.get(row.target_id);
    if (!t) return `the ${row.target_type} was deleted`;
    if (!t.url) return `the ${row.target_type} has no callback URL`;
    // Turned off after the row was written: a person's "stop" wins over pending retries.
    if (!t.enabled) return `the ${row.target_type} is disabled`;
    if (t.gone) return "callbacks of the integration are off since the receiver answered 410 Gone; set its callbackUrl again";
    return { url: t.url, secret: this.core.sealer.open(t.secret_sealed) };
  }

  private async send(row: DueRow, stop: AbortSignal): Promise<Outcome> {
    const target = this.target(row);
    if (typeof target === "string") return { kind: "failed", code: null, error: target, latencyMs: null };
    const allowPrivate = this.core.config.allowPrivateCallbacks;
    const timeoutMs = this.core.config.callbacks.timeoutMs;
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    try {
      const url = checkTargetUrl(target.url, allowPrivate);
      const addresses = await resolveTarget(url, allowPrivate);
      const signal = AbortSignal.any([stop, AbortSignal.timeout(timeoutMs)]);
      const res = await this.post(url, addresses, signal, {
        "content-type": "application/json",
        "user-agent": `ao/${VERSION}`,
        "x-svc-signature": signSvc(target.secret, row.payload),
        "x-svc-delivery": row.id,
        "x-svc-event": row.event,
      }, row.payload);
      const latencyMs = elapsed();
      void res.body?.cancel().catch(() => {});
      if (res.status >= 200 && res.status < 300) return { kind: "succeeded", code: res.status, latencyMs };
      if (res.status === 410) return { kind: "failed", code: 410, error: "the receiver answered 410 Gone: callbacks to it are disabled", latencyMs, disableTarget: true };
      const error = res.status >= 300 && res.status < 400 ? `redirect to ${res.headers.get("location") ?? "?"} not followed` : `HTTP ${res.status}`;
      return { kind: "retry", code: res.status, error, latencyMs, retryAfterMs: retryAfterMs(res.headers.get("retry-after")) };
    } catch (err) {
      if (stop.aborted) return { kind: "interrupted" };
      if (err instanceof TargetRefused) return { kind: "failed", code: null, error: err.message, latencyMs: null };
      const timedOut = (err as Error)?.name === "TimeoutError";
      const error = timedOut ? `timed out after ${timeoutMs} ms` : String((err as Error)?.message ?? err);
      return { kind: "retry", code: null, error, latencyMs: timedOut ? elapsed() : null };
    }
  }

  /**
   * POSTs to the checked addresses themselves (never a second DNS answer), trying the next one
   * when a connection cannot be made. The Host header and TLS server name stay the URL's.
   */
  private async post(url: URL, addresses: { address: string; family: 4 | 6 }[], signal: AbortSignal, headers: Record<string, string>, body: string) {
    let lastError: unknown;
    for (const { address, family } of addresses) {
      const pinned = new URL(url);
      pinned.hostname = family === 6 ? `[${address}]` : address;
      try {
        return await fetch(pinned, {
          method: "POST",
          headers: { ...headers, host: url.host },
          body,
          redirect: "manual",
          signal,
          // Certificates are checked against the URL's name, not the address connected to.
          ...(url.protocol === "https:" && !isIP(url.hostname) ? { tls: { serverName: url.hostname } } : {}),
        } as RequestInit);
      } catch (err) {
        if (signal.aborted) throw err;
        lastError = err;
      }
    }
    throw lastError;
  }

  /**
   * The try's result must reach the row, or the row would stay "delivering" until a restart: a
   * busy or locked database delays the write (retried every second), never ends the relay. If
   * the relay stops first, the row stays "delivering" and the next start sends it again with
   * the same id (at least once).
   */
  private async recordUntilWritten(row: DueRow, outcome: Outcome, stop: AbortSignal) {
    for (;;) {
      try {
        this.record(row, outcome);
        return;
      } catch (err) {
        if (this.stopped) {
          this.core.log.warn("callback relay stopped before it could record a try; the next start sends it again", { deliveryId: row.id, error: String(err) });
          return;
        }
        this.core.log.warn("callback relay could not record a try; retrying", { deliveryId: row.id, error: String(err) });
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, POLL_MS);
          stop.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
        });
      }
    }
  }

  private record(row: DueRow, outcome: Outcome) {
    const nowMs = Date.now();
    const now = iso(nowMs);
    const s = this.s;
    // The delivery row and its try are written together, so the log never disagrees with the count.
    const write = (result: TryOutcome, code: number | null, error: string | null, latencyMs: number | null, deliveredAt: string | null, nextAt: number) => {
      const updated = s.record.get(result === "retrying" ? "pending" : result, code, error, latencyMs, now, deliveredAt, nextAt, now, row.id);
      if (!updated) return; // the delivery went with its org meanwhile
      const { attempts } = updated;
      s.insertTry.run(row.id, attempts, now, result, code, error, latencyMs);
      s.pruneTries.run(row.id, attempts - DELIVERY_TRIES_KEPT);
    };
    switch (outcome.kind) {
      case "interrupted":
        // Stopped mid-send: not counted; the next start sends it again with the same id.
        s.backToPending.run(now, row.id);
        return;
      case "succeeded":
        this.core.sqlite.transaction(() => write("succeeded", outcome.code, null, outcome.latencyMs, now, nowMs)).immediate();
        this.core.metrics.callbacks.inc({ outcome: "delivered" });
        return;
      case "failed":
        this.core.sqlite
          .transaction(() => {
            write("failed", outcome.code, outcome.error, outcome.latencyMs, null, nowMs);
            if (outcome.disableTarget) {
              if (row.target_type === "integration") s.disableIntegration.run(now, row.target_id);
              else s.disablePlugin.run(now, row.target_id);
              s.failPending.run("not sent: the receiver answered 410 Gone to an earlier callback", now, row.target_id);
            }
          })
          .immediate();
        this.core.metrics.callbacks.inc({ outcome: "failed" });
        return;
      case "retry": {
        const delays = this.core.config.callbacks.retryDelaysMs;
        const tried = row.round_attempts + 1;
        if (tried > delays.length) {
          const error = `${outcome.error ?? "failed"}; gave up after ${tried} tries`;
          this.core.sqlite.transaction(() => write("failed", outcome.code, error, outcome.latencyMs, null, nowMs)).immediate();
          this.core.metrics.callbacks.inc({ outcome: "failed" });
          return;
        }
        // ±20% jitter spreads retries of many callbacks that failed together.
        const delay = Math.max(delays[tried - 1] * (0.8 + Math.random() * 0.4), outcome.retryAfterMs ?? 0);
        this.core.sqlite.transaction(() => write("retrying", outcome.code, outcome.error, outcome.latencyMs, null, Math.round(nowMs + delay))).immediate();
        this.core.metrics.callbacks.inc({ outcome: "retrying" });
        return;
      }
    }
  }
}

const relays = new WeakMap<Core, Relay>();

/** The relay of a server instance, once its module has started it. */
export function relayOf(core: Core): Relay | undefined {
  return relays.get(core);
}

/** Creates and starts the relay of this core (once); stopped by core.onClose. */
export function startRelay(core: Core): Relay {
  let relay = relays.get(core);
  if (relay) return relay;
  relay = new Relay(core);
  relays.set(core, relay);
  const r = relay;
  core.onClose.push(() => r.stop());
  r.start();
  return r;
}
