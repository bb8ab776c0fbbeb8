// Two validators read an EdgeRoute's spec: admission's (validate.ts: the CRD
// schema through ajv plus the rules a schema cannot say) and the reconcile's
// shape check (routing/route-check.ts: what would make the Envoy config
// invalid, for routes stored without the webhook). They are kept apart on
// purpose: the shape check is the hot path of every snapshot and is lenient
// where Envoy is (a header named twice claims by its first condition). This
// test holds them together over generated routes, right and wrong:
//  - a spec admission accepts, the shape check accepts;
//  - every spec field the shape check refuses, admission refuses too, at the
//    same path or one above or below it.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2 } from "../api/types.js";
import { shapeErrors } from "../routing/route-check.js";
import { roughRouteV2, routeV2 } from "../../test/fixtures/route-arbitraries.js";
import { validateRoute } from "./validate.js";

const related = (a: string, b: string): boolean =>
  a === b || a.startsWith(`${b}.`) || a.startsWith(`${b}[`) || b.startsWith(`${a}.`) || b.startsWith(`${a}[`);

function specPaths(route: EdgeRouteV2): string[] {
  return shapeErrors(route)
    .map((e) => e.path)
    .filter((p) => p === "spec" || p.startsWith("spec."));
}

describe("admission's validator and the reconcile's shape check", () => {
  it("agree on every generated route: admission's yes is the shape check's yes, and the shape check's no is admission's no", () => {
    let accepted = 0;
    let refused = 0;
    fc.assert(
      fc.property(fc.oneof(roughRouteV2, routeV2), (route) => {
        const admission = validateRoute(route, "v2").map((e) => e.path);
        const shape = specPaths(route);
        if (admission.length === 0) {
          accepted++;
          expect(shape).toEqual([]);
        }
        if (shape.length > 0) refused++;
        for (const p of shape)
          expect(
            admission.some((a) => related(a, p)),
            `${p} in ${admission}`,
          ).toBe(true);
      }),
      { numRuns: 5000 },
    );
    // Both answers must be exercised for the agreement to mean anything.
    expect(accepted).toBeGreaterThan(250);
    expect(refused).toBeGreaterThan(250);
  });
});
