// What a reconcile reads, behind one interface (ClusterView), two ways: from
// the server's watch-fed cache (ClusterCache.view(), what serve runs) or
// straight from the apiserver, a LIST of each kind per snapshot (ApiserverView:
// tests of decisions, tools without a cache).

import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import type { EdgeRouteV2 } from "../api/types.js";
import { readRevision, type ReadRevision } from "../dataplane/read-revision.js";
import type { EndpointsByService, TlsSecrets } from "../translate/snapshot.js";
import { endpointsByService } from "../routing/service-endpoints.js";
import { slimRoute } from "./slim-route.js";
import type { KubeClient } from "../kube/client.js";
import { isNotFound } from "../kube/errors.js";
import { listAll } from "../kube/pager.js";
import { eachConcurrently } from "../kube/each-concurrently.js";
import type { TlsSecret } from "../translate/tls-secrets.js";
import { readTlsSecret, referencedTlsSecrets } from "./tls-secret-refs.js";
import {
  edgeRoutePath,
  edgeRoutesPath,
  ENDPOINT_SLICES_PATH,
  servicePath,
  SERVICES_PATH,
} from "../kube/paths.js";

/** A whole LIST, and the resourceVersion it was read at: when the snapshot's inputs were read. */
export interface Listed<T> {
  readonly items: T[];
  readonly resourceVersion: string | undefined;
}

/** Every route (live and terminating), every Service's endpoints, and when they were read. */
export interface SnapshotInputs {
  readonly routes: readonly EdgeRouteV2[];
  readonly endpoints: EndpointsByService;
  /** The contents of the TLS Secrets live routes reference (absent: none read). */
  readonly secrets?: TlsSecrets;
  readonly read: ReadRevision | undefined;
  /** The cache's inputs() when read from it: equal stamps, equal build inputs. */
  readonly stamp?: number;
}

/** What the Reconciler reads. */
export interface ClusterView {
  snapshotInputs(signal?: AbortSignal): Promise<SnapshotInputs>;
  route(namespace: string, name: string, signal?: AbortSignal): Promise<EdgeRouteV2 | undefined>;
  service(namespace: string, name: string, signal?: AbortSignal): Promise<V1Service | undefined>;
}

export class ApiserverView implements ClusterView {
  constructor(private readonly kube: KubeClient) {}

  /** Three LISTs, read at once: O(cluster) apiserver work per call; then a GET of each referenced TLS Secret. */
  async snapshotInputs(signal?: AbortSignal): Promise<SnapshotInputs> {
    const [routes, services, slices] = await Promise.all([
      this.listRoutes(signal),
      this.listServices(signal),
      this.listEndpointSlices(signal),
    ]);
    return {
      routes: routes.items,
      endpoints: endpointsByService(services.items, slices.items),
      secrets: await this.readSecrets(routes.items, signal),
      read: readRevision({
        routes: routes.resourceVersion,
        services: services.resourceVersion,
        endpointslices: slices.resourceVersion,
      }),
    };
  }

  route(namespace: string, name: string, signal?: AbortSignal): Promise<EdgeRouteV2 | undefined> {
    return this.getRoute(namespace, name, signal);
  }

  service(namespace: string, name: string, signal?: AbortSignal): Promise<V1Service | undefined> {
    return this.getService(namespace, name, signal);
  }

  /** The TLS Secrets the live routes reference, each by a GET (never a LIST of Secrets). */
  async readSecrets(routes: readonly EdgeRouteV2[], signal?: AbortSignal): Promise<TlsSecrets> {
    const secrets = new Map<string, TlsSecret>();
    await eachConcurrently(referencedTlsSecrets(routes), 8, async (key) => {
      const got = await readTlsSecret(this.kube, key, signal);
      if (got) secrets.set(key, got.secret);
    });
    return new Map([...secrets].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
  }

  /** Every EdgeRoute, read as v2 (the hub), in all namespaces. */
  listRoutes(signal?: AbortSignal): Promise<Listed<EdgeRouteV2>> {
    return listAll<EdgeRouteV2>(this.kube, edgeRoutesPath(), { slim: slimRoute, signal });
  }

  async getRoute(namespace: string, name: string, signal?: AbortSignal): Promise<EdgeRouteV2 | undefined> {
    try {
      return await this.kube.json<EdgeRouteV2>("GET", edgeRoutePath(namespace, name), {
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
      return await this.kube.json<V1Service>("GET", servicePath(namespace, name), {
        timeoutMs: 15_000,
        signal,
      });
    } catch (e) {
      if (isNotFound(e)) return undefined;
      throw e;
    }
  }

  listServices(signal?: AbortSignal): Promise<Listed<V1Service>> {
    return listAll<V1Service>(this.kube, SERVICES_PATH, { signal });
  }

  listEndpointSlices(signal?: AbortSignal): Promise<Listed<V1EndpointSlice>> {
    return listAll<V1EndpointSlice>(this.kube, ENDPOINT_SLICES_PATH, { signal });
  }
}
