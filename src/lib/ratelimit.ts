// Counts failures per key in a sliding window. In memory on purpose: a restart forgetting them
// costs an attacker nothing they could not get by waiting. Several servers tell each other of
// their failures, and each counts all of them (modules/auth/limits.ts).

export interface FailureWindowOptions {
  /** Failures allowed per key inside the window; the next attempt is refused. */
  limit: number;
  windowMs: number;
}

export class FailureWindow {
  private readonly hits = new Map<string, number[]>();
  private writes = 0;

  constructor(private readonly options: FailureWindowOptions) {}

  /** Seconds until the key may try again, or 0 when it is under the limit. */
  retryAfterSec(key: string, now = Date.now()): number {
    const list = this.live(key, now);
    if (list.length < this.options.limit) return 0;
    // The attempt becomes possible again when enough old failures have left the window.
    const freeing = list[list.length - this.options.limit];
    return Math.max(1, Math.ceil((freeing + this.options.windowMs - now) / 1000));
  }

  record(key: string, now = Date.now()) {
    const list = this.live(key, now);
    list.push(now);
    // Keep no more than the limit: older entries no longer change the answer.
    if (list.length > this.options.limit) list.splice(0, list.length - this.options.limit);
    this.hits.set(key, list);
    if (++this.writes % 1000 === 0) this.sweep(now);
  }

  private live(key: string, now: number): number[] {
    const list = this.hits.get(key);
    if (!list) return [];
    const cutoff = now - this.options.windowMs;
    let i = 0;
    while (i < list.length && list[i] <= cutoff) i++;
    if (i > 0) list.splice(0, i);
    if (list.length === 0) this.hits.delete(key);
    return list;
  }

  /** Drops keys whose failures all left the window, so memory follows recent activity only. */
  private sweep(now: number) {
    const cutoff = now - this.options.windowMs;
    for (const [key, list] of this.hits) if (list[list.length - 1] <= cutoff) this.hits.delete(key);
  }
}
