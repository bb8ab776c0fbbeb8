// Small, typed helpers for tests that drive EdgeRoutes with kubectl.

import { stringify as toYaml } from "yaml";
import type { EdgeRouteV2 } from "../../src/api/types.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { waitFor } from "../../tools/testenv/process.js";

export function v2Route(
  name: string,
  opts: { host?: string; path?: string; service?: string; port?: number; namespace?: string } = {},
) {
  return {
    apiVersion: "net.10xdev.io/v2",
    kind: "EdgeRoute",
    metadata: { name, namespace: opts.namespace ?? "default" },
    spec: {
      hostnames: [opts.host ?? `${name}.example.com`],
      rules: [
        {
          matches: [{ path: { type: "PathPrefix", value: opts.path ?? "/" } }],
          backends: [{ name: opts.service ?? "checkout", port: opts.port ?? 8080 }],
        },
      ],
    },
  };
}

export function v1Route(
  name: string,
  opts: { host?: string; path?: string; service?: string; port?: number; namespace?: string } = {},
) {
  return {
    apiVersion: "net.10xdev.io/v1",
    kind: "EdgeRoute",
    metadata: { name, namespace: opts.namespace ?? "default" },
    spec: {
      host: opts.host ?? `${name}.example.com`,
      pathPrefix: opts.path ?? "/",
      service: opts.service ?? "checkout",
      port: opts.port ?? 8080,
    },
  };
}

export function service(name: string, namespace = "default", port = 8080) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace },
    spec: { ports: [{ name: "http", port, targetPort: port, protocol: "TCP" }] },
  };
}

export function endpointSlice(serviceName: string, ips: string[], namespace = "default", port = 8080) {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { name: `${serviceName}-1`, namespace, labels: { "kubernetes.io/service-name": serviceName } },
    addressType: "IPv4",
    ports: [{ name: "http", port, protocol: "TCP" }],
    endpoints: ips.map((ip) => ({ addresses: [ip], conditions: { ready: true } })),
  };
}

export async function apply(cp: ControlPlane, ...objects: object[]): Promise<void> {
  const r = await cp.kubectl(["apply", "-f", "-"], { input: objects.map((o) => toYaml(o)).join("---\n") });
  if (r.code !== 0) throw new Error(`kubectl apply failed: ${r.stderr}`);
}

export async function getRoute(
  cp: ControlPlane,
  name: string,
  namespace = "default",
): Promise<EdgeRouteV2 | undefined> {
  const r = await cp.kubectl(["get", "edgeroutes.v2.net.10xdev.io", name, "-n", namespace, "-o", "json"]);
  if (r.code !== 0) {
    if (r.stderr.includes("NotFound")) return undefined;
    throw new Error(`kubectl get failed: ${r.stderr}`);
  }
  return JSON.parse(r.stdout) as EdgeRouteV2;
}

/** `Accepted=True(Valid)`-style summary of a condition, or `-` when absent. */
export function cond(route: EdgeRouteV2 | undefined, type: string): string {
  const c = route?.status?.conditions?.find((x) => x.type === type);
  return c ? `${c.status}(${c.reason})` : "-";
}

/** Waits until the route's two conditions read as given, e.g. ("True(Valid)", "True(Synced)"). */
export async function waitForConditions(
  cp: ControlPlane,
  name: string,
  accepted: string,
  programmed: string,
  namespace = "default",
  timeoutMs = 30_000,
): Promise<EdgeRouteV2> {
  let last: EdgeRouteV2 | undefined;
  try {
    return await waitFor(
      `${namespace}/${name} to be Accepted=${accepted} Programmed=${programmed}`,
      async () => {
        last = await getRoute(cp, name, namespace);
        return cond(last, "Accepted") === accepted && cond(last, "Programmed") === programmed
          ? last
          : undefined;
      },
      timeoutMs,
      100,
    );
  } catch (e) {
    throw new Error(
      `${(e as Error).message}; last seen: Accepted=${cond(last, "Accepted")} Programmed=${cond(last, "Programmed")}`,
    );
  }
}
