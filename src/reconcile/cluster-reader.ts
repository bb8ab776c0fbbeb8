// Reads the state a reconcile needs, every time, straight from the apiserver:
// Kubernetes is the database, and the reconcile keeps no copy of its own.

import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import { GROUP, PLURAL, type EdgeRouteV2 } from "../api/types.js";
import { KubeError, type KubeClient } from "../kube/client.js";

interface List<T> {
  items: T[];
  metadata?: { continue?: string; resourceVersion?: string };
}

const PAGE = 500;

export const ROUTES_V2 = `/apis/${GROUP}/v2`;

export function routePath(namespace: string, name: string): string {
  return `${ROUTES_V2}/namespaces/${encodeURIComponent(namespace)}/${PLURAL}/${encodeURIComponent(name)}`;
}

/** A whole LIST, and the resourceVersion it was read at (every page of one LIST is served at the first page's). */
export interface Listed<T> {
  readonly items: T[];
  readonly resourceVersion: string | undefined;
}

async function listAll<T>(
  kube: KubeClient,
  path: string,
  signal: AbortSignal | undefined,
  slim: (item: T) => T = (item) => item,
): Promise<Listed<T>> {
  const items: T[] = [];
  let cont: string | undefined;
  let resourceVersion: string | undefined;
  do {
    const page: List<T> = await kube.json<List<T>>("GET", path, {
      query: { limit: PAGE, continue: cont },
      timeoutMs: 60_000,
      signal,
    });
    for (const item of page.items) items.push(slim(item));
    resourceVersion ??= page.metadata?.resourceVersion;
    cont = page.metadata?.continue || undefined;
  } while (cont);
  return { items, resourceVersion };
}

/**
 * A listed route with only what the reconcile reads: managedFields and the
 * last-applied annotation are most of an object's bytes, and with thousands of
 * routes held for a whole snapshot reconcile they are most of its memory.
 */
const LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration";

function withoutLastApplied(annotations: Readonly<Record<string, string>>): Record<string, string> {
  if (!(LAST_APPLIED in annotations)) return { ...annotations };
  const { [LAST_APPLIED]: _dropped, ...rest } = annotations;
  return rest;
}

export function slimRoute(route: EdgeRouteV2): EdgeRouteV2 {
  const m = route.metadata;
  const metadata: EdgeRouteV2["metadata"] = {
    name: m.name,
    namespace: m.namespace,
    uid: m.uid,
    resourceVersion: m.resourceVersion,
    generation: m.generation,
    creationTimestamp: m.creationTimestamp,
    ...(m.deletionTimestamp ? { deletionTimestamp: m.deletionTimestamp } : {}),
    ...(m.finalizers ? { finalizers: m.finalizers } : {}),
    ...(m.annotations ? { annotations: withoutLastApplied(m.annotations) } : {}),
  };
  return {
    apiVersion: route.apiVersion,
    kind: route.kind,
    metadata,
    spec: route.spec,
    ...(route.status ? { status: route.status } : {}),
  };
}
export function isNotFound(e: unknown): boolean {
  return e instanceof KubeError && e.status === 404;
}

export class ClusterReader {
  constructor(private readonly kube: KubeClient) {}

  /** Every EdgeRoute, read as v2 (the hub), in all namespaces. */
  listRoutes(signal?: AbortSignal): Promise<Listed<EdgeRouteV2>> {
    return listAll<EdgeRouteV2>(this.kube, `${ROUTES_V2}/${PLURAL}`, signal, slimRoute);
  }

  async getRoute(namespace: string, name: string, signal?: AbortSignal): Promise<EdgeRouteV2 | undefined> {
    try {
      return await this.kube.json<EdgeRouteV2>("GET", routePath(namespace, name), {
        timeoutMs: 15_000,
        signal,
      });
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  async getService(namespace: string, name: string, signal?: AbortSignal): Promise<V1Service | undefined> {
    try {
      const path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/services/${encodeURIComponent(name)}`;
      return await this.kube.json<V1Service>("GET", path, { timeoutMs: 15_000, signal });
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  listServices(signal?: AbortSignal): Promise<Listed<V1Service>> {
    return listAll<V1Service>(this.kube, "/api/v1/services", signal);
  }

  listEndpointSlices(signal?: AbortSignal): Promise<Listed<V1EndpointSlice>> {
    return listAll<V1EndpointSlice>(this.kube, "/apis/discovery.k8s.io/v1/endpointslices", signal);
  }
}
