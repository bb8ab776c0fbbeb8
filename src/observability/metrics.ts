// Metrics live in a registry the command line makes and hands to each part,
// which registers its own metrics on it: nothing is registered at import time,
// so a test or a second server in one process gets a registry of its own.
// The operator's own metrics are prefixed `edge_operator_`; the process's are
// the standard `process_*` and `nodejs_*` that every Node service exports, so
// that the dashboards and alerts written for those work unchanged.

import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export { Registry };

/**
 * prom-client's gauges whose names end in `_total`, which Prometheus reserves
 * for counters (promtool refuses them). Each is the sum over its unsuffixed
 * twin's `type` label (`sum(nodejs_active_handles)`), so nothing is lost.
 */
export const DROPPED_DEFAULT_METRICS = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
] as const;

/** A registry with the process's own metrics (CPU, memory, event loop) on it. */
export function createRegistry(opts: { processMetrics?: boolean } = {}): Registry {
  const registry = new Registry();
  if (opts.processMetrics ?? true) {
    collectDefaultMetrics({ register: registry });
    for (const name of DROPPED_DEFAULT_METRICS) registry.removeSingleMetric(name);
  }
  return registry;
}

/** What the HTTPS server and its webhooks report. */
export interface ServerMetrics {
  readonly registry: Registry;
  readonly requestDuration: Histogram<"route" | "code">;
  readonly webhookDecisions: Counter<"webhook" | "outcome">;
  /**
   * Connections that carried a request. Against the request count it shows
   * whether callers keep connections alive: the apiserver's webhook client
   * keeps 25 idle per host, and past that each burst costs a TLS handshake each.
   */
  readonly connections: Counter;
  /** Objects in the ConversionReviews answered: the conversion work, as a review may carry a whole LIST. */
  readonly conversionObjects: Counter;
}

/** Registers the server's metrics once per registry (prom-client refuses duplicates). */
export function createServerMetrics(registry: Registry): ServerMetrics {
  return {
    registry,
    requestDuration: new Histogram({
      name: "edge_operator_http_request_duration_seconds",
      help: "Time to answer an HTTPS request, by route and status code.",
      labelNames: ["route", "code"] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    connections: new Counter({
      name: "edge_operator_http_connections_total",
      help: "Connections (TLS handshakes, on the HTTPS listener) that carried at least one request.",
      registers: [registry],
    }),
    webhookDecisions: new Counter({
      name: "edge_operator_webhook_decisions_total",
      help: "Webhook answers, by webhook and outcome.",
      labelNames: ["webhook", "outcome"] as const,
      registers: [registry],
    }),
    conversionObjects: new Counter({
      name: "edge_operator_conversion_objects_total",
      help: "Objects in the ConversionReviews answered.",
      registers: [registry],
    }),
  };
}
