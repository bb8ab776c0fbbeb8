import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../api/types.js";
import { checkRoute, isWellShaped, shapeErrors } from "./route-check.js";

// Routes that are mostly right, with a wrong part here and there: the shapes a
// webhook-less cluster or a bug upstream could hand the builder.
const maybe = <T>(good: fc.Arbitrary<T>): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 60, arbitrary: good },
    { weight: 1, arbitrary: fc.constantFrom(undefined, null, 7, "x", [], {}) },
  );
/** Mostly a good value, sometimes a bad one. */
const pick = (good: readonly unknown[], bad: readonly unknown[]): fc.Arbitrary<unknown> =>
  fc.oneof(
    { weight: 40, arbitrary: fc.constantFrom(...good) },
    { weight: 1, arbitrary: fc.constantFrom(...bad) },
  );

const routeArb = fc.record({
  apiVersion: fc.constant("net.10xdev.io/v2"),
  kind: fc.constant("EdgeRoute"),
  metadata: fc.record({ namespace: maybe(fc.constant("ns")), name: maybe(fc.constant("r")) }),
  spec: maybe(
    fc.record({
      hostnames: maybe(fc.array(pick(["a.example.com", "*.example.com"], ["Bad_Host"]), { maxLength: 2 })),
      rules: maybe(
        fc.array(
          maybe(
            fc.record({
              matches: maybe(
                fc.array(
                  maybe(
                    fc.record({
                      path: maybe(
                        fc.record({
                          type: pick(["Exact", "PathPrefix", undefined], ["Regex"]),
                          value: pick(["/", "/a"], ["/a?b", "a", "/" + "x".repeat(1100)]),
                        }),
                      ),
                      headers: maybe(
                        fc.oneof(
                          fc.array(
                            maybe(
                              fc.record({
                                name: pick(["x-a"], ["bad header"]),
                                value: maybe(fc.constant("1")),
                              }),
                            ),
                            { maxLength: 2 },
                          ),
                          fc.array(fc.constant({ name: "x-a", value: "1" }), {
                            minLength: 17,
                            maxLength: 17,
                          }),
                        ),
                      ),
                    }),
                  ),
                  { minLength: 1, maxLength: 3 },
                ),
              ),
              backends: maybe(
                fc.array(
                  maybe(
                    fc.record({
                      name: pick(["svc"], [""]),
                      port: pick([80], [0, 70000]),
                      weight: pick([undefined, 1, 0, 5], [-1, 1.5]),
                    }),
                  ),
                  { minLength: 1, maxLength: 3 },
                ),
              ),
              timeout: pick([undefined, "1s", "1m30s"], ["1s1s", "soon"]),
            }),
          ),
          { minLength: 1, maxLength: 3 },
        ),
      ),
    }),
  ),
}) as fc.Arbitrary<unknown> as fc.Arbitrary<EdgeRouteV2>;

describe("route checks", () => {
  it("the fast path agrees with the full field-error walk on every input", () => {
    let valid = 0;
    fc.assert(
      fc.property(routeArb, (route) => {
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
