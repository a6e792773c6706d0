// Encryption at rest for secrets the server must read back in clear (TOTP seeds,
// integration secrets): AES-256-GCM with a key derived from the data directory's key.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

export class Sealer {
  private readonly key: Buffer;

  constructor(masterKey: Uint8Array) {
    this.key = Buffer.from(hkdfSync("sha256", masterKey, new Uint8Array(0), "ao seal v1", 32));
  }

  seal(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return ["v1", iv.toString("base64url"), body.toString("base64url"), cipher.getAuthTag().toString("base64url")].join(".");
  }

  open(sealed: string): string {
    const [version, iv, body, tag] = sealed.split(".");
    if (version !== "v1" || !iv || !body || tag === undefined) throw new Error("sealed value has an unknown format");
    const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv, "base64url"));
    decipher.setAuthTag(Buffer.from(tag, "base64url"));
    return Buffer.concat([decipher.update(Buffer.from(body, "base64url")), decipher.final()]).toString("utf8");
  }
}

export function deriveKey(masterKey: Uint8Array, purpose: string): Uint8Array {
  return new Uint8Array(hkdfSync("sha256", masterKey, new Uint8Array(0), purpose, 32));
}
