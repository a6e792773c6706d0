// Checks a GitHub App's JWT the way GitHub does: RS256 over the key GitHub issued, `iss` the
// app's id (or client id), `iat` not in the future, `exp` after now and at most ten minutes
// ahead. The messages are GitHub's own, so a client sees what it would see from github.com.
import { verify, type KeyObject } from "node:crypto";

export type JwtCheck = { ok: true; iss: string } | { ok: false; message: string };

const DRIFT_SECONDS = 60;

export function checkAppJwt(token: string, keyFor: (iss: string) => KeyObject | null, nowMs = Date.now()): JwtCheck {
  const parts = token.split(".");
  if (parts.length !== 3) return { ok: false, message: "A JSON web token could not be decoded" };
  let header: any, claims: any;
  try {
    header = JSON.parse(Buffer.from(parts[0]!, "base64url").toString());
    claims = JSON.parse(Buffer.from(parts[1]!, "base64url").toString());
  } catch {
    return { ok: false, message: "A JSON web token could not be decoded" };
  }
  if (header?.alg !== "RS256") return { ok: false, message: "A JSON web token could not be decoded" };
  const iss = claims?.iss === undefined ? "" : String(claims.iss);
  const key = iss ? keyFor(iss) : null;
  if (!key) return { ok: false, message: "'Issuer' claim ('iss') must be an Integer" };
  const signed = verify("RSA-SHA256", Buffer.from(`${parts[0]}.${parts[1]}`), key, Buffer.from(parts[2]!, "base64url"));
  if (!signed) return { ok: false, message: "A JSON web token could not be decoded" };
  const now = Math.floor(nowMs / 1000);
  if (!Number.isInteger(claims.iat) || claims.iat > now + DRIFT_SECONDS)
    return { ok: false, message: "'Issued at' claim ('iat') must be an Integer representing a time in the past" };
  if (!Number.isInteger(claims.exp)) return { ok: false, message: "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires" };
  if (claims.exp <= now) return { ok: false, message: "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires" };
  if (claims.exp > now + 600 + DRIFT_SECONDS || claims.exp - claims.iat > 600 + DRIFT_SECONDS)
    return { ok: false, message: "'Expiration time' claim ('exp') is too far in the future" };
  return { ok: true, iss };
}
