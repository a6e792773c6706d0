// IP addresses and CIDR ranges as an operator writes them (AO_TRUSTED_PROXIES), and the client
// address behind proxies that append to X-Forwarded-For.
import { BlockList, isIP } from "node:net";

/** "10.0.0.1" or "::1", or a CIDR range such as "10.0.0.0/8" or "fd00::/8"; false for anything else. */
export function isAddressOrRange(text: string): boolean {
  const [address, bits, extra] = text.split("/");
  const family = isIP(address);
  if (!family || extra !== undefined) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

/** IPv4 addresses as a dual-stack socket reports them (::ffff:10.0.0.1) are plain IPv4. */
const plain = (address: string) => (address.startsWith("::ffff:") && isIP(address.slice(7)) === 4 ? address.slice(7) : address);

/** Whether an address is one of `ranges` (each checked by isAddressOrRange). */
export function addressMatcher(ranges: string[]): (address: string) => boolean {
  if (ranges.length === 0) return () => false;
  const list = new BlockList();
  for (const range of ranges) {
    const [address, bits] = range.split("/");
    const type = isIP(address) === 6 ? "ipv6" : "ipv4";
    if (bits === undefined) list.addAddress(plain(address), isIP(plain(address)) === 6 ? "ipv6" : "ipv4");
    else list.addSubnet(address, Number(bits), type);
  }
  return (address) => {
    const a = plain(address);
    const family = isIP(a);
    return family !== 0 && list.check(a, family === 6 ? "ipv6" : "ipv4");
  };
}

/**
 * The client's address: the connection's, unless it is a trusted proxy; then X-Forwarded-For is
 * read from its end (each proxy appends the address it was reached from), and the client is the
 * first address that is not a trusted proxy. What precedes it was written by the client and is
 * never believed. An entry that is not an address ends the walk at the last one believed.
 */
export function clientAddress(peer: string, forwardedFor: string | null, trusted: (address: string) => boolean): string {
  let client = plain(peer);
  if (!forwardedFor || !trusted(client)) return client;
  const hops = forwardedFor.split(",");
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = plain(hops[i].trim());
    if (!isIP(hop)) break;
    client = hop;
    if (!trusted(hop)) break;
  }
  return client;
}
