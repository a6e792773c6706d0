// The in-process relay: sends the outbox's due rows, signed, and records each try. Woken right
// after a commit that wrote rows (and polled every second as a safety net). Only 2xx is success;
// redirects are not followed; 410 disables the target; Retry-After is honoured. Every server
// runs a relay: a try is claimed for a while (claimMs) by the relay that sends it, and a claim
// that ran out (its server died mid-send) is taken over by any relay (at-least-once, with a
// stable delivery id). With SQLite there is one server, so a start takes back every claim at once.
import { isIP } from "node:net";
import type { Core } from "../../server/core";
import { iso } from "../../lib/time";
import { VERSION } from "../../version";
import { checkTargetUrl, resolveTarget, TargetRefused } from "./netguard";
import { signSvc } from "./signing";
import { all, get, run, type Q } from "../../db/query";

interface DueRow {
  id: string;
  /** This relay's claim of the try (set when claimed). */
  claim: string;
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

/** What a try may take beyond its request's timeout: reading the target, DNS, recording the result. */
const CLAIM_MARGIN_MS = 30_000;

// SQLite: one server, so at its start nothing else sends; every row in flight was left by a crash.
const RECOVER = "UPDATE deliveries SET status = 'pending', claim = NULL, next_attempt_at = ?, updated_at = ? WHERE status = 'delivering'";
// While a row is delivering, next_attempt_at is when its claim runs out: past it, the relay that
// claimed it is taken as dead (it would have recorded its try by then) and the row is due again.
const EXPIRED = "UPDATE deliveries SET status = 'pending', claim = NULL, updated_at = ? WHERE status = 'delivering' AND next_attempt_at <= ?";
// The second parameter is a JSON list of targets that have IN_FLIGHT.perTarget callbacks in flight.
const DUE = `SELECT id, '' AS claim, target_type, target_id, event, payload, round_attempts FROM deliveries
  WHERE status = 'pending' AND next_attempt_at <= ? AND target_id NOT IN (SELECT value FROM json_each(?))
  ORDER BY next_attempt_at LIMIT ?`;
// Only a row still pending is taken: two relays (two servers) never send the same try.
const CLAIM = "UPDATE deliveries SET status = 'delivering', claim = ?, next_attempt_at = ?, updated_at = ? WHERE id = ? AND status = 'pending'";
const NEXT_DUE = "SELECT MIN(next_attempt_at) AS next_at FROM deliveries WHERE status = 'pending' AND target_id NOT IN (SELECT value FROM json_each(?))";
const INTEGRATION = `SELECT callback_url AS url, secret_sealed, enabled, CASE WHEN callback_disabled_at IS NULL THEN 0 ELSE 1 END AS gone
  FROM integrations WHERE id = ?`;
const PLUGIN = "SELECT url, secret_sealed, enabled, 0 AS gone FROM plugins WHERE id = ?";
// Only under the claim: a relay whose claim ran out and was taken over leaves the row to the new one.
const RECORD = `UPDATE deliveries SET status = ?, claim = NULL, attempts = attempts + 1, round_attempts = round_attempts + 1, last_status_code = ?, last_error = ?,
  last_latency_ms = ?, last_attempt_at = ?, delivered_at = ?, next_attempt_at = ?, updated_at = ? WHERE id = ? AND claim = ? RETURNING attempts`;
const INSERT_TRY = "INSERT INTO delivery_tries (delivery_id, attempt, at, outcome, status_code, error, latency_ms) VALUES (?, ?, ?, ?, ?, ?, ?)";
const PRUNE_TRIES = "DELETE FROM delivery_tries WHERE delivery_id = ? AND attempt <= ?";
const BACK_TO_PENDING = "UPDATE deliveries SET status = 'pending', claim = NULL, next_attempt_at = ?, updated_at = ? WHERE id = ? AND claim = ?";
const DISABLE_INTEGRATION = "UPDATE integrations SET callback_disabled_at = ?, updated_at = ? WHERE id = ?";
const DISABLE_PLUGIN = "UPDATE plugins SET enabled = 0, updated_at = ? WHERE id = ?";
const FAIL_PENDING = "UPDATE deliveries SET status = 'failed', last_error = ?, updated_at = ? WHERE target_id = ? AND status = 'pending'";

/** `Retry-After` as milliseconds: delta seconds or an HTTP date. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const trimmed = value.trim();
  const ms = /^\d+$/.test(trimmed) ? Number(trimmed) * 1000 : Date.parse(trimmed) - now;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

export class Relay {
  private timer: ReturnType<typeof setTimeout> | null = null;
  private timerDue = Infinity;
  private stopped = false;
  private recovered = false;
  /** The pass under way, and whether a wake came meanwhile (passes never overlap: slots are counted in memory). */
  private passing: Promise<void> | null = null;
  private again = false;
  private readonly inFlight = new Map<string, { targetId: string; controller: AbortController; done: Promise<void> }>();

