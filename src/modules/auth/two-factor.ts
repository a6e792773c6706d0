// TOTP two-factor authentication (RFC 6238 with otplib) and single-use recovery codes.
// The seed is sealed at rest; a time step is accepted once (users.totp_last_step).
import { and, eq, isNull } from "drizzle-orm";
import { generateSecret, generateURI, verify } from "otplib";
import type { Core } from "../../server/core";
import { recoveryCodes, users } from "../../db/schema";
import { ApiError, conflict } from "../../server/errors";
import { iso } from "../../lib/time";
import { sha256Hex } from "../../lib/tokens";
import { failureGuard } from "./limits";
import { getUser, type UserRow } from "./users";
import { exec, rows, run, type Q } from "../../db/query";

const ISSUER = "ao";
const RECOVERY_CODE_COUNT = 10;
const RECOVERY_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz";
/** One step of clock drift either way is accepted, as authenticator apps drift. */
const TOLERANCE_SEC = 30;

export const invalidCode = (status = 401) => new ApiError(status, "invalid_two_factor_code", "the two-factor code is wrong or was already used");

/** Starts (or restarts) enrolment: a new secret, stored sealed, not yet enforced at login. */
export function* setupTwoFactor(core: Core, user: UserRow): Q<{ secret: string; otpauthUrl: string }> {
  if (user.totpEnabled) throw conflict("two-factor authentication is already enabled; disable it first");
  const secret = generateSecret();
  yield* exec(core.db.update(users).set({ totpSecretSealed: core.sealer.seal(secret), totpLastStep: 0, updatedAt: iso() }).where(eq(users.id, user.id)));
  return { secret, otpauthUrl: generateURI({ issuer: ISSUER, label: user.email, secret }) };
}

/** Confirms enrolment with a current code; returns the recovery codes (shown once, stored hashed). */
export async function enableTwoFactor(core: Core, user: UserRow, code: string, ip: string | null): Promise<string[]> {
  if (user.totpEnabled) throw conflict("two-factor authentication is already enabled");
  if (!user.totpSecretSealed) throw conflict("call POST /me/2fa/setup first");
  await guarded(core, user, ip, () => acceptTotp(core, user, code));
  const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
  await core.store.write(turnOn(core, user.id, codes));
  return codes;
}

function* turnOn(core: Core, userId: string, codes: string[]): Q<void> {
  yield* exec(core.db.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)));
  yield* exec(core.db.insert(recoveryCodes).values(codes.map((c) => ({ userId, codeHash: hashRecoveryCode(c) }))));
  yield* exec(core.db.update(users).set({ totpEnabled: true, updatedAt: iso() }).where(eq(users.id, userId)));
}

/** Turns two-factor off; needs a current code or an unused recovery code. */
export async function disableTwoFactor(core: Core, user: UserRow, code: string, ip: string | null) {
  if (!user.totpEnabled) throw conflict("two-factor authentication is not enabled");
  await guarded(core, user, ip, () => checkSecondFactor(core, user, code));
  await core.store.write(turnOff(core, user.id));
}

function* turnOff(core: Core, userId: string): Q<void> {
  yield* exec(core.db.delete(recoveryCodes).where(eq(recoveryCodes.userId, userId)));
  yield* exec(core.db.update(users).set({ totpEnabled: false, totpSecretSealed: null, totpLastStep: 0, updatedAt: iso() }).where(eq(users.id, userId)));
}

// In a signed-in session a wrong code is 400, not 401: a 401 would tell the web app its session ended.
async function guarded(core: Core, user: UserRow, ip: string | null, check: () => Promise<boolean>) {
  const guard = failureGuard(core);
  const subject = { account: user.id, ip };
  guard.check(subject);
  if (!(await check())) {
    guard.fail(subject);
    throw invalidCode(400);
  }
}

/** A six-digit code is a TOTP code; anything else is tried as a recovery code. Each works once. */
export async function checkSecondFactor(core: Core, user: UserRow, code: string): Promise<boolean> {
  const trimmed = code.trim();
  if (/^\d{6}$/.test(trimmed)) return acceptTotp(core, user, trimmed);
  return core.store.write(useRecoveryCode(core, user.id, trimmed));
}

// Claims the step atomically: of two requests with the same code, only one moves the step forward.
const CLAIM_STEP = "UPDATE users SET totp_last_step = ? WHERE id = ? AND totp_last_step < ?";

async function acceptTotp(core: Core, user: UserRow, code: string): Promise<boolean> {
  const fresh = await core.store.read(getUser(core, user.id));
  if (!fresh?.totpSecretSealed || !/^\d{6}$/.test(code.trim())) return false;
  const secret = core.sealer.open(fresh.totpSecretSealed);
  const result = await verify({ secret, token: code.trim(), epochTolerance: TOLERANCE_SEC, afterTimeStep: fresh.totpLastStep });
  if (!result.valid || !("timeStep" in result)) return false;
  const claimed = await core.store.write(run(CLAIM_STEP, result.timeStep, user.id, result.timeStep));
  return claimed.changes === 1;
}

function* useRecoveryCode(core: Core, userId: string, code: string): Q<boolean> {
  const normalised = code.toLowerCase().replace(/[\s-]/g, "");
  if (!/^[0-9a-z]{10}$/.test(normalised)) return false;
  const used = yield* rows(
    core.db
      .update(recoveryCodes)
      .set({ usedAt: iso() })
      .where(and(eq(recoveryCodes.userId, userId), eq(recoveryCodes.codeHash, hashRecoveryCode(normalised)), isNull(recoveryCodes.usedAt)))
      .returning({ userId: recoveryCodes.userId }),
  );
  return used.length === 1;
}

const hashRecoveryCode = (code: string) => sha256Hex(code.toLowerCase().replace(/[\s-]/g, ""));

/** Ten characters of a 32-letter alphabet (50 bits), shown as xxxxx-xxxxx. */
function newRecoveryCode(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(10));
  let s = "";
  for (const b of bytes) s += RECOVERY_ALPHABET[b & 31];
  return `${s.slice(0, 5)}-${s.slice(5)}`;
}
