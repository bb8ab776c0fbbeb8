// Which routes use which Service, so that a Service or EndpointSlice event
// re-enqueues exactly the routes that reference it. Built from the routes the
// informer sees; it holds keys only, never whole objects.

import { isRecord } from "../api/is-record.js";
import { objectKey, type Watched } from "../kube/object-key.js";

/** The label an EndpointSlice carries naming its Service. */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/**
 * `namespace/service` of every backend of every rule of a v2 route (and the
 * `service` of a v1-shaped one), de-duplicated and sorted. Backends are
 * same-namespace only, so the route's namespace qualifies them.
 */
export function referencedServices(route: Watched): string[] {
  const ns = route.metadata?.namespace;
  if (typeof ns !== "string" || !ns || !isRecord(route.spec)) return [];
  const names = new Set<string>();
  const { rules, service } = route.spec;
  if (typeof service === "string" && service) names.add(service);
  if (Array.isArray(rules)) {
    for (const rule of rules) {
      if (!isRecord(rule) || !Array.isArray(rule.backends)) continue;
      for (const b of rule.backends)
        if (isRecord(b) && typeof b.name === "string" && b.name) names.add(b.name);
    }
  }
  return [...names].sort().map((n) => objectKey(ns, n));
}

/** `namespace/service` an EndpointSlice belongs to, from its service-name label. */
export function serviceOfEndpointSlice(slice: Watched): string | undefined {
  const ns = slice.metadata?.namespace;
  const labels = slice.metadata?.labels;
  const svc = isRecord(labels) ? labels[SERVICE_NAME_LABEL] : undefined;
  return typeof ns === "string" && ns && typeof svc === "string" && svc ? objectKey(ns, svc) : undefined;
}

export class ServiceIndex {
  private readonly routesByService = new Map<string, Set<string>>();
  private readonly servicesByRoute = new Map<string, readonly string[]>();

  /** Records what `routeKey` references now, replacing what it referenced before. */
  setRoute(routeKey: string, services: readonly string[]): void {
    this.deleteRoute(routeKey);
    if (services.length === 0) return;
    this.servicesByRoute.set(routeKey, services);
    for (const s of services) {
      let routes = this.routesByService.get(s);
      if (!routes) this.routesByService.set(s, (routes = new Set()));
      routes.add(routeKey);
    }
  }

  deleteRoute(routeKey: string): void {
    for (const s of this.servicesByRoute.get(routeKey) ?? []) {
      const routes = this.routesByService.get(s);
      routes?.delete(routeKey);
      if (routes?.size === 0) this.routesByService.delete(s);
    }
    this.servicesByRoute.delete(routeKey);
  }

  /** The route keys that reference `serviceKey`, sorted. */
  routesFor(serviceKey: string): string[] {
    return [...(this.routesByService.get(serviceKey) ?? [])].sort();
  }

  servicesOf(routeKey: string): readonly string[] {
    return this.servicesByRoute.get(routeKey) ?? [];
  }
}
