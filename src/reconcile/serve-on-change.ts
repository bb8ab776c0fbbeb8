// The xds sink's own loop: every replica that serves xDS builds the snapshot
// from its cache whenever the cache changes and serves it, so a replica that
// never gets /reconcile still serves the current routes (docs/architecture.md,
// "Watch-fed cluster state"). Builds are coalesced: at most one at a time,
// and a change during a build makes one more build from the newest state.
// The snapshot is a pure function of the cache's content (its version is the
// content hash), so every replica whose cache has caught up serves the same one.
// Statuses and finalizers stay the snapshot reconcile's job.

import type { DataPlane } from "../dataplane/dataplane.js";
import { buildSnapshot, type SnapshotOptions } from "../envoy/snapshot.js";
import type { Logger } from "../observability/logger.js";
import type { ClusterState } from "./cluster-state.js";

export interface ServeOnChangeOptions {
  snapshot?: SnapshotOptions;
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
  /** Told each build's version and time (tests, metrics). */
  onBuilt?: (version: string, seconds: number) => void;
}

/** Starts serving `state` into `plane` on every change; returns the stop. */
export function serveOnChange(state: ClusterState, plane: DataPlane, opts: ServeOnChangeOptions): () => void {
  let dirty = false;
  let running = false;
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let lastBuild = 0;

  const buildOnce = (): void => {
    const revision = state.revision();
    const started = process.hrtime.bigint();
    const live = state.routes().filter((r) => !r.metadata.deletionTimestamp);
    const snapshot = buildSnapshot(live, state.endpoints(), opts.snapshot);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    opts.onBuilt?.(snapshot.version, seconds);
    // Not awaited: the sink serves it at once and then waits on its clients'
    // answers, which the snapshot reconcile reads; a newer build must not wait
    // behind them. The sink's read-revision check keeps an older read out.
    plane.program(snapshot, { ...(revision ? { read: revision } : {}) }).then(
      (res) => {
        if (!res.ok && res.reason === "PushFailed")
          opts.log.warn({ version: res.version, detail: res.detail }, "serving the cache's snapshot failed");
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
        if (!state.synced()) break; // the first list's end is a change too: it comes back
        lastBuild = Date.now();
        buildOnce();
      }
    } catch (err) {
      opts.log.error({ err }, "building the cache's snapshot failed");
    } finally {
      running = false;
    }
  };

  const schedule = (): void => {
    dirty = true;
    if (timer !== undefined || running || stopped) return;
    const interval = opts.busy?.() ? (opts.busyIntervalMs ?? 1000) : (opts.minIntervalMs ?? 100);
    const wait = Math.max(0, lastBuild + interval - Date.now());
    timer = setTimeout(run, wait);
  };

  const unsubscribe = state.onChange(schedule);
  schedule();
  return () => {
    stopped = true;
    clearTimeout(timer);
    unsubscribe();
  };
}
