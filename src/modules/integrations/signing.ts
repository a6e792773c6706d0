// Signature formats of inbound deliveries and outbound callbacks (SPEC §9). Every comparison is
// constant-time; a header that does not have the expected shape fails like a wrong signature.
import { createHmac, timingSafeEqual } from "node:crypto";
import { constantTimeEqual } from "../../lib/tokens";

/** Signed JSON deliveries (and our callbacks) may be at most this far from the server's clock. */
export const SIGNATURE_TOLERANCE_SEC = 300;

function hmacHex(secret: string, ...parts: (string | Uint8Array)[]): string {
  const h = createHmac("sha256", secret);
  for (const p of parts) h.update(p);
  return h.digest("hex");
}

function equalHex(expected: string, given: string): boolean {
  if (!/^[0-9a-f]{64}$/i.test(given)) {
    timingSafeEqual(Buffer.from(expected), Buffer.from(expected));
    return false;
  }
  return timingSafeEqual(Buffer.from(expected, "hex"), Buffer.from(given, "hex"));
}

/** GitHub: `X-Hub-Signature-256: sha256=<hex HMAC-SHA256(secret, body)>`. */
export function verifyGithub(secret: string, raw: Uint8Array, header: string | null): boolean {
  const expected = hmacHex(secret, raw);
  const given = header?.startsWith("sha256=") ? header.slice(7) : "";
  return equalHex(expected, given);
}

/** GitLab: `X-Gitlab-Token` is the secret itself. */
export function verifyGitlab(secret: string, header: string | null): boolean {
  return constantTimeEqual(secret, header ?? "");
}

/** `signature` is the v1 value that matched, lowercased: the identity of one signed request. */
export type SvcVerdict = { ok: true; timestamp: number; signature: string } | { ok: false; stale: boolean; reason: string };

/** `X-Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` (several v1 allowed). */
export function verifySvc(secret: string, raw: Uint8Array, header: string | null, nowSec = Math.floor(Date.now() / 1000)): SvcVerdict {
  let t: string | null = null;
  const v1: string[] = [];
  for (const part of (header ?? "").split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === "t") t = value;
    else if (key === "v1") v1.push(value);
  }
  if (t === null || !/^\d{1,12}$/.test(t) || v1.length === 0) {
    hmacHex(secret, "0.", raw); // same work as a well-formed header
    return { ok: false, stale: false, reason: "the X-Svc-Signature header must be 't=<unix seconds>,v1=<hex hmac>'" };
  }
  const expected = hmacHex(secret, `${t}.`, raw);
  let match: string | null = null;
  for (const candidate of v1) if (equalHex(expected, candidate)) match ??= candidate.toLowerCase();
  if (match === null) return { ok: false, stale: false, reason: "the signature does not match" };
  const timestamp = Number(t);
  if (Math.abs(nowSec - timestamp) > SIGNATURE_TOLERANCE_SEC) {
    return { ok: false, stale: true, reason: `the signature timestamp is more than ${SIGNATURE_TOLERANCE_SEC} s away from the server's clock` };
  }
  return { ok: true, timestamp, signature: match };
}

/** The X-Svc-Signature value for an outbound body. */
export function signSvc(secret: string, body: string, nowSec = Math.floor(Date.now() / 1000)): string {
  return `t=${nowSec},v1=${hmacHex(secret, `${nowSec}.`, body)}`;
}
