// Routes and endpoints for the xDS tests, built as the reconcile builds them:
// EdgeRoutes (v2) and Services' ready addresses through buildSnapshot, with
// ADS as the config source.

import type { EdgeRouteV2, RouteRule } from "../../src/api/types.js";
import type { ServiceEndpoints } from "../../src/routing/service-endpoints.js";
import { buildSnapshot, type EndpointsByService, type Snapshot } from "../../src/translate/snapshot.js";

export const NS = "shop";
export const PORT = 50051;

export function edgeRoute(name: string, hostnames: string[], rules: RouteRule[]): EdgeRouteV2 {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { namespace: NS, name, creationTimestamp: "2026-01-01T00:00:00Z" },
    spec: { hostnames, rules },
  };
}

/** Services by name, each on PORT, with its ready backends' loopback ports. */
export function endpoints(services: Record<string, readonly number[]>): EndpointsByService {
  const map = new Map<string, ServiceEndpoints>();
  for (const [name, ports] of Object.entries(services))
    map.set(`${NS}/${name}`, {
      ports: [{ port: PORT, addresses: ports.map((p) => ({ ip: "127.0.0.1", port: p })) }],
    });
  return map;
}

export function adsSnapshot(routes: EdgeRouteV2[], eps: EndpointsByService): Snapshot {
  return buildSnapshot(routes, eps, { configSource: { kind: "ads" } });
}
