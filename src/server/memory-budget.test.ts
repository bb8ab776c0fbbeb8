// The body budget's fair share: one peer holds at most its share, whatever
// the budget has free, and what it gives back is its own again.

import { describe, expect, it } from "vitest";
import { MemoryBudget } from "./memory-budget.js";

describe("MemoryBudget", () => {
  it("lets one peer hold at most its share, and the rest to the others", () => {
    const b = new MemoryBudget("small", 100);
    expect(b.peerCapacity).toBe(50);
    expect(b.tryTake(30, "10.0.0.9")).toBe("taken");
    expect(b.tryTake(30, "10.0.0.9")).toBe("peer-share");
    expect(b.tryTake(20, "10.0.0.9")).toBe("taken");
    expect(b.heldBy("10.0.0.9")).toBe(50);
    expect(b.tryTake(50, "10.0.0.1")).toBe("taken");
    expect(b.tryTake(1, "10.0.0.2")).toBe("full");
    b.give(50, "10.0.0.9");
    expect(b.heldBy("10.0.0.9")).toBe(0);
    expect(b.inUse).toBe(50);
    expect(b.tryTake(50, "10.0.0.2")).toBe("taken");
  });

  it("with a share of 1 is one budget for all", () => {
    const b = new MemoryBudget("whole", 100, 1);
    expect(b.tryTake(100, "10.0.0.9")).toBe("taken");
    expect(b.tryTake(1, "10.0.0.1")).toBe("full");
  });
});
