// SPEC §4 rate limits: failures only (wrong password or code, unknown user, unknown user or
// pairing code), at most 10 per account and 100 per client address in 15 minutes.
// Successful requests never count. Other features (worker pairing) use the same guard.
import type { Core } from "../../server/core";
import { FailureWindow } from "../../lib/ratelimit";
import { rateLimited } from "../../server/errors";

const WINDOW_MS = 15 * 60 * 1000;
export const FAILURES_PER_ACCOUNT = 10;
export const FAILURES_PER_ADDRESS = 100;

/** Who failed: the account (see accountOf) and the client address. */
export interface FailureSubject {
  account?: string | null;
  ip?: string | null;
}

export class FailureGuard {
  private readonly accounts = new FailureWindow({ limit: FAILURES_PER_ACCOUNT, windowMs: WINDOW_MS });
  private readonly addresses = new FailureWindow({ limit: FAILURES_PER_ADDRESS, windowMs: WINDOW_MS });

  /** Throws 429 rate_limited (with Retry-After) when the account or the address used up its failures. */
  check(subject: FailureSubject) {
    const wait = Math.max(
      subject.account ? this.accounts.retryAfterSec(accountKey(subject.account)) : 0,
      subject.ip ? this.addresses.retryAfterSec(subject.ip) : 0,
    );
    if (wait > 0) throw rateLimited(wait);
  }

  fail(subject: FailureSubject) {
    if (subject.account) this.accounts.record(accountKey(subject.account));
    if (subject.ip) this.addresses.record(subject.ip);
  }
}

const accountKey = (account: string) => account.trim().toLowerCase();

/** The account key: the user id when the account exists, else the email that was tried. */
export const accountOf = (user: { id: string } | null | undefined, email?: string) => user?.id ?? `email:${email ?? ""}`;

const guards = new WeakMap<Core, FailureGuard>();

/** The failure counters of one server instance. */
export function failureGuard(core: Core): FailureGuard {
  let g = guards.get(core);
  if (!g) guards.set(core, (g = new FailureGuard()));
  return g;
}

/** Checks the limit, runs `fn`, and counts a failure when it throws an error with one of `codes`. */
export async function countingFailures<T>(core: Core, subject: FailureSubject, codes: readonly string[], fn: () => Promise<T> | T): Promise<T> {
  const guard = failureGuard(core);
  guard.check(subject);
  try {
    return await fn();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (typeof code === "string" && codes.includes(code)) guard.fail(subject);
    throw err;
  }
}
