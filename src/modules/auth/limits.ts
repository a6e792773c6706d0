// SPEC §4 rate limits: failures only (wrong password or code, unknown user, unknown user or
// pairing code). Successful requests never count. Other features (worker pairing) use the same guard.
// An account's failures are counted from every address together, as the SPEC has it: guesses
// spread over many addresses stop at 10 as from one. The price is that a stranger who knows an
// email can hold its sign-in for 15 minutes (an account limited per address instead, as ao did
// before, let 100 guesses through from ten addresses).
import type { Core } from "../../server/core";
import { FailureWindow } from "../../lib/ratelimit";
import { rateLimited } from "../../server/errors";

const WINDOW_MS = 15 * 60 * 1000;
export const FAILURES_PER_ACCOUNT = 10;
export const FAILURES_PER_ADDRESS = 100;

/**
 * What failed: signing in (passwords and second-factor codes), or a signed-in person's decision on
 * a device sign-in or worker pairing code. Each has its own account counters, so mistyped user codes
 * never lock the person's sign-in (nor wrong passwords their approvals); the address counter is shared.
 */
export type FailureKind = "sign_in" | "code_decision";

/** Who failed: the account (see accountOf) and the client address. */
export interface FailureSubject {
  account?: string | null;
  ip?: string | null;
  kind?: FailureKind;
}

export class FailureGuard {
  private readonly accounts = new FailureWindow({ limit: FAILURES_PER_ACCOUNT, windowMs: WINDOW_MS });
  private readonly addresses = new FailureWindow({ limit: FAILURES_PER_ADDRESS, windowMs: WINDOW_MS });

  /** Throws 429 rate_limited (with Retry-After) when the account or the address used up its failures. */
  check(subject: FailureSubject) {
    const account = accountKey(subject);
    const wait = Math.max(account ? this.accounts.retryAfterSec(account) : 0, subject.ip ? this.addresses.retryAfterSec(subject.ip) : 0);
    if (wait > 0) throw rateLimited(wait);
  }

  fail(subject: FailureSubject) {
    const account = accountKey(subject);
    if (account) this.accounts.record(account);
    if (subject.ip) this.addresses.record(subject.ip);
  }
}

const accountKey = (subject: FailureSubject): string | null => (subject.account ? `${subject.kind ?? "sign_in"}:${subject.account.trim().toLowerCase()}` : null);

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
