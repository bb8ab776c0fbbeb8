import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { ServiceIndex, referencedServices, serviceOfEndpointSlice } from "./service-index.js";

const route = (namespace: string, name: string, backends: string[][]) => ({
  metadata: { namespace, name },
  spec: {
    rules: backends.map((names) => ({
      matches: [{ path: { value: "/" } }],
      backends: names.map((n) => ({ name: n, port: 80 })),
    })),
  },
});

describe("referencedServices", () => {
  it("takes every backend of every rule, qualified by the route's namespace, once", () => {
    expect(
      referencedServices(
        route("shop", "r1", [
          ["checkout", "canary"],
          ["checkout", "api"],
        ]),
      ),
    ).toEqual(["shop/api", "shop/canary", "shop/checkout"]);
  });

  it("reads a v1-shaped spec's service", () => {
    expect(referencedServices({ metadata: { namespace: "a", name: "r" }, spec: { service: "web" } })).toEqual(
      ["a/web"],
    );
  });

  it("gives nothing for malformed objects rather than throwing", () => {
    for (const bad of [
      {},
      { metadata: { namespace: "a" } },
      { metadata: { namespace: "a" }, spec: { rules: "x" } },
      { metadata: { namespace: "a" }, spec: { rules: [null, { backends: [1, { name: 2 }, {}] }] } },
      { metadata: { namespace: 3 }, spec: { rules: [{ backends: [{ name: "x" }] }] } },
    ]) {
      expect(referencedServices(bad)).toEqual([]);
    }
  });
});

describe("serviceOfEndpointSlice", () => {
  it("reads the kubernetes.io/service-name label", () => {
    const slice = {
      metadata: { namespace: "a", name: "web-x1", labels: { "kubernetes.io/service-name": "web" } },
    };
    expect(serviceOfEndpointSlice(slice)).toBe("a/web");
    expect(serviceOfEndpointSlice({ metadata: { namespace: "a", name: "orphan" } })).toBeUndefined();
  });
});

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
