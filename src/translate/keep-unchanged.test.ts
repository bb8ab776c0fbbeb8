// A build that keeps the last build's unchanged objects is the build that
// does not: same resources, same version, same bytes served. Checked over
// generated sequences of route sets and over the golden cases in turn (TLS
// hosts share virtual hosts between `edge` and `https/HOST`).

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { goldenCases, goldenInput, GOLDEN_NOW } from "../../test/golden/xds-cases.js";
import type { EdgeRouteV2, RouteRule } from "../api/types.js";
import { XdsEncoder, type XdsSnapshot } from "../dataplane/xds/resources.js";
import { endpoints, NS, PORT } from "../../test/xds/fixtures.js";
import { keepUnchanged, sameJson } from "./keep-unchanged.js";
import { buildSnapshot, type Snapshot, type SnapshotOptions } from "./snapshot.js";

const ADS: SnapshotOptions = { configSource: { kind: "ads" }, now: GOLDEN_NOW };

// Services a and b on PORT; "missing" and port 81 do not exist.
const services = endpoints({ a: [8080], b: [8081] });

const ruleArb: fc.Arbitrary<RouteRule> = fc.record({
  matches: fc.array(
    fc.record({
      path: fc.record({
        type: fc.constantFrom("PathPrefix" as const, "Exact" as const),
        value: fc.constantFrom("/", "/a", "/a/", "/b"),
      }),
    }),
    { minLength: 1, maxLength: 2 },
  ),
  backends: fc.array(
    fc.record({ name: fc.constantFrom("a", "b", "missing"), port: fc.constantFrom(PORT, 81) }),
    { minLength: 1, maxLength: 2 },
  ),
  timeout: fc.option(fc.constantFrom("1s", "15s"), { nil: undefined }),
});

const routesArb: fc.Arbitrary<EdgeRouteV2[]> = fc
  .uniqueArray(
    fc.record({
      name: fc.constantFrom("r1", "r2", "r3", "r4", "r5"),
      day: fc.integer({ min: 1, max: 3 }),
      hostnames: fc.uniqueArray(fc.constantFrom("x.example.com", "*.example.com", "y.example.com"), {
        maxLength: 2,
      }),
      rules: fc.array(ruleArb, { minLength: 1, maxLength: 2 }),
    }),
    { selector: (r) => r.name, maxLength: 6 },
  )
  .map((rs) =>
    rs.map((r): EdgeRouteV2 => ({
      apiVersion: "net.10xdev.io/v2",
      kind: "EdgeRoute",
      metadata: { namespace: NS, name: r.name, creationTimestamp: `2025-01-0${r.day}T00:00:00Z` },
      spec: { hostnames: r.hostnames, rules: r.rules.map((rule) => JSON.parse(JSON.stringify(rule))) },
    })),
  );

/** What a client can be sent of an encoded snapshot, as plain data. */
function served(x: XdsSnapshot): unknown {
  const hosts = [...x.clustersOfDomain.keys(), "other.example.com"];
  return {
    version: x.version,
    types: [...x.types].map(([url, t]) => [
      url,
      t.digest,
      t.list.map((r) => [r.name, r.version, Buffer.from(r.any.value).toString("base64")]),
    ]),
    clustersOfDomain: [...x.clustersOfDomain],
    routesOfDomain: [...x.routesOfDomain],
    routes: x.routes,
    hostRoutes: hosts.map((h) => [h, x.hostRoutes(h).version]),
    plainTypes: [...x.plain.types].map(([url, t]) => [url, t.digest]),
  };
}

describe("keepUnchanged", () => {
  it("a build on top of the last one equals a build from nothing, and so does what is served of it", () => {
    fc.assert(
      fc.property(fc.array(routesArb, { minLength: 2, maxLength: 5 }), (steps) => {
        const kept = new XdsEncoder();
        let previous: Snapshot | undefined;
        for (const routes of steps) {
          const fresh = buildSnapshot(routes, services, ADS);
          const next = buildSnapshot(routes, services, ADS, undefined, previous);
          expect(next).toEqual(fresh);
          expect(JSON.stringify(next.resources)).toBe(JSON.stringify(fresh.resources));
          expect(served(kept.encode(next))).toEqual(served(new XdsEncoder().encode(fresh)));
          previous = next;
        }
      }),
      { numRuns: 200 },
    );
  });

  it("the golden cases one after another, TLS hosts among them", () => {
    const cases = goldenCases();
    const kept = new XdsEncoder();
    let previous: Snapshot | undefined;
    // Each case after every other: hosts appear, change and go, with and without TLS.
    for (const name of [...cases, ...cases.reverse(), cases[0] as string]) {
      const { routes, endpoints, secrets } = goldenInput(name);
      const fresh = buildSnapshot(routes, endpoints, ADS, secrets);
      const next = buildSnapshot(routes, endpoints, ADS, secrets, previous);
      expect(JSON.stringify(next.resources), name).toBe(JSON.stringify(fresh.resources));
      expect(next.version, name).toBe(fresh.version);
      expect(served(kept.encode(next)), name).toEqual(served(new XdsEncoder().encode(fresh)));
      previous = next;
    }
  });

  it("keeps the objects of the virtual hosts, entries and clusters that did not change, and only those", () => {
    const route = (name: string, host: string, path: string, service: string): EdgeRouteV2 => ({
      apiVersion: "net.10xdev.io/v2",
      kind: "EdgeRoute",
      metadata: { namespace: NS, name, creationTimestamp: "2025-01-01T00:00:00Z" },
      spec: {
        hostnames: [host],
        rules: [
          {
            matches: [{ path: { type: "PathPrefix", value: path } }],
            backends: [{ name: service, port: PORT }],
          },
        ],
      },
    });
    const x = route("x", "x.example.com", "/x", "a");
    const z = route("z", "y.example.com", "/z", "b");
    const one = buildSnapshot([x, route("y", "y.example.com", "/y", "b"), z], services);
    const two = buildSnapshot([x, route("y", "y.example.com", "/y2", "b"), z], services, {}, undefined, one);
    const hosts = (s: Snapshot) => s.resources.routeConfigurations[0]?.virtual_hosts ?? [];
    const [x1, y1] = hosts(one);
    const [x2, y2] = hosts(two);
    expect(x2).toBe(x1);
    expect(y2).not.toBe(y1);
    // In the changed host, z's entry is the one it had; y's is new.
    const entry = (vh: typeof y1, name: string) => vh?.routes.find((r) => r.name === name);
    expect(entry(y2, `${NS}/z/r0/m0`)).toBe(entry(y1, `${NS}/z/r0/m0`));
    expect(entry(y2, `${NS}/y/r0/m0`)).not.toBe(entry(y1, `${NS}/y/r0/m0`));
    expect(two.resources.clusters).toEqual(one.resources.clusters);
    two.resources.clusters.forEach((c, i) => expect(c).toBe(one.resources.clusters[i]));
    expect(two.version).not.toBe(one.version);
  });

  it("without a last build, hands back the build as it is", () => {
    const s = buildSnapshot([], services);
    expect(keepUnchanged(s.resources, undefined)).toBe(s.resources);
  });
});

describe("sameJson", () => {
  it("is JSON.stringify's equality, key order included", () => {
    const json = fc.jsonValue({ maxDepth: 3 });
    fc.assert(
      fc.property(json, json, (a, b) => {
        expect(sameJson(a, b)).toBe(JSON.stringify(a) === JSON.stringify(b));
        expect(sameJson(a, JSON.parse(JSON.stringify(a)))).toBe(true);
      }),
      { numRuns: 2000 },
    );
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
  });
});
