import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../api/types.js";
import { ageOrder, compareEntries, creationTime, keyOrder, orderKey, type Ordered } from "./route-order.js";

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

describe("keyOrder and ageOrder", () => {
  // Namespaces that prefix one another, missing fields, ties; with a "/", the fallback.
  const routeArb = (slash: boolean) =>
    fc.record({
      namespace: fc.constantFrom("a", "a-b", "ab", "a0", "", undefined, ...(slash ? ["a/b"] : [])),
      name: fc.constantFrom("x", "x-y", "y", undefined),
      creationTimestamp: fc.constantFrom("2025-01-01T00:00:00Z", "2025-01-02T00:00:00Z", "bad", undefined),
    });

  it.each([false, true])("rank as plain sorts do (a namespace with a slash: %s)", (slash) => {
    fc.assert(
      fc.property(fc.array(routeArb(slash), { maxLength: 30 }), (metas) => {
        const routes = metas.map((metadata) => ({ metadata }) as unknown as EdgeRouteV2);
        const keys = metas.map((m) => `${m.namespace ?? ""}/${m.name ?? ""}`);
        const created = Float64Array.from(metas.map((m) => creationTime(m.creationTimestamp)));
        const byKey = metas
          .map((_, i) => i)
          .sort((a, b) =>
            keys[a] !== keys[b]
              ? (keys[a] as string) < (keys[b] as string)
                ? -1
                : 1
              : (created[a] as number) !== (created[b] as number)
                ? (created[a] as number) < (created[b] as number)
                  ? -1
                  : 1
                : a - b,
          );
        expect(keyOrder(routes, keys, created)).toEqual(byKey);
        const byAge = [...byKey].sort(
          (a, b) => Math.sign((created[a] as number) - (created[b] as number)) || 0,
        );
        expect(ageOrder(byKey, created)).toEqual(byAge);
      }),
      { numRuns: 500 },
    );
  });
});
