// Callback targets must not reach the server's own network (SSRF): loopback, link-local (cloud
// metadata), private and reserved ranges are refused unless the operator allows them. The check
// runs on the configured URL and again on the addresses the host name resolves to at delivery
// time, and the request is then sent to the address that was checked (no second lookup).
import { BlockList, isIP } from "node:net";
import { lookup } from "node:dns/promises";

const BLOCKED: [string, number, "ipv4" | "ipv6"][] = [
  ["0.0.0.0", 8, "ipv4"], // "this network", incl. 0.0.0.0
  ["10.0.0.0", 8, "ipv4"],
  ["100.64.0.0", 10, "ipv4"], // carrier-grade NAT (some clouds' metadata lives here)
  ["127.0.0.0", 8, "ipv4"],
  ["169.254.0.0", 16, "ipv4"], // link-local, incl. 169.254.169.254 cloud metadata
  ["172.16.0.0", 12, "ipv4"],
  ["192.0.0.0", 24, "ipv4"],
  ["192.168.0.0", 16, "ipv4"],
  ["198.18.0.0", 15, "ipv4"],
  ["224.0.0.0", 4, "ipv4"], // multicast
  ["240.0.0.0", 4, "ipv4"], // reserved, incl. broadcast
  ["::", 128, "ipv6"],
  ["::1", 128, "ipv6"],
  ["64:ff9b:1::", 48, "ipv6"], // local-use NAT64
  ["fc00::", 7, "ipv6"], // unique local, incl. fd00:ec2::254 metadata
  ["fe80::", 10, "ipv6"], // link-local
  ["fec0::", 10, "ipv6"], // site-local (deprecated)
  ["ff00::", 8, "ipv6"], // multicast
];

/**
 * IPv6 forms that carry an IPv4 address: NAT64 (a NAT64 gateway may reach private IPv4 networks),
 * 6to4, and the deprecated IPv4-compatible and IPv4-translated forms. Each is refused when the
 * IPv4 address inside is. (IPv4-mapped ::ffff:a.b.c.d is checked by BlockList itself.)
 */
const EMBEDDING: [(hex: string) => string, number][] = [
  [(hex) => `64:ff9b::${hex}`, 96],
  [(hex) => `::${hex}`, 96],
  [(hex) => `::ffff:0:${hex}`, 96],
  [(hex) => `2002:${hex}::`, 16],
];

const blockList = new BlockList();
for (const [net, prefix, family] of BLOCKED) {
  blockList.addSubnet(net, prefix, family);
  if (family !== "ipv4") continue;
  const [a, b, c, d] = net.split(".").map(Number);
  const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  for (const [form, at] of EMBEDDING) blockList.addSubnet(form(hex), at + prefix, "ipv6");
}

/** True when the literal IP address is loopback, link-local, private or reserved (IPv4-mapped IPv6 included). */
export function isPrivateAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, "").replace(/%.*$/, "");
  const family = isIP(bare);
  if (family === 0) return false;
  return blockList.check(bare, family === 4 ? "ipv4" : "ipv6");
}

export class TargetRefused extends Error {}

/** Checks the URL's shape; refuses literal private addresses and local names unless allowed. */
export function checkTargetUrl(value: string, allowPrivate: boolean): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TargetRefused("not a valid URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new TargetRefused("only http and https URLs are allowed");
  if (url.username || url.password) throw new TargetRefused("credentials in the URL are not allowed");
  if (!allowPrivate) {
    // "localhost." (the fully qualified form) is the same name.
    const host = url.hostname.replace(/^\[|\]$/g, "").toLowerCase().replace(/\.+$/, "");
    if (isPrivateAddress(host) || host === "localhost" || host.endsWith(".localhost")) {
      throw new TargetRefused("targets on loopback, link-local or private addresses are refused (the operator may allow them with AO_ALLOW_PRIVATE_CALLBACKS=1)");
    }
  }
  return url;
}

/**
 * Resolves the URL's host and refuses it when any address is private (unless allowed).
 * Returns the addresses to connect to, in the resolver's order.
 */
export async function resolveTarget(url: URL, allowPrivate: boolean, timeoutMs = 5000): Promise<{ address: string; family: 4 | 6 }[]> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const literal = isIP(host);
  let addresses: { address: string; family: number }[];
  if (literal) {
    addresses = [{ address: host, family: literal }];
  } else {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`DNS lookup of ${host} timed out`)), timeoutMs);
    });
    try {
      addresses = await Promise.race([lookup(host, { all: true, verbatim: true }), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
  if (addresses.length === 0) throw new Error(`${host} has no address`);
  if (!allowPrivate) {
    const bad = addresses.find((a) => isPrivateAddress(a.address));
    if (bad) throw new TargetRefused(`${host} resolves to ${bad.address}, a loopback, link-local or private address`);
  }
  return addresses.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
}

/** Configuration-time check: the URL, and its host's addresses when they can be looked up now. */
export async function checkTargetAtConfiguration(value: string, allowPrivate: boolean): Promise<string> {
  const url = checkTargetUrl(value, allowPrivate);
  if (!allowPrivate) {
    try {
      await resolveTarget(url, false, 2000);
    } catch (err) {
      // A name that does not resolve yet is allowed; delivery checks again.
      if (err instanceof TargetRefused) throw err;
    }
  }
  return url.toString();
}
