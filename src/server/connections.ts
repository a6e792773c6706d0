// Connections per client address. Bun.serve has no such cap and no hook before a request's
// headers are complete, so what is counted is what Bun lets us see: requests in flight (a body
// being sent slowly included) and open WebSockets. Idle keep-alive connections and connections
// still sending headers are bounded by time instead (see serve.ts and README "Limits").
import { ApiError, errorResponse } from "./errors";

export class AddressGate {
  private readonly open = new Map<string, number>();

  /** `limit` 0 counts nothing and refuses nothing. */
  constructor(private readonly limit: number) {}

  /** Counts one more connection of `address`, or false when it already has `limit`. */
  enter(address: string): boolean {
    if (this.limit <= 0) return true;
    const n = this.open.get(address) ?? 0;
    if (n >= this.limit) return false;
    this.open.set(address, n + 1);
    return true;
  }

  leave(address: string) {
    const n = this.open.get(address) ?? 0;
    if (n <= 1) this.open.delete(address);
    else this.open.set(address, n - 1);
  }

  /** The answer past the limit; Connection: close hands the socket back at once. */
  refusal(): Response {
    const response = errorResponse(
      new ApiError(429, "rate_limited", `too many open connections from this address (at most ${this.limit})`, { limit: this.limit }, { "Retry-After": "1" }),
    );
    response.headers.set("connection", "close");
    return response;
  }
}
