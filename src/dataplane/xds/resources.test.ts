// What the xds sink serves, against Envoy's own protos and against the
// builder's meaning: every served resource is a valid Envoy message that
// decodes back to what was meant, and the route configuration gRPC's client
// can read routes every path exactly as the builder's does.

import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { EnvoyProtos } from "../../../test/envoy/envoy-proto.js";
import { goldenCases, goldenSnapshot } from "../../../test/golden/xds-cases.js";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { TYPE_URL, type EnvoyRoute, type RouteConfiguration } from "../../envoy/envoy-resources.js";
import type { EnvoyPathMatch } from "../../routing/path-match.js";
import { decodeResource, encodeResource } from "./proto-codec.js";
import { apiListener, domainFor, grpcCompatibleRoutes, isApiListenerName, XdsEncoder } from "./resources.js";

let protos: EnvoyProtos;
beforeAll(() => {
  protos = EnvoyProtos.load();
});

describe("served resources against Envoy's protos", () => {
  for (const name of goldenCases()) {
    it(`${name}: each is valid, and its bytes decode back to its JSON`, () => {
      const served = new XdsEncoder().encode(goldenSnapshot(name));
      let count = 0;
      for (const [, type] of served.types)
        for (const r of type.list) {
          const json = decodeResource(r.any);
          expect(protos.check(r.any.type_url, json)).toEqual([]);
          expect(protos.roundTrip(r.any.type_url, json)).toEqual(json);
          count++;
        }
      expect(count).toBeGreaterThan(2);
    });
  }

  for (const name of goldenCases()) {
    it(`${name}: each host's route configuration is valid and holds the virtual host that host lands on in Envoy's`, () => {
      const served = new XdsEncoder().encode(goldenSnapshot(name));
      const [edge] = served.types.get(TYPE_URL.routeConfiguration)?.list ?? [];
      const hosts = (decodeResource(edge!.any).virtual_hosts ?? []) as { domains: string[] }[];
      const byDomain = new Map(hosts.flatMap((vh) => vh.domains.map((d) => [d, vh] as const)));
      const asked = [...byDomain.keys()].filter(isApiListenerName).concat("nowhere.example.net");
      for (const host of asked) {
        const r = served.hostRoutes(host);
        expect(r.name).toBe(`edge/${host}`);
        const json = decodeResource(r.any);
        expect(protos.check(r.any.type_url, json)).toEqual([]);
        expect(json.virtual_hosts).toEqual([byDomain.get(domainFor(host, byDomain)!)]);
        // Asked again: the same resource, not a copy.
        expect(served.hostRoutes(host)).toBe(r);
      }
    });
  }

  it("the API listener too", () => {
    const l = apiListener("shop.example.com");
    expect(protos.check(l["@type"], l)).toEqual([]);
    expect(decodeResource(encodeResource(l))).toEqual(protos.roundTrip(l["@type"], l));
  });

  it("a field Envoy does not have is an error naming its path, never dropped", () => {
    expect(() =>
      encodeResource({ "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster", nmae: "x" } as never),
    ).toThrow("Cluster.nmae: not a field of .envoy.config.cluster.v3.Cluster");
    expect(() =>
      encodeResource({
        "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
        connect_timeout: "5 s",
      } as never),
    ).toThrow('Cluster.connect_timeout: "5 s" is not a Duration');
  });

  it("an unchanged resource keeps its bytes and version from one snapshot to the next", () => {
    const enc = new XdsEncoder();
    const a = enc.encode(goldenSnapshot(goldenCases()[0] as string));
    const b = enc.encode(goldenSnapshot(goldenCases()[0] as string));
    for (const [url, type] of a.types) expect(b.types.get(url)?.digest).toBe(type.digest);
  });

  it("a host's route configuration keeps its version while its virtual host is unchanged, and only then", () => {
    const enc = new XdsEncoder();
    const routes = (path: string) => [
      edgeRoute(
        "a",
        ["a.example.com"],
        [{ matches: [{ path: { type: "PathPrefix", value: "/a" } }], backends: [{ name: "a", port: PORT }] }],
      ),
      edgeRoute(
        "b",
        ["b.example.com"],
        [{ matches: [{ path: { type: "PathPrefix", value: path } }], backends: [{ name: "b", port: PORT }] }],
      ),
    ];
    const eps = endpoints({ a: [1], b: [2] });
    const one = enc.encode(adsSnapshot(routes("/b"), eps));
    const [a1, b1] = [one.hostRoutes("a.example.com"), one.hostRoutes("b.example.com")];
    const two = enc.encode(adsSnapshot(routes("/b2"), eps));
    expect(two.hostRoutes("a.example.com")).toBe(a1);
    expect(two.hostRoutes("b.example.com").version).not.toBe(b1.version);
  });
});

/** Envoy's (and gRPC's) semantics of a path specifier on a path without query. */
function matches(m: Readonly<Record<string, unknown>>, path: string): boolean {
  if (typeof m.path === "string") return path === m.path;
  if (typeof m.prefix === "string") return path.startsWith(m.prefix);
  const p = m.path_separated_prefix as string;
  return path === p || path.startsWith(`${p}/`);
}

describe("the gRPC-readable route configuration", () => {
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
        const out = grpcCompatibleRoutes(rc).virtual_hosts?.[0]?.routes ?? [];
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
    expect(grpcCompatibleRoutes(rc(["a.example.com"])).virtual_hosts?.map((v) => v.domains)).toEqual([
      ["a.example.com"],
      ["*"],
    ]);
    expect(grpcCompatibleRoutes(rc(["*"])).virtual_hosts?.map((v) => v.domains)).toEqual([["*"]]);
  });

  it("picks a host's virtual host as Envoy and gRPC do: exact, then the longest wildcard suffix, then *", () => {
    const d = new Map([
      ["a.example.com", 1],
      ["*.example.com", 1],
      ["*.b.example.com", 1],
      ["*", 1],
    ]);
    expect(domainFor("a.example.com", d)).toBe("a.example.com");
    expect(domainFor("x.b.example.com", d)).toBe("*.b.example.com");
    expect(domainFor("c.example.com", d)).toBe("*.example.com");
    expect(domainFor("example.com", d)).toBe("*");
    expect(domainFor("example.com", new Map([["*.example.com", 1]]))).toBeUndefined();
  });
});
