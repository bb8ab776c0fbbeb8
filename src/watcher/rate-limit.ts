// The two limits client-go's default controller rate limiter combines: a
// per-key exponential backoff, so one failing key retries ever more slowly,
// and an overall token bucket, so many failing keys cannot flood the endpoint.

import type { TokenBucket } from "../kube/token-bucket.js";

export interface RateLimiter {
  /** How long to wait before `key` is handed out again; counts one more retry. */
  when(key: string): number;
  /** The key succeeded: its backoff starts over. */
  forget(key: string): void;
  retries(key: string): number;
}

/** `base * 2^failures`, capped at `max` (client-go: 5 ms doubling to 1,000 s). */
export class ItemExponentialBackoff implements RateLimiter {
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly baseMs = 5,
    private readonly maxMs = 1_000_000,
  ) {}

  when(key: string): number {
    const n = this.failures.get(key) ?? 0;
    this.failures.set(key, n + 1);
    // 2^n overflows to Infinity past n≈1023; the cap makes that harmless.
    return Math.min(this.maxMs, this.baseMs * 2 ** n);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  retries(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

/** The longer of the per-key backoff and the overall bucket's wait. */
export class MaxOfRateLimiter implements RateLimiter {
  constructor(
    private readonly backoff: ItemExponentialBackoff,
    private readonly bucket: TokenBucket,
  ) {}

  when(key: string): number {
    return Math.max(this.backoff.when(key), this.bucket.reserve());
  }

  forget(key: string): void {
    this.backoff.forget(key);
  }

  retries(key: string): number {
    return this.backoff.retries(key);
  }
}
