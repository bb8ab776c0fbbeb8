// What the ADS server serves, against the rules of Envoy's protos as
// go-control-plane compiles them (protoc-gen-validate's ValidateAll, on each
// resource and on every Any inside it): the repo's own decoder checks shapes
// and field names, not rules such as "at least one cluster". The golden cases
// are checked as their golden files hold them (what Envoy and a gRPC client
// receive, test/golden/xds/CASE/envoy.json and grpc.json), which
// test/unit/xds.golden.test.ts keeps equal to what is served, byte for byte.

import { describe, expect, it } from "vitest";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import type { Snapshot } from "../../src/translate/snapshot.js";
import { encodeResource } from "../../src/dataplane/xds/proto-codec.js";
import { apiListenerResource, XdsEncoder } from "../../src/dataplane/xds/resources.js";
import { isApiListenerName } from "../../src/translate/grpc.js";
import { syntheticInput } from "../fixtures/synthetic-routes.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { goldenCases, XDS_GOLDEN_DIR } from "../golden/xds-cases.js";
import type { Received } from "../golden/xds-received.js";
import fc from "fast-check";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import { validateRoute } from "../../src/rules/validate.js";
import { policyRule, SERVICES } from "../fixtures/filter-arbitraries.js";
import { adsSnapshot, endpoints, NS, PORT } from "../xds/fixtures.js";
import { validateResources, type ResourceToValidate } from "../harness/xds-go.js";
import { goClientSnapshot } from "./xds-go-routes.js";

const UNNAMED_HOST = "nowhere.example.net";

/** The host names a gRPC client could ask for: each exact domain, one name under each wildcard, and one no route names. */
function askedHosts(snapshot: Snapshot): string[] {
  const hosts = new Set<string>([UNNAMED_HOST]);
  for (const rc of snapshot.resources.routeConfigurations)
    for (const vh of rc.virtual_hosts ?? [])
      for (const d of vh.domains) {
        const host = d.startsWith("*.") ? `any${d.slice(1)}` : d;
        if (isApiListenerName(host)) hosts.add(host);
      }
  return [...hosts];
}

/** Everything the ADS server can serve for the snapshot: each type's list, and each asked host's listener and routes. */
function served(snapshot: Snapshot): ResourceToValidate[] {
  const xds = new XdsEncoder().encode(snapshot);
  const out: ResourceToValidate[] = [];
  for (const type of xds.types.values())
    for (const r of type.list) out.push({ typeUrl: r.any.type_url, value: r.any.value, name: r.name });
  for (const host of askedHosts(snapshot))
    for (const r of [apiListenerResource(host), xds.hostRoutes(host)])
      out.push({ typeUrl: r.any.type_url, value: r.any.value, name: `${r.name} (asked as ${host})` });
  return out;
}

/** A resource in proto3 JSON form, encoded by the repo's encoder (which checks names, not rules). */
function encoded(name: string, json: Readonly<Record<string, unknown>> & { readonly "@type": string }) {
  const any = encodeResource(json);
  return { typeUrl: any.type_url, value: any.value, name };
}

async function expectAllValid(snapshot: Snapshot): Promise<void> {
  const resources = served(snapshot);
  const types = new Set(resources.map((r) => r.typeUrl));
  expect([...types].sort()).toEqual(
    [TYPE_URL.cluster, TYPE_URL.clusterLoadAssignment, TYPE_URL.listener, TYPE_URL.routeConfiguration].sort(),
  );
  expect(await validateResources(resources)).toEqual([]);
}

