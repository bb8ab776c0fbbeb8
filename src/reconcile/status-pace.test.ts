// The pace of status writes: free while admission is quiet, a small bucket
// while it is busy, free again as soon as it is quiet, and never a route's
// write put off past the bound however long admission stays busy.

import { describe, expect, it } from "vitest";
import { statusWritePace } from "./status-pace.js";

describe("statusWritePace", () => {
  it("lets every write go while admission is quiet, and the bucket's share while it is busy", () => {
    let busy = false;
    const t = 0;
    const pace = statusWritePace(() => busy, { qps: 1, burst: 2, now: () => t });
    expect(Array.from({ length: 50 }, (_, i) => pace.tryTake(`ns/r${i}`)).every(Boolean)).toBe(true);
    busy = true;
    expect([pace.tryTake("ns/a"), pace.tryTake("ns/b"), pace.tryTake("ns/c")]).toEqual([true, true, false]);
    busy = false;
    expect(pace.tryTake("ns/c")).toBe(true);
  });

  it("under admission that never stops being busy, writes each route within the bound of its first refusal", () => {
    let t = 0;
    const pace = statusWritePace(() => true, { qps: 1, burst: 1, maxDeferMs: 5_000, now: () => t });
    // 50 routes a second want a status; the bucket gives 1 a second.
    const firstWanted = new Map<string, number>();
    const writtenAt = new Map<string, number>();
    for (t = 0; t < 60_000; t += 100) {
      for (let i = 0; i < 5; i++) {
        const key = `ns/r${t / 20 + i}`;
        if (!firstWanted.has(key)) firstWanted.set(key, t);
      }
      // A reconcile call every 100 ms tries every route still waiting.
      for (const key of firstWanted.keys())
        if (!writtenAt.has(key) && pace.tryTake(key)) writtenAt.set(key, t);
    }
    const waits = [...writtenAt].map(([k, at]) => at - (firstWanted.get(k) ?? 0));
    expect(Math.max(...waits)).toBeLessThanOrEqual(5_000);
    // Every route wanted up to the bound before the end was written.
    const due = [...firstWanted].filter(([, at]) => at <= 60_000 - 5_100).map(([k]) => k);
    expect(due.every((k) => writtenAt.has(k))).toBe(true);
    // And the pace still held most of them back for a while: it is a pace, not a pass.
    expect(waits.filter((w) => w >= 4_900).length).toBeGreaterThan(waits.length / 2);
  });
});
