// prom-client's classes, each from its own file. The package's index also loads its Pushgateway
// (node:http), the default process metrics (@opentelemetry/api) and cluster aggregation, which ao
// does not use: a quarter of the server's startup. The types are the package's own.
import type * as prom from "prom-client";

export const Counter = require("prom-client/lib/counter") as typeof prom.Counter;
export const Gauge = require("prom-client/lib/gauge") as typeof prom.Gauge;
export const Histogram = require("prom-client/lib/histogram") as typeof prom.Histogram;
export const Registry = require("prom-client/lib/registry") as typeof prom.Registry;