  constructor(private readonly core: Core) {}

  /** On SQLite the first pass makes rows a crash left in flight due again (in a tick, so a locked database delays it, never stops startup). */
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
    // A pass may be claiming rows: let it launch them, so that they are interrupted below like the rest.
    await this.passing;
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
      this.pass();
    }, ms);
  }

  private pass() {
    if (this.passing) {
      this.again = true;
      return;
    }
    this.passing = this.tick()
      .catch((err) => this.core.log.error("callback relay pass failed", { error: String(err) }))
      .finally(() => {
        this.passing = null;
        if (this.again) {
          this.again = false;
          this.wake();
        }
      });
  }

  private async tick() {
    if (this.stopped) return;
    try {
      if (!this.recovered && this.core.store.dialect === "sqlite") await this.core.store.write(run(RECOVER, Date.now(), iso()));
      this.recovered = true;
      await this.claimAndLaunch();
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

  /** How long a claim holds: a live relay records its try well within it. */
  private claimMs(): number {
    const { timeoutMs, claimMs } = this.core.config.callbacks;
    return claimMs ?? timeoutMs + CLAIM_MARGIN_MS;
  }

  /** Claims up to `free` due rows, at most IN_FLIGHT.perTarget in flight per target. */
  private *claim(free: number): Q<DueRow[]> {
    // Read here, once the write has its turn: a wait for the writers' lock does not eat into the claims.
    const now = Date.now();
    if (free > 0) yield* run(EXPIRED, iso(now), now);
    // Read more than the free slots: some rows may belong to a target that fills up in this pass.
    const counts = this.perTarget();
    const chosen: DueRow[] = [];
    for (const row of yield* all<DueRow>(DUE, now, this.saturated(counts), free * IN_FLIGHT.perTarget)) {
      const n = counts.get(row.target_id) ?? 0;
      if (n >= IN_FLIGHT.perTarget) continue;
      const claim = crypto.randomUUID();
      if ((yield* run(CLAIM, claim, now + this.claimMs(), iso(now), row.id)).changes !== 1) continue; // another relay took it
      counts.set(row.target_id, n + 1);
      chosen.push({ ...row, claim });
      if (chosen.length === free) break;
    }
    return chosen;
  }

  private async claimAndLaunch() {
    const free = IN_FLIGHT.total - this.inFlight.size;
    if (free > 0) {
      const claimed = await this.core.store.write(this.claim(free));
      for (const row of claimed) this.launch(row);
    }
    // When every slot is busy, a finishing send wakes the relay; so it does for a full target.
    if (this.inFlight.size >= IN_FLIGHT.total) return;
    const next = (await this.core.store.read(get<{ next_at: number | null }>(NEXT_DUE, this.saturated())))?.next_at ?? null;
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

  private *target(row: DueRow): Q<{ url: string; secret: string } | string> {
    const t = yield* get<TargetRow>(row.target_type === "integration" ? INTEGRATION : PLUGIN, row.target_id);
    if (!t) return `the ${row.target_type} was deleted`;
    if (!t.url) return `the ${row.target_type} has no callback URL`;
    // Turned off after the row was written: a person's "stop" wins over pending retries.
    if (!t.enabled) return `the ${row.target_type} is disabled`;
    if (t.gone) return "callbacks of the integration are off since the receiver answered 410 Gone; set its callbackUrl again";
    return { url: t.url, secret: this.core.sealer.open(t.secret_sealed) };
  }

  private async send(row: DueRow, stop: AbortSignal): Promise<Outcome> {
    const target = await this.core.store.read(this.target(row));
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
   * The try's result must reach the row, or the row would stay "delivering" until its claim runs
   * out: a busy or locked database delays the write (retried every second), never ends the relay.
   * If the relay stops first, the row stays "delivering" and is sent again with the same id (at
   * least once) by the next start (SQLite) or by any relay once the claim ran out.
   */
  private async recordUntilWritten(row: DueRow, outcome: Outcome, stop: AbortSignal) {
    for (;;) {
      try {
        const counted = await this.core.store.write(this.record(row, outcome));
        if (counted) this.core.metrics.callbacks.inc({ outcome: counted });
        return;
      } catch (err) {
        if (this.stopped) {
          this.core.log.warn("callback relay stopped before it could record a try; it is sent again", { deliveryId: row.id, error: String(err) });
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

  /**
   * Writes a try's result in one transaction (the delivery row and its try together, so the log
   * never disagrees with the count); returns the outcome the metrics count, if any.
   */
  private *record(row: DueRow, outcome: Outcome): Q<"delivered" | "failed" | "retrying" | null> {
    const nowMs = Date.now();
    const now = iso(nowMs);
    const write = function* (result: TryOutcome, code: number | null, error: string | null, latencyMs: number | null, deliveredAt: string | null, nextAt: number): Q<boolean> {
      const updated = yield* get<{ attempts: number }>(RECORD, result === "retrying" ? "pending" : result, code, error, latencyMs, now, deliveredAt, nextAt, now, row.id, row.claim);
      // The delivery went with its org meanwhile, or the claim ran out and another relay has it.
      if (!updated) return false;
      const { attempts } = updated;
      yield* run(INSERT_TRY, row.id, attempts, now, result, code, error, latencyMs);
      yield* run(PRUNE_TRIES, row.id, attempts - DELIVERY_TRIES_KEPT);
      return true;
    };
    switch (outcome.kind) {
      case "interrupted":
        // Stopped mid-send: not counted; due again at once, with the same id, for any relay.
        yield* run(BACK_TO_PENDING, nowMs, now, row.id, row.claim);
        return null;
      case "succeeded":
        return (yield* write("succeeded", outcome.code, null, outcome.latencyMs, now, nowMs)) ? "delivered" : null;
      case "failed":
        if (!(yield* write("failed", outcome.code, outcome.error, outcome.latencyMs, null, nowMs))) return null;
        if (outcome.disableTarget) {
          if (row.target_type === "integration") yield* run(DISABLE_INTEGRATION, now, now, row.target_id);
          else yield* run(DISABLE_PLUGIN, now, row.target_id);
          yield* run(FAIL_PENDING, "not sent: the receiver answered 410 Gone to an earlier callback", now, row.target_id);
        }
        return "failed";
      case "retry": {
        const delays = this.core.config.callbacks.retryDelaysMs;
        const tried = row.round_attempts + 1;
        if (tried > delays.length) {
          return (yield* write("failed", outcome.code, `${outcome.error ?? "failed"}; gave up after ${tried} tries`, outcome.latencyMs, null, nowMs)) ? "failed" : null;
        }
        // ±20% jitter spreads retries of many callbacks that failed together.
        const delay = Math.max(delays[tried - 1] * (0.8 + Math.random() * 0.4), outcome.retryAfterMs ?? 0);
        return (yield* write("retrying", outcome.code, outcome.error, outcome.latencyMs, null, Math.round(nowMs + delay))) ? "retrying" : null;
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
