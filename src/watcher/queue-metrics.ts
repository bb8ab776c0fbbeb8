import { Counter, Gauge, Histogram, type Registry } from "prom-client";

/** What the work queue reports, labelled by lane (`route` or `snapshot`). */
export interface QueueMetrics {
  readonly depth: Gauge<"lane">;
  readonly adds: Counter<"lane">;
  readonly retries: Counter<"lane">;
  readonly waitSeconds: Histogram<"lane">;
  readonly workSeconds: Histogram<"lane">;
}

const buckets = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** Registers the queue's metrics once per registry (prom-client refuses duplicates). */
export function createQueueMetrics(registry: Registry): QueueMetrics {
  const registers = [registry];
  const metrics: QueueMetrics = {
    depth: new Gauge({
      name: "edge_operator_queue_depth",
      help: "Keys ready to be handed to a worker.",
      labelNames: ["lane"],
      registers,
    }),
    adds: new Counter({
      name: "edge_operator_queue_adds_total",
      help: "Keys that entered the queue (after de-duplication).",
      labelNames: ["lane"],
      registers,
    }),
    retries: new Counter({
      name: "edge_operator_queue_retries_total",
      help: "Rate-limited re-adds: failures and requeue replies.",
      labelNames: ["lane"],
      registers,
    }),
    waitSeconds: new Histogram({
      name: "edge_operator_queue_wait_seconds",
      help: "Time a key waited in the queue before a worker took it.",
      labelNames: ["lane"],
      buckets,
      registers,
    }),
    workSeconds: new Histogram({
      name: "edge_operator_queue_work_duration_seconds",
      help: "Time from a worker taking a key to marking it done.",
      labelNames: ["lane"],
      buckets,
      registers,
    }),
  };
  // Both lanes are there from the start, at 0: a rate of retries reads 0, not "no data".
  for (const lane of ["route", "snapshot"] as const) {
    metrics.depth.set({ lane }, 0);
    metrics.adds.inc({ lane }, 0);
    metrics.retries.inc({ lane }, 0);
  }
  return metrics;
}
