// What the xds sink serves, against Envoy's own protos and against the
// builder's meaning: every served resource is a valid Envoy message that
// decodes back to what was meant, each host's route configuration holds the
// virtual host it lands on, and unchanged resources keep their bytes.

import { beforeAll, describe, expect, it } from "vitest";
import { EnvoyProtos } from "../../../test/envoy/envoy-proto.js";
import { goldenCases, goldenSnapshot } from "../../../test/golden/xds-cases.js";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { decodeResource, encodeResource } from "./proto-codec.js";
import { domainFor, grpcVirtualHost, isApiListenerName } from "../../translate/grpc.js";
import type { AdsVirtualHost } from "../../translate/envoy.js";
import { XdsEncoder } from "./resources.js";

let protos: EnvoyProtos;
beforeAll(() => {
  protos = EnvoyProtos.load();
});

/** As proto3 JSON writes it back: a virtual host left no routes has no `routes`. */
function withoutEmptyRoutes(vh: AdsVirtualHost): unknown {
  if (vh.routes.length > 0) return vh;
  const { routes: _, ...rest } = vh;
  return rest;
}

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
    it(`${name}: each host's route configuration is valid and holds the virtual host that host lands on in Envoy's, in gRPC's form`, () => {
      const served = new XdsEncoder().encode(goldenSnapshot(name));
      // A TLS host lands on its HTTPS virtual host (`https/HOST`, after `edge`): its real
      // routes, never the plain listener's redirect, which a gRPC client would follow nowhere.
      const hosts = (served.types.get(TYPE_URL.routeConfiguration)?.list ?? []).flatMap(
        (rc) => (decodeResource(rc.any).virtual_hosts ?? []) as { domains: string[] }[],
      );
      const byDomain = new Map(hosts.flatMap((vh) => vh.domains.map((d) => [d, vh] as const)));
      const asked = [...byDomain.keys()].filter(isApiListenerName).concat("nowhere.example.net");
      for (const host of asked) {
        const r = served.hostRoutes(host);
        expect(r.name).toBe(`edge/${host}`);
        const json = decodeResource(r.any);
        expect(protos.check(r.any.type_url, json)).toEqual([]);
        const decoded = byDomain.get(domainFor(host, byDomain)!) as unknown as AdsVirtualHost;
        const envoys = { ...decoded, routes: decoded.routes ?? [] };
        expect(json.virtual_hosts).toEqual([withoutEmptyRoutes(grpcVirtualHost(envoys))]);
        // No redirect (gRPC NACKs one), no query match, no method but POST, and POST unsaid.
        expect(JSON.stringify(json)).not.toMatch(/"(https_)?redirect":/);
        expect(JSON.stringify(json)).not.toContain("query_parameters");
        expect(JSON.stringify(json)).not.toContain(":method");
        // Asked again: the same resource, not a copy.
        expect(served.hostRoutes(host)).toBe(r);
      }
    });
  }

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
