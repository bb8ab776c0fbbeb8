// What the demo applies: the lab's route and Service, a v1 and a v2 route
// that share the cluster, their endpoints, and a route the apiserver must refuse.

import type { EdgeRouteV1, EdgeRouteV2 } from "../api/types.js";

export const DEMO_NAMESPACE = "default";

/** The lab's route, in the lab's (v1) shape; its Service does not exist yet. */
export const labRoute: EdgeRouteV1 = {
  apiVersion: "net.10xdev.io/v1",
  kind: "EdgeRoute",
  metadata: { name: "shop", namespace: DEMO_NAMESPACE },
  spec: { host: "shop.example.com", pathPrefix: "/api", service: "checkout", port: 8080, timeoutSeconds: 15 },
};

export function service(name: string, port = 8080): object {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: DEMO_NAMESPACE },
    spec: { ports: [{ name: "http", port, targetPort: port, protocol: "TCP" }] },
  };
}

/** What the endpoints controller would write for a Service (there is no kubelet here). */
export function endpointSlice(serviceName: string, ips: readonly string[], port = 8080): object {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `${serviceName}-demo`,
      namespace: DEMO_NAMESPACE,
      labels: { "kubernetes.io/service-name": serviceName },
    },
    addressType: "IPv4",
    ports: [{ name: "http", port, protocol: "TCP" }],
    endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
  };
}

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
        matches: [
          { path: { type: "PathPrefix", value: "/cart" }, headers: [{ name: "x-canary", value: "1" }] },
        ],
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
