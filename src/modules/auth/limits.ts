// SPEC §4 rate limits: failures only (wrong password or code, unknown user, unknown user or
// pairing code). Successful requests never count. Other features (worker pairing) use the same guard.
// An account's failures are counted from every address together, as the SPEC has it: guesses
// spread over many addresses stop at 10 as from one. The price is that a stranger who knows an
// email can hold its sign-in for 15 minutes (an account limited per address instead, as ao did
// before, let 100 guesses through from ten addresses).
// With several servers (PostgreSQL) each failure is also told to the others on the bus, which count
// it too: guesses spread over the servers stop at 10 as on one. The counters are keyed by a hash
// of the account and address, so the bus carries neither emails nor addresses.
import type { Core } from "../../server/core";
import type { Bus } from "../../server/bus";
import { FailureWindow } from "../../lib/ratelimit";
import { sha256Hex } from "../../lib/tokens";
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

/** The bus channel on which a server tells the others of a failure. */
const FAILED = "auth.failed";

export class FailureGuard {
  private readonly accounts = new FailureWindow({ limit: FAILURES_PER_ACCOUNT, windowMs: WINDOW_MS });
  private readonly addresses = new FailureWindow({ limit: FAILURES_PER_ADDRESS, windowMs: WINDOW_MS });

  /** `peers`: the other servers of the service, told of each failure and heard from (none on SQLite). */
  constructor(private readonly peers: { bus: Bus; instanceId: string } | null = null) {
    peers?.bus.on(FAILED, ({ from, account, address }: { from: unknown; account: unknown; address: unknown }) => {
      if (from === peers.instanceId) return;
      if (typeof account === "string") this.accounts.record(account);
      if (typeof address === "string") this.addresses.record(address);
    });
  }

  /** Throws 429 rate_limited (with Retry-After) when the account or the address used up its failures. */
  check(subject: FailureSubject) {
    const account = accountKey(subject);
    const address = addressKey(subject);
    const wait = Math.max(account ? this.accounts.retryAfterSec(account) : 0, address ? this.addresses.retryAfterSec(address) : 0);
    if (wait > 0) throw rateLimited(wait);
  }

  fail(subject: FailureSubject) {
    const account = accountKey(subject);
    const address = addressKey(subject);
    if (account) this.accounts.record(account);
    if (address) this.addresses.record(address);
    this.peers?.bus.publish(FAILED, { from: this.peers.instanceId, account, address });
  }
}

const accountKey = (subject: FailureSubject): string | null =>
  subject.account ? sha256Hex(`${subject.kind ?? "sign_in"}:${subject.account.trim().toLowerCase()}`) : null;
const addressKey = (subject: FailureSubject): string | null => (subject.ip ? sha256Hex(`ip:${subject.ip}`) : null);

/** The account key: the user id when the account exists, else the email that was tried. */
export const accountOf = (user: { id: string } | null | undefined, email?: string) => user?.id ?? `email:${email ?? ""}`;

const guards = new WeakMap<Core, FailureGuard>();

/** The failure counters of one server instance (told to and by the other servers on PostgreSQL). */
export function failureGuard(core: Core): FailureGuard {
  let g = guards.get(core);
  if (!g) guards.set(core, (g = new FailureGuard(core.sqlite === null ? core : null)));
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
