// The pace of status writes: free while admission is quiet, a small bucket
// while it is busy, and free again as soon as it is quiet.

import { describe, expect, it } from "vitest";
import { statusWritePace } from "./status-pace.js";

describe("statusWritePace", () => {
  it("lets every write go while admission is quiet, and the bucket's share while it is busy", () => {
    let busy = false;
    const pace = statusWritePace(() => busy, 1, 2);
    expect(Array.from({ length: 50 }, () => pace.tryTake()).every(Boolean)).toBe(true);
    busy = true;
    expect([pace.tryTake(), pace.tryTake(), pace.tryTake()]).toEqual([true, true, false]);
    busy = false;
    expect(pace.tryTake()).toBe(true);
  });
});
