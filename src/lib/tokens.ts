// Secret values: random base62 bodies, checksummed prefixes, hashes for storage,
// constant-time comparison.
import { timingSafeEqual } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export function randomBase62(length: number): string {
  // Rejection sampling keeps every character uniformly likely.
  let out = "";
  while (out.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
    for (const b of bytes) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}

function base62Fixed(n: number, width: number): string {
  let out = "";
  for (let i = 0; i < width; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

function checksum(body: string): string {
  return base62Fixed(Bun.hash.crc32(body) >>> 0, 6);
}

/** `prefix` + 30 random base62 + 6-char base62 CRC32 of the random part. */
export function newChecksummedToken(prefix: "aot_" | "aow_"): string {
  const body = randomBase62(30);
  return prefix + body + checksum(body);
}

const SHAPE = /^(aot_|aow_)([0-9A-Za-z]{30})([0-9A-Za-z]{6})$/;

/** True when the value has the token shape and its checksum matches: no database read needed. */
export function isWellFormedToken(value: string, prefix: "aot_" | "aow_"): boolean {
  const m = SHAPE.exec(value);
  return !!m && m[1] === prefix && checksum(m[2]) === m[3];
}

export function sha256Hex(value: string): string {
  return new Bun.CryptoHasher("sha256").update(value).digest("hex");
}

export function constantTimeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  if (ab.length !== bb.length) {
    // Compare against itself so the time does not depend on where the lengths differ.
    timingSafeEqual(ab, ab);
    return false;
  }
  return timingSafeEqual(ab, bb);
}

/** A random opaque secret (refresh tokens, device codes, lease tokens). */
export function randomSecret(length = 43): string {
  return randomBase62(length);
}
