// The token bucket's two ways to spend: reserve (a token now or a wait) and
// tryTake (a token only if one has been earned, never a debt).

import { describe, expect, it } from "vitest";
import { TokenBucket } from "./token-bucket.js";

describe("TokenBucket", () => {
  it("tryTake spends the burst, then one token per 1/qps seconds, and never goes into debt", () => {
    let now = 0;
    const bucket = new TokenBucket(10, 3, () => now);
    expect([bucket.tryTake(), bucket.tryTake(), bucket.tryTake(), bucket.tryTake()]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    // Refused takes cost nothing: 100 ms later exactly one token is there.
    for (let i = 0; i < 5; i++) bucket.tryTake();
    now += 100;
    expect([bucket.tryTake(), bucket.tryTake()]).toEqual([true, false]);
    // Idle time refills up to the burst, not past it.
    now += 10_000;
    expect([bucket.tryTake(), bucket.tryTake(), bucket.tryTake(), bucket.tryTake()]).toEqual([
      true,
      true,
      true,
      false,
    ]);
  });

  it("reserve takes a token not yet earned and says how long until it is", () => {
    const now = 0;
    const bucket = new TokenBucket(10, 1, () => now);
    expect(bucket.reserve()).toBe(0);
    expect(bucket.reserve()).toBe(100);
    expect(bucket.reserve()).toBe(200);
  });
});
