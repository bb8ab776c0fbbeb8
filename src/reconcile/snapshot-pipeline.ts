// One owner of the snapshot per process: change -> build -> push. The build
// is a pure function of what it reads (the live routes and the endpoints), so
// when the cache says nothing it reads has changed since the last build
// (ClusterCache.inputs(), which a status write or a terminating route's last
// steps do not move) the last snapshot is the answer and nothing is built
// again. Two consumers share it:
//  - the xds sink's serve loop (`serve`): every replica that serves xDS builds
//    from its cache whenever the cache changes and serves it, so a replica that
//    never gets /reconcile still serves the current routes (docs/architecture.md,
//    "Watch-fed cluster state");
//  - the snapshot reconcile (reconciler.ts), which takes the same snapshot for
//    its push, statuses and finalizers instead of building its own.

import type { EdgeRouteV2 } from "../api/types.js";
import type { DataPlane } from "../dataplane/dataplane.js";
import {
  buildSnapshot,
  type EndpointsByService,
  type Snapshot,
  type SnapshotOptions,
  type TlsSecrets,
} from "../translate/snapshot.js";
import type { Logger } from "../observability/logger.js";
import type { ClusterCache } from "./cluster-cache.js";
import { Registry } from "prom-client";
import { createReconcileMetrics, type ReconcileMetrics } from "./reconcile-metrics.js";

/** What a build reads, and a stamp of it: equal stamps, equal inputs (absent: read afresh, never reused). */
export interface BuildInputs {
  readonly live: readonly EdgeRouteV2[];
  readonly endpoints: EndpointsByService;
  /** The referenced TLS Secrets' contents (absent: none). */
  readonly secrets?: TlsSecrets;
  readonly stamp?: number;
}

export interface ServeOptions {
  log: Logger;
  /** Least time between two builds (default 100 ms): a burst of events makes one build, not many. */
  minIntervalMs?: number;
  /**
   * While this says so (an admission burst), the least time between builds is
   * `busyIntervalMs` (default 1 s): a build at 2,000 routes takes tens of
   * milliseconds of the event loop that also answers the webhooks.
   */
  busy?: () => boolean;
  busyIntervalMs?: number;
}

export interface SnapshotPipelineOptions {
  /** How resources point back at the data plane (xds: ADS). */
  snapshot?: SnapshotOptions;
  /** Where builds and the serve loop's pushes are counted and timed (absent: a registry of its own). */
  metrics?: PipelineMetrics;
}

type PipelineMetrics = Pick<
  ReconcileMetrics,
  "buildSeconds" | "builds" | "holdSeconds" | "pushes" | "pushSeconds"
>;

export class SnapshotPipeline {
  private last: { readonly stamp: number | undefined; readonly snapshot: Snapshot } | undefined;
  private readonly metrics: PipelineMetrics;

  constructor(private readonly opts: SnapshotPipelineOptions = {}) {
    this.metrics = opts.metrics ?? createReconcileMetrics(new Registry());
  }

  /** The snapshot of `inputs`: the last one when its stamp is the same, else a new build. */
  snapshot(inputs: BuildInputs): Snapshot {
    const last = this.last;
    if (last && inputs.stamp !== undefined && last.stamp === inputs.stamp) return last.snapshot;
    const started = process.hrtime.bigint();
    const snapshot = buildSnapshot(
      inputs.live,
      inputs.endpoints,
      this.opts.snapshot,
      inputs.secrets,
      last?.snapshot,
    );
    this.metrics.buildSeconds.observe(Number(process.hrtime.bigint() - started) / 1e9);
    this.metrics.builds.inc({ changed: String(snapshot.version !== last?.snapshot.version) });
    this.last = { stamp: inputs.stamp, snapshot };
    return snapshot;
  }

  /**
   * Serves `state` into `plane` on every change that a build reads; returns
   * the stop. At most one build at a time, a change during a build makes one
   * more from the newest state, and builds are at least an interval apart.
   */
  serve(state: ClusterCache, plane: DataPlane, opts: ServeOptions): () => void {
    let dirty = false;
    let running = false;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let lastBuild = 0;
    /** When the oldest change not yet in a build came (its hold ends when a build starts). */
    let pendingSince: number | undefined;

    const serveOnce = (): void => {
      const revision = state.revision();
      const snapshot = this.snapshot(liveInputs(state));
      // Not awaited: the sink serves it at once and then waits on its clients'
      // answers, which the snapshot reconcile reads; a newer build must not wait
      // behind them. The sink's read-revision check keeps an older read out.
      const started = process.hrtime.bigint();
      plane.program(snapshot, { ...(revision ? { read: revision } : {}) }).then(
        (res) => {
          // Counted as the reconcile counts its own: a push made, or one that failed.
          if (!res.ok || res.pushed) {
            const result = res.ok ? "ok" : res.reason;
            this.metrics.pushes.inc({ result });
            this.metrics.pushSeconds.observe({ result }, Number(process.hrtime.bigint() - started) / 1e9);
          }
          if (!res.ok && res.reason === "PushFailed")
            opts.log.warn(
              { version: res.version, detail: res.detail },
              "serving the cache's snapshot failed",
            );
        },
        (err: unknown) => opts.log.warn({ err }, "serving the cache's snapshot failed"),
      );
    };

    const run = (): void => {
      timer = undefined;
      if (stopped || running) return;
      running = true;
      try {
        while (dirty && !stopped) {
          dirty = false;
          // The first list's end is a change too: it comes back, and the hold counts from it.
          if (!state.synced()) {
            pendingSince = undefined;
            break;
          }
          lastBuild = Date.now();
          if (pendingSince !== undefined) this.metrics.holdSeconds.observe((lastBuild - pendingSince) / 1000);
          pendingSince = undefined;
          serveOnce();
        }
      } catch (err) {
        opts.log.error({ err }, "building the cache's snapshot failed");
      } finally {
        running = false;
      }
    };

    const schedule = (): void => {
      dirty = true;
      pendingSince ??= Date.now();
      if (timer !== undefined || running || stopped) return;
      const interval = opts.busy?.() ? (opts.busyIntervalMs ?? 1000) : (opts.minIntervalMs ?? 100);
      timer = setTimeout(run, Math.max(0, lastBuild + interval - Date.now()));
    };

    const unsubscribe = state.onChange(schedule);
    schedule();
    return () => {
      stopped = true;
      clearTimeout(timer);
      unsubscribe();
    };
  }
}

/** What a build reads from the cache, stamped. */
export function liveInputs(
  state: Pick<ClusterCache, "routes" | "endpoints" | "secrets" | "inputs">,
): BuildInputs {
  return {
    live: state.routes().filter((r) => !r.metadata.deletionTimestamp),
    endpoints: state.endpoints(),
    secrets: state.secrets(),
    stamp: state.inputs(),
  };
}
