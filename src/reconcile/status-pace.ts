// Status writes give way to an admission burst: while admission is busy they
// are spent from a small bucket, and a snapshot reconcile leaves the rest to
// its next call (the watcher calls again within its hold-off), so routes get
// their status a little later and the creates go through at nearly the
// webhooks' own pace. Never starved: the bucket refills while busy, and the
// pace lifts as soon as the burst ends.

import { TokenBucket } from "../kube/token-bucket.js";

export interface StatusWritePace {
  /** Whether one more status write may go now. */
  tryTake(): boolean;
}

export function statusWritePace(busy: () => boolean, qps = 20, burst = 20): StatusWritePace {
  const bucket = new TokenBucket(qps, burst);
  return { tryTake: () => !busy() || bucket.tryTake() };
}
