import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/** One registry for the process; every metric is prefixed `edge_operator_`. */
export const registry = new Registry();
collectDefaultMetrics({ register: registry, prefix: "edge_operator_process_" });

export const httpRequestDuration = new Histogram({
  name: "edge_operator_http_request_duration_seconds",
  help: "Time to answer an HTTPS request, by route and status code.",
  labelNames: ["route", "code"] as const,
  buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
  registers: [registry],
});

export const webhookDecisions = new Counter({
  name: "edge_operator_webhook_decisions_total",
  help: "Webhook answers, by webhook and outcome.",
  labelNames: ["webhook", "outcome"] as const,
  registers: [registry],
});
