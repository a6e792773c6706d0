// The server's Prometheus registry and the counters the hot paths touch (an increment, nothing
// more). Gauges that describe stored state are computed at scrape time (modules/metrics).
// One registry per server instance: tests run several servers in one process.
import { Counter, Histogram, Registry } from "./prom";

export type CallbackOutcome = "delivered" | "retrying" | "failed";

export function createMetrics() {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    requests: new Counter({ name: "ao_http_requests_total", help: "HTTP requests answered, by method, route pattern and status", labelNames: ["method", "route", "status"] as const, registers }),
    latency: new Histogram({
      name: "ao_http_request_duration_seconds",
      help: "Time from receiving a request to handing back its answer, by method and route pattern",
      labelNames: ["method", "route"] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    socketRequests: new Counter({
      name: "ao_worker_socket_requests_total",
      help: "Worker requests (claim, events, transition) answered on the worker socket instead of over HTTP, by operation and status",
      labelNames: ["op", "status"] as const,
      registers,
    }),
    offers: new Counter({ name: "ao_offers_total", help: "Tasks offered to workers (an expired or declined offer is made again and counted again)", registers }),
    claims: new Counter({ name: "ao_claims_total", help: "Offers claimed by workers: attempts started", registers }),
    attemptsLost: new Counter({ name: "ao_attempts_lost_total", help: "Attempts given up because their worker went silent, was revoked or came back without them", registers }),
    callbacks: new Counter({
      name: "ao_callback_deliveries_total",
      help: "Outbound callback tries by outcome: delivered, retrying (a failed try that will be tried again), failed (a failed try that ends the delivery)",
      labelNames: ["outcome"] as const,
      registers,
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
