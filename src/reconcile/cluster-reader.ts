// Reads the state a reconcile needs, every time, straight from the apiserver:
// Kubernetes is the database, and the reconcile keeps no copy of its own.

import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import { GROUP, PLURAL, type EdgeRouteV2 } from "../api/types.js";
import { KubeError, type KubeClient } from "../watcher/kube-http.js";

interface List<T> {
  items: T[];
  metadata?: { continue?: string; resourceVersion?: string };
}

const PAGE = 500;

export const ROUTES_V2 = `/apis/${GROUP}/v2`;

export function routePath(namespace: string, name: string): string {
  return `${ROUTES_V2}/namespaces/${encodeURIComponent(namespace)}/${PLURAL}/${encodeURIComponent(name)}`;
}

async function listAll<T>(kube: KubeClient, path: string): Promise<T[]> {
  const items: T[] = [];
  let cont: string | undefined;
  do {
    const page: List<T> = await kube.json<List<T>>("GET", path, {
      query: { limit: PAGE, continue: cont },
      timeoutMs: 60_000,
    });
    items.push(...page.items);
    cont = page.metadata?.continue || undefined;
  } while (cont);
  return items;
}

export function isNotFound(e: unknown): boolean {
  return e instanceof KubeError && e.status === 404;
}

export class ClusterReader {
  constructor(private readonly kube: KubeClient) {}

  /** Every EdgeRoute, read as v2 (the hub), in all namespaces. */
  listRoutes(): Promise<EdgeRouteV2[]> {
    return listAll<EdgeRouteV2>(this.kube, `${ROUTES_V2}/${PLURAL}`);
  }

  async getRoute(namespace: string, name: string): Promise<EdgeRouteV2 | undefined> {
    try {
      return await this.kube.json<EdgeRouteV2>("GET", routePath(namespace, name), { timeoutMs: 15_000 });
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async getService(namespace: string, name: string): Promise<V1Service | undefined> {
    try {
      const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${encodeURIComponent(name)}`;
      return await this.kube.json<V1Service>("GET", path, { timeoutMs: 15_000 });
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  listServices(): Promise<V1Service[]> {
    return listAll<V1Service>(this.kube, "/api/v1/services");
  }

  listEndpointSlices(): Promise<V1EndpointSlice[]> {
    return listAll<V1EndpointSlice>(this.kube, "/apis/discovery.k8s.io/v1/endpointslices");
  }
}
