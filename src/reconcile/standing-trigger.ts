// Statuses follow the data plane's clients, not only the routes. The watcher
// calls the snapshot reconcile when a route, Service or EndpointSlice changes;
// nothing in the cluster changes when an xDS client connects, leaves, asks for
// other names or answers late, yet each of those changes what `Programmed`
// should say. So the process that serves those clients runs the snapshot
// reconcile itself when the data plane says where they stand changed
// (DataPlane.onStandingChange): at most one at a time, one more if another
// change came meanwhile, after a short settle so a burst of connects is one
// run. While admission is busy it waits, as the snapshot key does at
// /reconcile, but never past `maxDeferMs`. A run that fails is retried with a
// growing delay; one that waits on clients is not: their next answer is a change.

import type { DataPlane } from "../dataplane/dataplane.js";
import type { Logger } from "../observability/logger.js";
import type { ReconcileReply } from "./protocol.js";

export interface StandingTriggerOptions {
  readonly log: Logger;
  /** Wait this long after a change before running (default 100 ms): one run for a burst. */
  readonly settleMs?: number;
  /** Whether admission is in a burst; the run waits while it is (docs/architecture.md, "Admission first"). */
  readonly busy?: () => boolean;
  /** Longest a run waits on a busy admission (default 5 s). */
  readonly maxDeferMs?: number;
  /** First retry delay after a failed run (default 1 s), doubled up to 30 s. */
  readonly retryMs?: number;
  /** What changed, for the logs (default: the xDS clients' standing). */
  readonly cause?: string;
}

const MAX_RETRY_MS = 30_000;
const BUSY_RECHECK_MS = 1_000;

/**
 * Runs `reconcile` (the snapshot key) whenever `plane` says its clients'
 * standing changed; answers the stop, which aborts a run in flight.
 */
export function reconcileOnStandingChange(
  plane: Pick<DataPlane, "onStandingChange">,
  reconcile: (signal: AbortSignal) => Promise<ReconcileReply>,
  opts: StandingTriggerOptions,
): () => void {
  const stop = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running = false;
  let dirty = false;
  let failures = 0;
  let busySince: number | undefined;

  const later = (ms: number): void => {
    if (timer === undefined && !stop.signal.aborted) timer = setTimeout(run, ms);
  };

  const run = (): void => {
    timer = undefined;
    if (running || stop.signal.aborted) return;
    if (opts.busy?.()) {
      busySince ??= Date.now();
      if (Date.now() - busySince < (opts.maxDeferMs ?? 5_000)) return later(BUSY_RECHECK_MS);
    }
    busySince = undefined;
    running = true;
    dirty = false;
    reconcile(stop.signal)
      .then(
        (reply) => {
          // "requeue" without a period is a failure; with one, a wait on clients.
          if (reply.result === "requeue" && reply.requeueAfterMs === undefined) return false;
          opts.log.debug(
            { did: reply.did },
            `snapshot reconciled: ${opts.cause ?? "the xDS clients' standing changed"}`,
          );
          return true;
        },
        (err: unknown) => {
          if (!stop.signal.aborted)
            opts.log.warn(
              { err },
              `snapshot reconcile failed (${opts.cause ?? "the xDS clients' standing changed"})`,
            );
          return false;
        },
      )
      .then((ok) => {
        running = false;
        failures = ok ? 0 : failures + 1;
        if (dirty) later(opts.settleMs ?? 100);
        else if (!ok) later(Math.min(MAX_RETRY_MS, (opts.retryMs ?? 1_000) * 2 ** (failures - 1)));
      });
  };

  const unsubscribe =
    plane.onStandingChange?.(() => {
      dirty = true;
      if (!running) later(opts.settleMs ?? 100);
    }) ?? (() => undefined);

  return () => {
    stop.abort();
    clearTimeout(timer);
    unsubscribe();
  };
}