describe("served resources against Envoy's validation rules (xds-go validate)", () => {
  for (const name of goldenCases())
    it(`golden case ${name}: what Envoy and a gRPC client receive`, async () => {
      const resources: ResourceToValidate[] = [];
      for (const file of ["envoy.json", "grpc.json"]) {
        const golden = JSON.parse(readFileSync(join(XDS_GOLDEN_DIR, name, file), "utf8")) as Received;
        for (const list of Object.values(golden.resources))
          for (const r of list)
            resources.push(encoded(`${file} ${r.name}`, r.resource as { readonly "@type": string }));
      }
      expect(resources.length).toBeGreaterThanOrEqual(4);
      expect(await validateResources(resources)).toEqual([]);
    });

  it("the snapshot xds-go-client.test.ts serves (prefix, headers, weights, a timeout), and its switched one", async () => {
    const ports = { blue: 50001, green: 50002, slow: 50003 };
    await expectAllValid(goClientSnapshot(ports));
    await expectAllValid(goClientSnapshot(ports, "green"));
  });

  it("200 synthetic routes (canaries, header matches, timeouts)", async () => {
    const { routes, endpoints } = syntheticInput(200, 10, 10);
    await expectAllValid(adsSnapshot(routes, endpoints));
  });

  it("300 generated routes with filters, policies and richer matches that admission accepts, in one snapshot", async () => {
    const rules = fc.sample(fc.array(policyRule, { minLength: 1, maxLength: 4 }), { numRuns: 300, seed: 26 });
    const routes = rules
      .map((rs, i): EdgeRouteV2 => ({
        apiVersion: "net.10xdev.io/v2",
        kind: "EdgeRoute",
        metadata: { namespace: NS, name: `r${i}`, creationTimestamp: "2026-01-01T00:00:00Z" },
        spec: {
          hostnames: [`h${i % 7}.example.com`],
          rules: rs.map((r) => ({
            ...r,
            backends: r.backends.map((b) => ({ ...b, port: PORT })),
            filters: r.filters?.map((f) =>
              f.type === "RequestMirror"
                ? {
                    ...f,
                    requestMirror: {
                      ...f.requestMirror,
                      backend: { ...f.requestMirror.backend, port: PORT },
                    },
                  }
                : f,
            ),
          })),
        },
      }))
      .filter((r) => validateRoute(r, "v2").length === 0);
    expect(routes.length).toBeGreaterThan(20);
    const snapshot = adsSnapshot(
      routes,
      endpoints(Object.fromEntries(SERVICES.map((s, i) => [s, [50100 + i]]))),
    );
    expect(snapshot.outcomes.filter((o) => !o.accepted)).toEqual([]);
    await expectAllValid(snapshot);
  });

  it("fails what breaks a rule, and names the field (and the Any it is in)", async () => {
    const nameless = encoded("nameless", {
      "@type": TYPE_URL.cluster,
      name: "",
      type: "EDS",
      connect_timeout: "5s",
      eds_cluster_config: { eds_config: { ads: {}, resource_api_version: "V3" } },
    });
    const noClusters = encoded("no-clusters", {
      "@type": TYPE_URL.routeConfiguration,
      name: "edge",
      virtual_hosts: [
        {
          name: "shop",
          domains: ["shop.example.com"],
          routes: [{ match: { prefix: "/" }, route: { weighted_clusters: { clusters: [] } } }],
        },
      ],
    });
    // The rule broken is inside the HttpConnectionManager, an Any in the listener.
    const badHcm = encoded("bad-hcm", {
      "@type": TYPE_URL.listener,
      name: "shop.example.com",
      api_listener: {
        api_listener: {
          "@type": TYPE_URL.httpConnectionManager,
          stat_prefix: "",
          rds: { config_source: { ads: {} }, route_config_name: "edge" },
          http_filters: [{ name: "envoy.filters.http.router", typed_config: { "@type": TYPE_URL.router } }],
        },
      },
    });
    const good = apiListenerResource("shop.example.com").any;
    const failures = await validateResources([
      nameless,
      { typeUrl: good.type_url, value: good.value, name: "good" },
      noClusters,
      badHcm,
      { typeUrl: "type.googleapis.com/envoy.config.nope.v3.Nope", value: new Uint8Array(), name: "unknown" },
    ]);
    expect(failures.map((f) => f.name)).toEqual(["nameless", "no-clusters", "bad-hcm", "unknown"]);
    const [cluster, weights, hcm, unknown] = failures.map((f) => f.error);
    expect(cluster).toMatch(/Cluster\.Name: value length must be at least 1/);
    expect(weights).toMatch(/WeightedCluster\.Clusters: value must contain at least 1 item/);
    expect(hcm).toMatch(/^api_listener\.api_listener: .*HttpConnectionManager: .*StatPrefix/);
    expect(unknown).toMatch(/unknown type "type\.googleapis\.com\/envoy\.config\.nope\.v3\.Nope"/);
  });
});
