// The xDS scale input: synthetic routes (test/fixtures/synthetic-routes.ts)
// with every endpoint on loopback, and the one-route and one-endpoints
// changes the scale test and `npm run bench:xds` push.

import type { EdgeRouteV2 } from "../../src/api/types.js";
import { buildSnapshot, type EndpointsByService, type Snapshot } from "../../src/translate/snapshot.js";
import { syntheticInput } from "../fixtures/synthetic-routes.js";

export interface ScaleInput {
  readonly routes: readonly EdgeRouteV2[];
  readonly endpoints: EndpointsByService;
  /** The snapshot of the routes as they are; built on each call, so that nobody holds it but the caller. */
  base(): Snapshot;
  /** Route 0's first path changed: one route, so one virtual host. */
  routeChange(k: number): Snapshot;
  /** One Service's endpoints moved: one ClusterLoadAssignment. */
  endpointsChange(k: number): Snapshot;
}

const OPTIONS = { configSource: { kind: "ads" } } as const;

/** `count` routes on 500 hosts; every address on 127.0.0.x:`port`, so that a client connects nowhere else. */
export function scaleInput(count: number, port: number): ScaleInput {
  const synthetic = syntheticInput(count);
  const endpoints = new Map(
    [...synthetic.endpoints].map(([key, svc]) => [
      key,
      {
        ports: svc.ports.map((p) => ({
          port: p.port,
          addresses: p.addresses.map((_, i) => ({ ip: `127.0.0.${i + 1}`, port })),
        })),
      },
    ]),
  );
  const { routes } = synthetic;
  return {
    routes,
    endpoints,
    base: () => buildSnapshot(routes, endpoints, OPTIONS),
    routeChange(k) {
      const changed = routes.map((r, i): EdgeRouteV2 => {
        if (i !== 0) return r;
        const rules = r.spec.rules.map((rule, j) =>
          j === 0
            ? { ...rule, matches: [{ path: { type: "PathPrefix" as const, value: `/changed/v${k}` } }] }
            : rule,
        );
        return { ...r, spec: { ...r.spec, rules } };
      });
      return buildSnapshot(changed, endpoints, OPTIONS);
    },
    endpointsChange(k) {
      const moved = new Map(endpoints);
      const [key, svc] = [...endpoints][0] ?? [];
      if (key === undefined || svc === undefined) throw new Error("no Service");
      moved.set(key, {
        ports: svc.ports.map((p) => ({
          port: p.port,
          addresses: [{ ip: "127.0.0.9", port: 10_000 + (k % 50_000) }],
        })),
      });
      return buildSnapshot(routes, moved, OPTIONS);
    },
  };
}

/** The host names the synthetic routes use (`app-N.example.com`). */
export function scaleHosts(input: ScaleInput): string[] {
  return [...new Set(input.routes.flatMap((r) => r.spec.hostnames ?? []))].sort();
}
