// Every resource the snapshot builder makes, for every golden case, decoded with
// Envoy's own protos and re-encoded with nothing lost.

import { beforeAll, describe, expect, it } from "vitest";
import { EnvoyProtos } from "../../test/envoy/envoy-proto.js";
import { goldenCases, goldenSnapshot } from "../../test/golden/xds-cases.js";
import { buildSnapshot } from "./snapshot.js";

let protos: EnvoyProtos;
beforeAll(() => {
  protos = EnvoyProtos.load();
});

describe("generated resources against Envoy's protos", () => {
  for (const name of goldenCases()) {
    it(`${name}: every resource decodes and round-trips`, () => {
      const { resources } = goldenSnapshot(name);
      const all = [
        ...resources.listeners,
        ...resources.routeConfigurations,
        ...resources.clusters,
        ...resources.clusterLoadAssignments,
        ...resources.secrets,
      ];
      expect(all.length).toBeGreaterThan(0);
      for (const resource of all) {
        expect(protos.check(resource["@type"], resource)).toEqual([]);
        expect(protos.roundTrip(resource["@type"], resource)).toEqual(resource);
      }
    });
  }

  it("the ADS config source is valid too", () => {
    const { resources } = buildSnapshot([], new Map(), {
      configSource: { kind: "ads" },
      listener: { port: 10000 },
    });
    const [listener] = resources.listeners;
    expect(protos.roundTrip(listener!["@type"], listener)).toEqual(listener);
  });
});

describe("the checker itself", () => {
  const match = (m: object) => ({
    "@type": "type.googleapis.com/envoy.config.route.v3.RouteConfiguration",
    name: "edge",
    virtual_hosts: [
      { name: "h", domains: ["*"], routes: [{ match: m, route: { cluster: "c", timeout: "1.500s" } }] },
    ],
  });

  it("accepts a good route and keeps the fractional duration", () => {
    const good = match({ path_separated_prefix: "/api" });
    expect(protos.check(good["@type"], good)).toEqual([]);
    expect(protos.roundTrip(good["@type"], good)).toEqual(good);
  });

  it("catches a misspelt field, a trailing slash Envoy refuses, two oneof members and a missing one", () => {
    const problems = (m: object) =>
      protos.check("envoy.config.route.v3.RouteConfiguration", match(m)).join("\n");
    expect(problems({ path_seperated_prefix: "/api" })).toMatch(/unknown field/);
    expect(problems({ path_separated_prefix: "/api/" })).toMatch(/does not match/);
    expect(problems({ prefix: "/", path: "/x" })).toMatch(/oneof path_specifier has/);
    expect(problems({})).toMatch(/oneof path_specifier is required/);
  });

  it("catches wrong value types and bad enums", () => {
    const cluster = {
      "@type": "type.googleapis.com/envoy.config.cluster.v3.Cluster",
      name: "c",
      type: "EDSS",
      connect_timeout: 5,
    };
    const problems = protos.check(cluster["@type"], cluster).join("\n");
    expect(problems).toMatch(/"EDSS" is not a value/);
    expect(problems).toMatch(/5 is not a Duration/);
  });
});
