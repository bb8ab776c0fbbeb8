import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { compareEntries, orderKey, type Ordered } from "./route-order.js";

const ordered: fc.Arbitrary<Ordered> = fc.record({
  pathType: fc.constantFrom("Exact" as const, "PathPrefix" as const),
  path: fc.string({ maxLength: 1024 }),
  headerCount: fc.integer({ min: 0, max: 16 }),
  rank: fc.integer({ min: 0, max: 2 ** 24 - 1 }),
  rule: fc.integer({ min: 0, max: 15 }),
  match: fc.integer({ min: 0, max: 7 }),
});

describe("orderKey", () => {
  it("orders exactly as compareEntries, the Gateway API's precedence", () => {
    fc.assert(
      fc.property(ordered, ordered, (a, b) => {
        expect(Math.sign(orderKey(a) - orderKey(b))).toBe(Math.sign(compareEntries(a, b)));
      }),
      { numRuns: 5000 },
    );
  });

  it("is an exact integer at its largest", () => {
    const k = orderKey({
      pathType: "PathPrefix",
      path: "",
      headerCount: 0,
      rank: 2 ** 24 - 1,
      rule: 31,
      match: 15,
    });
    expect(Number.isSafeInteger(k)).toBe(true);
  });
});
