// The TLS step of the model, through buildSnapshot: which route serves which
// host over HTTPS, what each route's TLS outcome says, and that the rest of
// the snapshot is as without TLS where no host is served.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { EdgeRouteV2, RouteTls } from "../api/types.js";
import { endpointsByService } from "../routing/service-endpoints.js";
import { buildSnapshot, type TlsSecret } from "./snapshot.js";

const FIXTURES = join(import.meta.dirname, "../../test/fixtures/tls");
const pair = (name: string): TlsSecret => ({
  certificate: readFileSync(join(FIXTURES, `${name}.crt`), "utf8"),
  privateKey: readFileSync(join(FIXTURES, `${name}.key`), "utf8"),
});
const NOW = new Date("2026-01-01T00:00:00Z");
const endpoints = endpointsByService(
  [{ metadata: { namespace: "ns", name: "web" }, spec: { ports: [{ port: 80, targetPort: 8080 }] } }],
  [
    {
      metadata: { namespace: "ns", name: "web-1", labels: { "kubernetes.io/service-name": "web" } },
      addressType: "IPv4",
      ports: [{ port: 8080 }],
      endpoints: [{ addresses: ["10.0.0.1"], conditions: { ready: true } }],
    },
  ],
);

function route(name: string, day: number, hostnames: string[], tls?: RouteTls, path = "/"): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { namespace: "ns", name, creationTimestamp: `2025-01-0${day}T00:00:00Z` },
    spec: {
      hostnames,
      ...(tls ? { tls } : {}),
      rules: [{ matches: [{ path: { value: path } }], backends: [{ name: "web", port: 80 }] }],
    },
  };
}

const build = (routes: EdgeRouteV2[], secrets: [string, TlsSecret][]) =>
  buildSnapshot(routes, endpoints, { now: NOW }, new Map(secrets));

describe("TLS hosts in the snapshot", () => {
  it("serves only the hosts tls.hostnames names, and says so only on routes with tls", () => {
    const s = build(
      [
        route("multi", 1, ["a.example.com", "b.example.com"], {
          secretName: "multi",
          hostnames: ["b.example.com"],
        }),
        route("plain", 1, ["c.example.com"]),
      ],
      [["ns/multi", pair("multi")]],
    );
    expect(s.outcomes.map((o) => [o.key, o.tls])).toEqual([
      ["ns/multi", { refs: { resolved: true }, served: ["b.example.com"], notServed: [] }],
      ["ns/plain", undefined],
    ]);
    expect(s.resources.listeners[1]?.filter_chains.map((c) => c.filter_chain_match?.server_names)).toEqual([
      ["b.example.com"],
    ]);
    expect(s.resources.routeConfigurations.map((r) => r.name)).toEqual(["edge", "https/b.example.com"]);
  });

  it("a route that is not accepted serves no host over HTTPS, and does not hold it from a younger one", () => {
    const broken = route("broken", 1, ["shop.example.com"], { secretName: "shop" });
    const noBackend: EdgeRouteV2 = {
      ...broken,
      spec: {
        ...broken.spec,
        rules: [{ matches: [{ path: { value: "/" } }], backends: [{ name: "gone", port: 80 }] }],
      },
    };
    const s = build(
      [noBackend, route("ok", 2, ["shop.example.com"], { secretName: "shop" })],
      [["ns/shop", pair("shop")]],
    );
    expect(s.outcomes.map((o) => o.tls?.served)).toEqual([[], ["shop.example.com"]]);
    expect(s.outcomes[0]?.tls?.notServed).toEqual([
      { hostname: "shop.example.com", message: "the route is not accepted" },
    ]);
  });

  it("the HTTPS listener, its port and the Secrets come only with a host served; the version covers a Secret's contents", () => {
    const r = route("shop", 1, ["shop.example.com"], { secretName: "shop" });
    const none = build([r], []);
    expect(none.resources.listeners.map((l) => l.name)).toEqual(["http"]);
    expect(none.resources.secrets).toEqual([]);
    expect(none.version).toBe(buildSnapshot([route("shop", 1, ["shop.example.com"])], endpoints).version);
    const one = buildSnapshot(
      [r],
      endpoints,
      { now: NOW, httpsListener: { port: 9443 } },
      new Map([["ns/shop", pair("shop")]]),
    );
    expect(one.resources.listeners[1]?.address.socket_address.port_value).toBe(9443);
    expect(one.resources.secrets.map((x) => x.name)).toEqual(["ns/shop"]);
    const renewed = build([r], [["ns/shop", pair("shop-renewed")]]);
    expect(renewed.version).not.toBe(one.version);
    expect(renewed.resources.listeners).toEqual(build([r], [["ns/shop", pair("shop")]]).resources.listeners);
  });

  it("plainHTTP: Redirect answers 301 for the whole host on edge, Allow keeps its routes", () => {
    const edgeHosts = (tls: RouteTls) =>
      build([route("shop", 1, ["shop.example.com"], tls, "/api")], [["ns/shop", pair("shop")]]).resources
        .routeConfigurations[0]?.virtual_hosts;
    expect(edgeHosts({ secretName: "shop" })?.[0]?.routes).toEqual([
      {
        name: "ns/shop/https-redirect",
        match: { prefix: "/" },
        redirect: { https_redirect: true, response_code: "MOVED_PERMANENTLY" },
      },
    ]);
    expect(edgeHosts({ secretName: "shop", plainHTTP: "Allow" })?.[0]?.routes).toEqual([
      { name: "ns/shop/r0/m0", match: { path_separated_prefix: "/api" }, route: { cluster: "ns/web:80" } },
    ]);
  });
});
