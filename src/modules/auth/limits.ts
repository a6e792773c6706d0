// SPEC §4 rate limits: failures only (wrong password or code, unknown user, unknown user or
// pairing code). Successful requests never count. Other features (worker pairing) use the same guard.
// An account is limited per (account, address) pair and, higher, per account overall: a stranger
// who knows an email locks out their own address, not the owner signing in from theirs, while
// guesses spread over many addresses still stop at the account's overall limit.
import type { Core } from "../../server/core";
import { FailureWindow } from "../../lib/ratelimit";
import { rateLimited } from "../../server/errors";

const WINDOW_MS = 15 * 60 * 1000;
export const FAILURES_PER_ACCOUNT_AND_ADDRESS = 10;
export const FAILURES_PER_ACCOUNT = 100;
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
  private readonly pairs = new FailureWindow({ limit: FAILURES_PER_ACCOUNT_AND_ADDRESS, windowMs: WINDOW_MS });
  private readonly accounts = new FailureWindow({ limit: FAILURES_PER_ACCOUNT, windowMs: WINDOW_MS });
  private readonly addresses = new FailureWindow({ limit: FAILURES_PER_ADDRESS, windowMs: WINDOW_MS });

  /** Throws 429 rate_limited (with Retry-After) when the pair, the account or the address used up its failures. */
  check(subject: FailureSubject) {
    const keys = keysOf(subject);
    const wait = Math.max(
      keys.pair ? this.pairs.retryAfterSec(keys.pair) : 0,
      keys.account ? this.accounts.retryAfterSec(keys.account) : 0,
      subject.ip ? this.addresses.retryAfterSec(subject.ip) : 0,
    );
    if (wait > 0) throw rateLimited(wait);
  }

  fail(subject: FailureSubject) {
    const keys = keysOf(subject);
    if (keys.pair) this.pairs.record(keys.pair);
    if (keys.account) this.accounts.record(keys.account);
    if (subject.ip) this.addresses.record(subject.ip);
  }
}

function keysOf(subject: FailureSubject): { account: string | null; pair: string | null } {
  if (!subject.account) return { account: null, pair: null };
  const account = `${subject.kind ?? "sign_in"}:${subject.account.trim().toLowerCase()}`;
  return { account, pair: `${account}@${subject.ip ?? "unknown"}` };
}

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
