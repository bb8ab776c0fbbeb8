// What one stream is sent of each type, in the order api/xds_protocol.rst
// ("Eventual consistency considerations") asks for, so that no route a client
// holds ever names a cluster it does not hold:
//  - clusters and their endpoints first: a route configuration that names a
//    cluster the client's CDS subscription covers goes only once the client
//    ACKed that cluster (and its endpoints, when it takes EDS);
//  - removals last: a cluster the snapshot dropped stays in what the client
//    is sent (as it was) while any route configuration the client may hold
//    names it, that is, until it ACKed one that does not.
// A client whose subscription does not cover a cluster (gRPC names its
// clusters once its routes name them) asks for it itself, after the routes.

import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { hostOfRoutesName, isApiListenerName } from "../../translate/grpc.js";
import { apiListenerResource, digestOf, requiredNames } from "./resources.js";
import type { XdsResource, XdsSnapshot } from "./resources.js";
import type { Names } from "./subscription.js";

export interface Content {
  readonly resources: readonly XdsResource[];
  readonly digest: string;
}

/** A gRPC client's API listener and its route configuration exist for any host name it asks for. */
function onDemand(snapshot: XdsSnapshot, typeUrl: string, name: string): XdsResource | undefined {
  if (typeUrl === TYPE_URL.listener) return isApiListenerName(name) ? apiListenerResource(name) : undefined;
  if (typeUrl !== TYPE_URL.routeConfiguration) return undefined;
  const host = hostOfRoutesName(name);
  return host === undefined ? undefined : snapshot.hostRoutes(host);
}

/** The resources a subscription gets from a snapshot, and their digest. */
export function subset(snapshot: XdsSnapshot, typeUrl: string, sub: Names): Content {
  const type = snapshot.types.get(typeUrl);
  if (type === undefined) return { resources: [], digest: digestOf([]) };
  if (sub.wildcard && sub.names.size === 0) return { resources: type.list, digest: type.digest };
  const resources: XdsResource[] = sub.wildcard ? [...type.list] : [];
  for (const n of sub.names) {
    if (sub.wildcard && type.byName.has(n)) continue;
    const r = type.byName.get(n) ?? onDemand(snapshot, typeUrl, n);
    if (r !== undefined) resources.push(r);
  }
  return { resources, digest: digestOf(resources) };
}

const MAX_UNANSWERED = 16;

/**
 * The route configurations a client may hold, as the snapshots they came
 * from: that of the last response it ACKed, and those of the responses sent
 * since, unanswered (it may have applied them already; a NACK leaves it with
 * what it had). From them, the clusters the current snapshot dropped that
 * those routes still name: State of the World sends them on (as the newest of
 * those snapshots had them; a Cluster holds no endpoints, so that is the one
 * the client holds), Delta does not remove them yet. Endpoints need nothing in
 * State of the World: a ClusterLoadAssignment left out is not deleted.
 */
export class RouteHolding {
  private taken: XdsSnapshot | undefined;
  private readonly unanswered = new Map<string, XdsSnapshot>();
  private cache:
    | { readonly current: XdsSnapshot; readonly retained: ReadonlyMap<string, XdsResource | undefined> }
    | undefined;

  sent(nonce: string, snapshot: XdsSnapshot): void {
    this.unanswered.set(nonce, snapshot);
    if (this.unanswered.size > MAX_UNANSWERED) {
      const [oldest] = this.unanswered.keys();
      if (oldest !== undefined) this.unanswered.delete(oldest);
    }
    this.cache = undefined;
  }

  /** The response `nonce` was answered; those before it were answered with it. */
  answered(nonce: string, taken: boolean): void {
    if (!this.unanswered.has(nonce)) return;
    for (const [n, v] of this.unanswered) {
      this.unanswered.delete(n);
      // In order: a response before this one was taken, or the client would have said so.
      if (n !== nonce || taken) this.taken = v;
      if (n === nonce) break;
    }
    this.cache = undefined;
  }

  /**
   * Nothing is unanswered and what the client holds is as good as `snapshot`'s
   * (nothing was sent because nothing differed): hold that instead, so that no
   * older snapshot is kept alive for a client that never needed another.
   */
  rebase(snapshot: XdsSnapshot): void {
    if (this.unanswered.size === 0 && this.taken !== undefined && this.taken !== snapshot) {
      this.taken = snapshot;
      this.cache = undefined;
    }
  }

  /** It unsubscribed from route configurations: it holds none. */
  clear(): void {
    this.taken = undefined;
    this.unanswered.clear();
    this.cache = undefined;
  }

  /** The client's subscriptions may have changed: what is retained is looked at again. */
  changed(): void {
    this.cache = undefined;
  }

  /** The clusters `current` dropped that routes the client may hold still name, for its `listeners`. */
  retained(current: XdsSnapshot, listeners: Names | undefined): ReadonlyMap<string, XdsResource | undefined> {
    if (this.cache?.current === current) return this.cache.retained;
    const retained = new Map<string, XdsResource | undefined>();
    const clusters = current.types.get(TYPE_URL.cluster)?.byName;
    // Newest first: a retained cluster is sent as the newest snapshot that had it.
    const held = [...this.unanswered.values()].reverse();
    if (this.taken !== undefined) held.push(this.taken);
    for (const s of held) {
      if (s === current || listeners === undefined) continue;
      for (const name of requiredNames(s, listeners).get(TYPE_URL.cluster) ?? [])
        if (!clusters?.has(name) && !retained.has(name))
          retained.set(name, s.types.get(TYPE_URL.cluster)?.byName.get(name));
    }
    this.cache = { current, retained };
    return retained;
  }
}

/** What a stream tells of a client, for the gate below. */
export interface HeldState {
  subscription(typeUrl: string): Names | undefined;
  /** Whether the client ACKed what this type carries for it in `snapshot`. */
  holdsType(snapshot: XdsSnapshot, typeUrl: string): boolean;
}

/**
 * Whether the route configurations of `snapshot` may go to this client: if
 * they name clusters its CDS subscription covers, it holds the snapshot's
 * clusters, and, when it takes EDS, asks for their endpoints and holds them.
 */
export function routesMayGo(snapshot: XdsSnapshot, client: HeldState): boolean {
  const listeners = client.subscription(TYPE_URL.listener);
  const cds = client.subscription(TYPE_URL.cluster);
  if (listeners === undefined || cds === undefined) return true;
  const needed = requiredNames(snapshot, listeners).get(TYPE_URL.cluster) ?? new Set<string>();
  const covers = (n: string) => cds.wildcard || cds.names.has(n);
  let any = false;
  for (const n of needed) if ((any = covers(n))) break;
  if (!any) return true;
  if (!client.holdsType(snapshot, TYPE_URL.cluster)) return false;
  const eds = client.subscription(TYPE_URL.clusterLoadAssignment);
  if (eds === undefined || (!eds.wildcard && eds.names.size === 0)) return true;
  if (!eds.wildcard) for (const n of needed) if (covers(n) && !eds.names.has(n)) return false;
  return client.holdsType(snapshot, TYPE_URL.clusterLoadAssignment);
}
