// The statuses this process wrote, until its cache shows them. A watch-fed
// cache sees a status write a moment after the write returns; a reconcile in
// that moment would read the route as it was, find its status out of date,
// and write it again on the old resourceVersion: a 409, and one more
// reconcile. At 50,000 routes the cache fell far enough behind that refused
// writes outnumbered the ones that landed four to one. So the route is read
// as the write left it (its returned resourceVersion and status) for as long
// as the cache still holds the version the write was made on.

import type { EdgeRouteStatus, EdgeRouteV2 } from "../api/types.js";
import { objectKeyOf } from "../api/object-key.js";

interface Written {
  /** The resourceVersion the write was made on, and the one it returned. */
  readonly before: string;
  readonly after: string;
  readonly status: EdgeRouteStatus;
}

export class WrittenStatuses {
  private readonly byKey = new Map<string, Written>();

  /** A status write on `route` (as read) landed, and made `after`. */
  record(route: EdgeRouteV2, status: EdgeRouteStatus, after: string | undefined): void {
    const before = route.metadata.resourceVersion;
    if (before === undefined || after === undefined || after === before) return;
    this.byKey.set(objectKeyOf(route), { before, after, status });
  }

  /**
   * The route as this process last wrote it, when `route` is the version that
   * write was made on; otherwise `route` itself (the cache caught up, or the
   * route changed since), and the record goes.
   */
  overlay(route: EdgeRouteV2): EdgeRouteV2 {
    const key = objectKeyOf(route);
    const w = this.byKey.get(key);
    if (w === undefined) return route;
    if (route.metadata.resourceVersion !== w.before) {
      this.byKey.delete(key);
      return route;
    }
    return { ...route, metadata: { ...route.metadata, resourceVersion: w.after }, status: w.status };
  }

  /** Every route of a full read, overlaid; records of routes no longer there go. */
  overlayAll(routes: readonly EdgeRouteV2[]): readonly EdgeRouteV2[] {
    // Mostly there is nothing to overlay (the cache caught up): the same array,
    // without a key built per route (at 10,000 routes that was milliseconds per call).
    if (this.byKey.size === 0) return routes;
    const names = new Set<string>();
    for (const key of this.byKey.keys()) names.add(key.slice(key.indexOf("/") + 1));
    const present = new Set<string>();
    const out = routes.slice();
    for (let i = 0; i < out.length; i++) {
      const r = out[i] as EdgeRouteV2;
      if (!names.has(r.metadata.name ?? "")) continue;
      present.add(objectKeyOf(r));
      out[i] = this.overlay(r);
    }
    for (const key of this.byKey.keys()) if (!present.has(key)) this.byKey.delete(key);
    return out;
  }

  /** Records held (tests, metrics). */
  size(): number {
    return this.byKey.size;
  }
}
