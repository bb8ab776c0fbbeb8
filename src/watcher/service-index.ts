// Which routes use which Service, so that a Service or EndpointSlice event
// re-enqueues exactly the routes that reference it. Built from the routes the
// informer sees; it holds keys only, never whole objects.

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
