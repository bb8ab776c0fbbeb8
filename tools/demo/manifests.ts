// What the demo applies: the lab's route, a route for the break-glass, a v1
// and a v2 route that share a backend, and a route the apiserver must refuse.
// Their Services and backends come from the environment (pods in a cluster,
// processes on loopback). The route's path prefixes match gRPC method paths
// (/api/Checkout): the data plane is gRPC's own xDS client.

import type { EdgeRouteV1, EdgeRouteV2 } from "../../src/api/types.js";

export const DEMO_NAMESPACE = "default";
export const LAB_HOST = "shop.example.com";
export const LEGACY_HOST = "legacy.example.com";
export const WEB_HOST = "www.example.com";
export const CHECKOUT_SERVICE = "checkout";
export const CANARY_SERVICE = "checkout-canary";
export const BACKEND_PORT = 8080;
/** What the client calls on every host: service `api`, method `Checkout`, so its path is under the lab's prefix /api (a path prefix matches whole segments). */
export const DEMO_METHOD = "/api/Checkout";
/** The gRPC backends behind each Service, in or out of the cluster. */
export const BACKENDS: Readonly<Record<string, number>> = { [CHECKOUT_SERVICE]: 2, [CANARY_SERVICE]: 1 };
/** The hosts the demo's client calls. */
export const CLIENT_HOSTS: readonly string[] = [LAB_HOST, LEGACY_HOST, WEB_HOST];

/** The one line that says what the data plane is; `where` says how the client and backends run. */
export function dataPlaneLine(where: string): string {
  const targets = CLIENT_HOSTS.map((h) => `xds:///${h}`);
  return `the data plane: gRPC's own xDS client (@grpc/grpc-js-xds) ${where}, calling ${DEMO_METHOD} on ${targets.slice(0, -1).join(", ")} and ${targets.at(-1) ?? ""} every 200 ms (Envoy, the documented edge proxy, has no build for this machine: no registry here ships it)`;
}

/** The lab's route, in the lab's (v1) shape; its Service does not exist yet. */
export const labRoute: EdgeRouteV1 = {
  apiVersion: "net.10xdev.io/v1",
  kind: "EdgeRoute",
  metadata: { name: "shop", namespace: DEMO_NAMESPACE },
  spec: { host: "shop.example.com", pathPrefix: "/api", service: "checkout", port: 8080, timeoutSeconds: 15 },
};

/** The route for the break-glass: deleted while the data plane stays cut off. */
export const legacyRoute: EdgeRouteV1 = {
  apiVersion: "net.10xdev.io/v1",
  kind: "EdgeRoute",
  metadata: { name: "legacy", namespace: DEMO_NAMESPACE },
  spec: { host: LEGACY_HOST, pathPrefix: "/", service: CHECKOUT_SERVICE, port: BACKEND_PORT },
};

/** A plain route written as v1. */
export const webRoute: EdgeRouteV1 = {
  apiVersion: "net.10xdev.io/v1",
  kind: "EdgeRoute",
  metadata: { name: "web", namespace: DEMO_NAMESPACE },
  spec: { host: "www.example.com", pathPrefix: "/", service: "checkout", port: 8080 },
};

/** A canary written as v2: more than v1 can say, so its v1 view is the first rule's first backend. */
export const canaryRoute: EdgeRouteV2 = {
  apiVersion: "net.10xdev.io/v2",
  kind: "EdgeRoute",
  metadata: { name: "canary", namespace: DEMO_NAMESPACE },
  spec: {
    hostnames: ["shop.example.com"],
    rules: [
      {
        matches: [{ path: { type: "PathPrefix", value: "/api" } }],
        backends: [
          { name: "checkout", port: 8080, weight: 90 },
          { name: "checkout-canary", port: 8080, weight: 10 },
        ],
        timeout: "15s",
      },
    ],
  },
};

/** A route the apiserver must refuse: a port past 65535. */
export const invalidRoute: EdgeRouteV2 = {
  apiVersion: "net.10xdev.io/v2",
  kind: "EdgeRoute",
  metadata: { name: "broken", namespace: DEMO_NAMESPACE },
  spec: {
    hostnames: ["broken.example.com"],
    rules: [{ matches: [{ path: { value: "/" } }], backends: [{ name: "checkout", port: 70000 }] }],
  },
};
