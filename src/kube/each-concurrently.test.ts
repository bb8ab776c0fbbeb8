import { describe, expect, it } from "vitest";
import { eachConcurrently } from "./each-concurrently.js";

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe("eachConcurrently", () => {
  it("calls fn once per item, never more than `limit` at once", async () => {
    const items = Array.from({ length: 50 }, (_, i) => i);
    const seen: number[] = [];
    let inFlight = 0;
    let most = 0;
    await eachConcurrently(items, 4, async (i) => {
      inFlight++;
      most = Math.max(most, inFlight);
      await tick(i % 3);
      seen.push(i);
      inFlight--;
    });
    expect(seen.sort((a, b) => a - b)).toEqual(items);
    expect(most).toBe(4);
  });

  it("does nothing for no items", async () => {
    let calls = 0;
    await eachConcurrently([], 8, async () => void calls++);
    expect(calls).toBe(0);
  });

  it("stops new starts at the first failure, lets the calls in flight finish, then throws it", async () => {
    const started: number[] = [];
    const finished: number[] = [];
    const run = eachConcurrently(
      Array.from({ length: 20 }, (_, i) => i),
      3,
      async (i) => {
        started.push(i);
        if (i === 1) throw new Error("item 1 failed");
        await tick(20);
        finished.push(i);
      },
    );
    await expect(run).rejects.toThrow("item 1 failed");
    // 1 fails at once, while 0 and 2 are in flight: nothing after it starts, and 0 and 2 finish.
    expect(started).toEqual([0, 1, 2]);
    expect(finished.sort()).toEqual([0, 2]);
  });
});
