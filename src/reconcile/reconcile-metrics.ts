import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { EdgeRouteV2 } from "../api/types.js";

export type ReconcileMetrics = ReturnType<typeof createReconcileMetrics>;

const TALLIED = ["Accepted", "Programmed"] as const;
const STATUSES = ["True", "False", "Unknown"] as const;

/** Routes by condition and status, and how many lag their generation: one pass, no strings built. */
export function tallyRoutes(routes: readonly EdgeRouteV2[]): {
  byCondition: Record<(typeof TALLIED)[number], Record<(typeof STATUSES)[number], number>>;
  skew: number;
} {
  const byCondition = {
    Accepted: { True: 0, False: 0, Unknown: 0 },
    Programmed: { True: 0, False: 0, Unknown: 0 },
  };
  let skew = 0;
  for (const r of routes) {
    if ((r.status?.observedGeneration ?? 0) < (r.metadata.generation ?? 0)) skew++;
    const conditions = r.status?.conditions ?? [];
    for (const type of TALLIED) {
      let status: (typeof STATUSES)[number] = "Unknown";
      for (const c of conditions)
        if (c.type === type) {
          status = c.status;
          break;
        }
      byCondition[type][status]++;
    }
  }
  return { byCondition, skew };
}

/** Registers the reconcile's metrics once per registry (prom-client refuses duplicates). */
export function createReconcileMetrics(registry: Registry) {
  // The routes the last snapshot reconcile read, counted when scraped: counting
  // them on every reconcile took 11-26 ms at 10,000 routes, in the path between
  // a client's ACK and the status write that reports it.
  let lastRead: readonly EdgeRouteV2[] | undefined;
  let tally: ReturnType<typeof tallyRoutes> | undefined;
  const tallied = (): ReturnType<typeof tallyRoutes> | undefined => {
    if (lastRead !== undefined) {
      tally = tallyRoutes(lastRead);
      lastRead = undefined;
    }
    return tally;
  };
  return {
    /** The routes a snapshot reconcile read (kept by reference; the array is not changed afterwards). */
    observeRoutes(routes: readonly EdgeRouteV2[]): void {
      lastRead = routes;
    },
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
    holdSeconds: new Histogram({
      name: "edge_operator_snapshot_hold_seconds",
      help: "Time from the serve loop's first unbuilt change (its cache moved) to the start of the build that takes it: the spacing between builds, and the longer spacing while admission is busy.",
      buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.05, 1.1, 1.25, 1.5, 2, 5],
      registers: [registry],
    }),
    culpritSearches: new Counter({
      name: "edge_operator_culprit_searches_total",
      help: "Searches for the route an xDS client of this process refused (reconcile/culprit-search.ts), by result: held (a route found and held back) or none (no one route could be shown to cause it).",
      labelNames: ["result"] as const,
      registers: [registry],
    }),
    culpritTrials: new Counter({
      name: "edge_operator_culprit_trials_total",
      help: "Trial pushes of the culprit searches: each a snapshot served to this process's clients and their answer awaited.",
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
      collect() {
        const t = tallied();
        if (t === undefined) return;
        this.reset();
        for (const condition of TALLIED)
          for (const status of STATUSES) {
            const n = t.byCondition[condition][status];
            if (n > 0) this.set({ condition, status }, n);
          }
      },
    }),
    generationSkew: new Gauge({
      name: "edge_operator_generation_skew_routes",
      help: "EdgeRoutes whose status.observedGeneration lags metadata.generation, as the last snapshot reconcile read them.",
      registers: [registry],
      collect() {
        const t = tallied();
        if (t !== undefined) this.set(t.skew);
      },
    }),
  };
}
