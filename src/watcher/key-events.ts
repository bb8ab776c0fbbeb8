// Informer events become work-queue keys. A route key is a fast path for one
// route that changed (its Services checked at once); the snapshot key judges
// every route and writes the same words for each (docs/architecture.md, "The
// two kinds of key"). So what is already there when the watcher starts (the
// informers' first lists) needs the snapshot key only: 50,000 routes listed
// must not become 50,000 calls to /reconcile that each find nothing to do.

import type { EventType } from "../kube/informer.js";
import { keyOf, type Watched } from "../kube/object-key.js";
import { SNAPSHOT_KEY } from "../reconcile/protocol.js";
import { routeFingerprint } from "./route-fingerprint.js";
import { ServiceIndex, referencedServices } from "./service-index.js";

/** Where keys go: the work queue's `add`. */
export interface KeySink {
  add(key: string): void;
}

export interface KeyEvents {
  /**
   * A route event. `listing`: it comes from the informer's first list (what
   * existed before this watcher), not from a change seen live.
   */
  onRoute(type: EventType, obj: Watched, listing: boolean): void;
  /** A Service or EndpointSlice event, by the Service's `namespace/name`; `listing` as for routes. */
  onService(serviceKey: string | undefined, listing: boolean): void;
}

/** Changes become keys: a changed route's own key and the snapshot key; a Service's routes and the snapshot key. */
export function keyEvents(queue: KeySink): KeyEvents {
  const index = new ServiceIndex();
  const fingerprints = new Map<string, string>();
  return {
    onRoute(type, obj, listing) {
      const key = keyOf(obj);
      if (!key) return;
      if (type === "DELETED") {
        index.deleteRoute(key);
        fingerprints.delete(key);
      } else {
        index.setRoute(key, referencedServices(obj));
        const fp = routeFingerprint(obj);
        if (type === "MODIFIED" && fingerprints.get(key) === fp) return;
        fingerprints.set(key, fp);
      }
      if (!listing) queue.add(key);
      queue.add(SNAPSHOT_KEY);
    },
    onService(serviceKey, listing) {
      if (!serviceKey) return;
      const routes = index.routesFor(serviceKey);
      if (routes.length === 0) return;
      if (!listing) for (const r of routes) queue.add(r);
      queue.add(SNAPSHOT_KEY);
    },
  };
}
