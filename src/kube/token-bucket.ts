// A token bucket in the manner of golang.org/x/time/rate: the watcher's retry
// limit and route-key budget, and the server's status writes during an
// admission burst.

export type Now = () => number;

/**
 * A token bucket in the manner of golang.org/x/time/rate's Reserve: every call
 * takes a token, possibly one not yet earned, and says how long until it is.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly qps: number,
    private readonly burst: number,
    private readonly now: Now = Date.now,
  ) {
    if (!(qps > 0) || !(burst >= 1)) throw new RangeError("qps must be > 0 and burst >= 1");
    this.tokens = burst;
    this.last = now();
  }

  /** Takes a token if one has been earned; never goes into debt. */
  tryTake(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  reserve(): number {
    this.refill();
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens * 1000) / this.qps;
  }

  /** The tokens earned since the last call, up to the burst. */
  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) * this.qps) / 1000);
    this.last = t;
  }
}
