import { Counter, Gauge, Histogram, type Registry } from "prom-client";

export type ReconcileMetrics = ReturnType<typeof createReconcileMetrics>;

/** Registers the reconcile's metrics once per registry (prom-client refuses duplicates). */
export function createReconcileMetrics(registry: Registry) {
  return {
    duration: new Histogram({
      name: "edge_operator_reconcile_duration_seconds",
      help: "Time to reconcile one key, by kind of key (route, snapshot) and result (done, requeue, error).",
      labelNames: ["kind", "result"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    buildSeconds: new Histogram({
      name: "edge_operator_snapshot_build_seconds",
      help: "Time to build the data-plane snapshot from all live routes.",
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    builds: new Counter({
      name: "edge_operator_snapshot_builds_total",
      help: "Snapshot builds (a build whose inputs had not changed since the last is not made again), by whether its version differs from the previous build's.",
      labelNames: ["changed"] as const,
      registers: [registry],
    }),
    pushes: new Counter({
      name: "edge_operator_dataplane_pushes_total",
      help: "Snapshots pushed to the data plane, by result.",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
    pushSeconds: new Histogram({
      name: "edge_operator_dataplane_push_duration_seconds",
      help: "Time from handing a snapshot to the data plane to its verdict (xds: until every connected client ACKed, NACKed or the wait ended), by result.",
      labelNames: ["result"] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    overlaps: new Counter({
      name: "edge_operator_reconcile_overlaps_total",
      help: "Reconciles of a key that began while this process was still reconciling the same key (the watcher's queue should make this 0).",
      registers: [registry],
    }),
    statusWrites: new Counter({
      name: "edge_operator_status_writes_total",
      help: "EdgeRoute status writes (a status that would not change is never written).",
      registers: [registry],
    }),
    statusWritesPaced: new Counter({
      name: "edge_operator_status_writes_paced_total",
      help: "Status writes a snapshot reconcile left for its next call because admission was busy.",
      registers: [registry],
    }),
    routes: new Gauge({
      name: "edge_operator_routes",
      help: "EdgeRoutes by condition and status, as the last snapshot reconcile read them.",
      labelNames: ["condition", "status"] as const,
      registers: [registry],
    }),
    generationSkew: new Gauge({
      name: "edge_operator_generation_skew_routes",
      help: "EdgeRoutes whose status.observedGeneration lags metadata.generation, as the last snapshot reconcile read them.",
      registers: [registry],
    }),
  };
}
