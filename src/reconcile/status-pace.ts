// Status writes give way to an admission burst: while admission is busy they
// are spent from a small bucket, and a snapshot reconcile leaves the rest to
// its next call (the watcher calls again within its hold-off), so routes get
// their status a little later and the creates go through at nearly the
// webhooks' own pace. Never starved: the bucket refills while busy, the pace
// lifts as soon as the burst ends, and a route's write is put off at most
// `maxDeferMs` from its first refusal. Without that bound, steady churn above
// the bucket's rate (50 creates a second against 20 writes) grew the backlog
// for as long as it lasted: Programmed came 30 s late at p50, 71 s at worst,
// after a minute of it (BENCHMARKS.md, "A change reaches the data plane").

import { TokenBucket, type Now } from "../kube/token-bucket.js";

export interface StatusWritePace {
  /** Whether one more status write, for the route `key`, may go now. */
  tryTake(key: string): boolean;
}

export interface StatusPaceOptions {
  /** Writes a second while admission is busy (default 20). */
  qps?: number;
  burst?: number;
  /** Longest a route's write is put off (default 5 s). */
  maxDeferMs?: number;
  now?: Now;
}

/** Refused routes remembered at most (a route deleted while refused is forgotten when this fills). */
const MAX_REMEMBERED = 100_000;

export function statusWritePace(busy: () => boolean, opts: StatusPaceOptions = {}): StatusWritePace {
  const now = opts.now ?? Date.now;
  const bucket = new TokenBucket(opts.qps ?? 20, opts.burst ?? 20, now);
  const maxDeferMs = opts.maxDeferMs ?? 5_000;
  const refusedSince = new Map<string, number>();
  return {
    tryTake(key) {
      if (!busy() || bucket.tryTake()) {
        refusedSince.delete(key);
        return true;
      }
      const t = now();
      const since = refusedSince.get(key);
      if (since !== undefined && t - since >= maxDeferMs) {
        refusedSince.delete(key);
        return true;
      }
      if (since === undefined) {
        if (refusedSince.size >= MAX_REMEMBERED) refusedSince.clear();
        refusedSince.set(key, t);
      }
      return false;
    },
  };
}
