// Informer events become work-queue keys. A route key is a fast path for one
// route that changed (its Services checked at once); the snapshot key judges
// every route and writes the same words for each (docs/architecture.md, "The
// two kinds of key"). So what is already there when the watcher starts (the
// informers' first lists) needs the snapshot key only: 50,000 routes listed
// must not become 50,000 calls to /reconcile that each find nothing to do.
// Nor must a burst of changes: route keys are spent from a budget, and a change
// past it is left to the snapshot key, which is queued for every change anyway
// and settles every route in one call (2,000 creates were 2,000 calls, each
// one more request on the server that also answers their admission).

import type { EventType } from "../kube/informer.js";
import { keyOf, objectKey, type Watched } from "../api/object-key.js";
import { SNAPSHOT_KEY } from "../reconcile/protocol.js";
import { routeFingerprint } from "./route-fingerprint.js";
import { referencedServices } from "../routing/referenced-services.js";
import { ServiceIndex } from "./service-index.js";

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

/** How many route keys may be queued: a token per key (TokenBucket.tryTake). */
export interface RouteKeyBudget {
  tryTake(): boolean;
}

export interface KeyEventsOptions {
  /** Absent: every change queues its route keys. */
  readonly budget?: RouteKeyBudget;
  /** Told of each route key left to the snapshot key (metrics). */
  readonly onFolded?: () => void;
}

function isTerminating(obj: Watched): boolean {
  return (obj.metadata as { deletionTimestamp?: unknown } | undefined)?.deletionTimestamp != null;
}

/** Changes become keys: a changed route's own key and the snapshot key; a Service's routes and the snapshot key. */
export function keyEvents(queue: KeySink, opts: KeyEventsOptions = {}): KeyEvents {
  const index = new ServiceIndex();
  const fingerprints = new Map<string, string>();
  /** Routes last seen with a deletionTimestamp: the snapshot key queued then deprograms them. */
  const terminating = new Set<string>();
  const addRouteKey = (key: string): void => {
    if (opts.budget === undefined || opts.budget.tryTake()) queue.add(key);
    else opts.onFolded?.();
  };
  return {
    onRoute(type, obj, listing) {
      const key = keyOf(obj);
      if (!key) return;
      const wasTerminating = terminating.has(key);
      if (type === "DELETED") {
        index.deleteRoute(key);
        fingerprints.delete(key);
        terminating.delete(key);
      } else {
        const ns = obj.metadata?.namespace;
        index.setRoute(
          key,
          typeof ns === "string" ? referencedServices(obj).map((n) => objectKey(ns, n)) : [],
        );
        const fp = routeFingerprint(obj);
        if (type === "MODIFIED" && fingerprints.get(key) === fp) return;
        fingerprints.set(key, fp);
        if (isTerminating(obj)) terminating.add(key);
        else terminating.delete(key);
      }
      // Once a route is terminating (or gone), only the snapshot key has work:
      // it builds without the route and lets the finalizer go. Its finalizer
      // going and the object going after that change no build and need no key.
      if (wasTerminating) return;
      if (!listing && type !== "DELETED" && !isTerminating(obj)) addRouteKey(key);
      queue.add(SNAPSHOT_KEY);
    },
    onService(serviceKey, listing) {
      if (!serviceKey) return;
      const routes = index.routesFor(serviceKey);
      if (routes.length === 0) return;
      if (!listing) for (const r of routes) addRouteKey(r);
      queue.add(SNAPSHOT_KEY);
    },
  };
}
