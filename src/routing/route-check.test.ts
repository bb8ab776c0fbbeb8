import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../api/types.js";
import { roughRouteV2 as routeArb, routeV2 } from "../../test/fixtures/route-arbitraries.js";
import { checkRoute, isWellShaped, shapeErrors } from "./route-check.js";

describe("route checks", () => {
  it("the fast path agrees with the full field-error walk on every input", () => {
    let valid = 0;
    fc.assert(
      // Rough routes alone are about 6% well shaped (263-326 of 5,000 over 40
      // seeds), too near any bound; with whole routes half of the time,
      // 2,581-2,713 are.
      fc.property(fc.oneof(routeArb, routeV2), (route) => {
        const fast = isWellShaped(route);
        if (fast) valid++;
        expect(fast).toBe(shapeErrors(route).length === 0);
      }),
      { numRuns: 5000 },
    );
    // Both answers must be exercised for the agreement to mean anything.
    expect(valid).toBeGreaterThan(250);
    expect(valid).toBeLessThan(4750);
  });

  it("too many rules, or a rule with only zero weights, is refused with its path", () => {
    const rule = { matches: [{ path: { value: "/" } }], backends: [{ name: "svc", port: 80, weight: 0 }] };
    const route = {
      metadata: { namespace: "ns", name: "r" },
      spec: { rules: Array.from({ length: 17 }, () => rule) },
    } as unknown as EdgeRouteV2;
    const messages = shapeErrors(route).map((e) => `${e.path}: ${e.type}`);
    expect(messages).toContain("spec.rules: Too many");
    expect(messages).toContain("spec.rules[16].backends: Invalid value");
  });

  it("never throws, and a refusal names field paths", () => {
    fc.assert(
      fc.property(routeArb, (route) => {
        const check = checkRoute(route, new Map([["ns/svc", { ports: [{ port: 80, addresses: [] }] }]]));
        if (!check.ok && check.reason === "Invalid") expect(check.message).toMatch(/^(metadata|spec)\b/);
      }),
      { numRuns: 2000 },
    );
  });
});
