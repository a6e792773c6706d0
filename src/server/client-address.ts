// Each request's client address, worked out once where it arrives (serve.ts: the connection's, or
// the one a trusted proxy forwarded, README "Limits and reverse proxies") and read by the routes
// that count per address (failed sign-ins, open device sign-ins and pairings).
import type { Server } from "bun";
import { addressMatcher, clientAddress } from "../lib/addresses";

const addresses = new WeakMap<Request, string>();

/** The function serve.ts calls on each request: its client address, remembered for the routes. */
export function clientAddresses(trustedProxies: string[]) {
  const trusted = addressMatcher(trustedProxies);
  // With no proxy trusted (the default) the header is never read: every request pays nothing for it.
  const forwardedFor = trustedProxies.length ? (request: Request) => request.headers.get("x-forwarded-for") : () => null;
  return (request: Request, server: Server<any>): string => {
    const address = clientAddress(server.requestIP(request)?.address ?? "", forwardedFor(request), trusted);
    addresses.set(request, address);
    return address;
  };
}

/** The address serve.ts worked out for this request (null for one it never saw, such as app.handle in a test). */
export function clientAddressOf(request: Request): string | null {
  return addresses.get(request) ?? null;
}
