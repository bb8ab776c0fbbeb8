// The ADS form of Envoy's resources: the route configuration gRPC's client can
// read routes every path exactly as the builder's does.

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { EnvoyRoute, RouteConfiguration } from "../envoy/envoy-resources.js";
import type { EnvoyPathMatch } from "../routing/path-match.js";
import { adsRouteConfiguration } from "./envoy.js";

/** Envoy's (and gRPC's) semantics of a path specifier on a path without query. */
function matches(m: Readonly<Record<string, unknown>>, path: string): boolean {
  if (typeof m.path === "string") return path === m.path;
  if (typeof m.prefix === "string") return path.startsWith(m.prefix);
  const p = m.path_separated_prefix as string;
  return path === p || path.startsWith(`${p}/`);
}

describe("the route configuration served over ADS (which gRPC's client reads)", () => {
  const seg = fc.constantFrom("a", "b", "ab", "echo.Echo");
  const pathArb = fc.array(seg, { minLength: 1, maxLength: 3 }).map((s) => `/${s.join("/")}`);
  const matchArb: fc.Arbitrary<EnvoyPathMatch> = fc.oneof(
    pathArb.map((p) => ({ path_separated_prefix: p })),
    pathArb.map((p) => ({ path: p })),
    fc.constant({ prefix: "/" as const }),
  );

  it("routes every path to the same route as the builder's, and never uses path_separated_prefix", () => {
    fc.assert(
      fc.property(fc.array(matchArb, { minLength: 1, maxLength: 6 }), pathArb, (ms, path) => {
        const routes: EnvoyRoute[] = ms.map((match, i) => ({
          name: `r${i}`,
          match,
          route: { cluster: `c${i}` },
        }));
        const rc: RouteConfiguration = {
          "@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
          name: "edge",
          virtual_hosts: [{ name: "h", domains: ["h"], routes }],
        };
        const out = adsRouteConfiguration(rc).virtual_hosts?.[0]?.routes ?? [];
        expect(out.some((r) => "path_separated_prefix" in r.match)).toBe(false);
        const before = routes.find((r) => matches(r.match, path))?.name;
        const after = out.find((r) => matches(r.match, path))?.name;
        expect(after).toBe(before);
      }),
      { numRuns: 1000 },
    );
  });

  it("adds a catch-all virtual host without routes only when there is none", () => {
    const rc = (domains: string[]): RouteConfiguration => ({
      "@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
      name: "edge",
      virtual_hosts: domains.map((d) => ({ name: d, domains: [d], routes: [] })),
    });
    expect(adsRouteConfiguration(rc(["a.example.com"])).virtual_hosts?.map((v) => v.domains)).toEqual([
      ["a.example.com"],
      ["*"],
    ]);
    expect(adsRouteConfiguration(rc(["*"])).virtual_hosts?.map((v) => v.domains)).toEqual([["*"]]);
  });
});
