import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ServiceIndex } from "./service-index.js";

describe("ServiceIndex", () => {
  it("follows a route as its backends change and when it goes", () => {
    const idx = new ServiceIndex();
    idx.setRoute("a/r1", ["a/web", "a/api"]);
    idx.setRoute("a/r2", ["a/web"]);
    expect(idx.routesFor("a/web")).toEqual(["a/r1", "a/r2"]);
    idx.setRoute("a/r1", ["a/api"]);
    expect(idx.routesFor("a/web")).toEqual(["a/r2"]);
    expect(idx.routesFor("a/api")).toEqual(["a/r1"]);
    idx.deleteRoute("a/r2");
    expect(idx.routesFor("a/web")).toEqual([]);
    expect(idx.routesFor("b/web")).toEqual([]);
  });

  it("after any sequence of updates, answers as a scan of the latest routes would", () => {
    const routeKey = fc.constantFrom("a/r1", "a/r2", "a/r3", "a/r4");
    const svc = fc.constantFrom("a/s1", "a/s2", "a/s3");
    const op = fc.oneof(
      fc.record({ route: routeKey, services: fc.uniqueArray(svc, { maxLength: 3 }) }),
      fc.record({ route: routeKey, services: fc.constant(null) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 40 }), (ops) => {
        const idx = new ServiceIndex();
        const truth = new Map<string, string[]>();
        for (const o of ops) {
          if (o.services === null) {
            idx.deleteRoute(o.route);
            truth.delete(o.route);
          } else {
            idx.setRoute(o.route, o.services);
            truth.set(o.route, o.services);
          }
        }
        for (const s of ["a/s1", "a/s2", "a/s3"]) {
          const expected = [...truth]
            .filter(([, ss]) => ss.includes(s))
            .map(([r]) => r)
            .sort();
          expect(idx.routesFor(s)).toEqual(expected);
        }
      }),
    );
  });
});
