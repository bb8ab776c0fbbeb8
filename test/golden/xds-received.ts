// What each kind of xDS client receives from the xds sink for one snapshot, as
// the ADS server picks it for the client's subscriptions (subset() and
// requiredNames(), which the streams use) and decoded from the bytes it sends:
//  - Envoy asks LDS and CDS for everything, RDS for the route configurations
//    its listeners name, EDS for its clusters' endpoints, SDS for the Secrets
//    its HTTPS listener names (an Envoy authenticated by mutual TLS: the only
//    kind that is sent Secrets);
//  - a proxyless gRPC client asks LDS for its channels' host names, then RDS,
//    CDS and EDS for what those listeners' routes name.

import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import type { Snapshot } from "../../src/translate/snapshot.js";
import { subset } from "../../src/dataplane/xds/make-before-break.js";
import { decodeResource } from "../../src/dataplane/xds/proto-codec.js";
import { PUSH_ORDER, requiredNames, XdsEncoder, type XdsSnapshot } from "../../src/dataplane/xds/resources.js";
import type { Names } from "../../src/dataplane/xds/subscription.js";

export interface ReceivedResource {
  readonly name: string;
  /** The resource's version: a hash of its bytes, so a golden file changes when a byte does. */
  readonly version: string;
  readonly resource: Record<string, unknown>;
}

export interface Received {
  /** The snapshot's version, every response's version_info. */
  readonly version: string;
  /** By type URL, in the order the server pushes the types. */
  readonly resources: Readonly<Record<string, readonly ReceivedResource[]>>;
}

const EVERY: Names = { wildcard: true, names: new Set() };
const named = (names: Iterable<string>): Names => ({ wildcard: false, names: new Set(names) });

function received(xds: XdsSnapshot, subscriptions: ReadonlyMap<string, Names>): Received {
  const resources: Record<string, ReceivedResource[]> = {};
  for (const url of PUSH_ORDER) {
    const sub = subscriptions.get(url);
    if (sub === undefined) continue;
    resources[url] = subset(xds, url, sub).resources.map((r) => ({
      name: r.name,
      version: r.version,
      resource: decodeResource(r.any),
    }));
  }
  return { version: xds.version, resources };
}

function subscriptionsOf(xds: XdsSnapshot, lds: Names, cds: Names | undefined): Map<string, Names> {
  const needed = requiredNames(xds, lds);
  const secrets = needed.get(TYPE_URL.secret) ?? new Set<string>();
  return new Map([
    [TYPE_URL.listener, lds],
    [TYPE_URL.routeConfiguration, named(needed.get(TYPE_URL.routeConfiguration) ?? [])],
    [TYPE_URL.cluster, cds ?? named(needed.get(TYPE_URL.cluster) ?? [])],
    [TYPE_URL.clusterLoadAssignment, named(needed.get(TYPE_URL.clusterLoadAssignment) ?? [])],
    // Asked only when a listener names one: the cases without TLS read as before.
    ...(secrets.size > 0 ? [[TYPE_URL.secret, named(secrets)] as const] : []),
  ]);
}

/** The served form of a snapshot, as the xds sink makes it. */
export function served(snapshot: Snapshot): XdsSnapshot {
  return new XdsEncoder().encode(snapshot);
}

/** What Envoy receives over ADS. */
export function envoyReceives(xds: XdsSnapshot): Received {
  return received(xds, subscriptionsOf(xds, EVERY, EVERY));
}

/** What one gRPC client with channels to `hosts` receives. */
export function grpcReceives(xds: XdsSnapshot, hosts: readonly string[]): Received {
  return received(xds, subscriptionsOf(xds, named(hosts), undefined));
}
