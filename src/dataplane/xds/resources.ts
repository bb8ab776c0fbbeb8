// What the ADS server serves for one snapshot: every resource encoded once,
// with a version of its own (for Delta) and a digest per subscription (so that
// State of the World sends a type only when what a client asked for changed).
//
// Three additions to the builder's resources, all derived here so that the
// builder and its golden files stay as they are:
//  - an API listener for whatever host name a client asks LDS for (a
//    proxyless gRPC client with target `xds:///HOST` asks for HOST), pointing
//    through ADS at the same route configuration as Envoy's listener. Made on
//    demand and never withdrawn: the virtual hosts decide what routes, so a
//    wildcard host serves gRPC clients too, and a host whose routes all went
//    still has its listener (grpc-js-xds 1.14 never notices a listener that
//    comes back unchanged after it was gone). Envoy asks for every listener
//    and gets only its own: it takes no API listener through LDS;
//  - `path_separated_prefix` (a whole-segment prefix), which gRPC's xDS client
//    refuses, becomes the pair it means: the exact path and the prefix with a
//    slash. Envoy reads both the same way, so both kinds of client get one
//    route configuration;
//  - endpoints carry a locality and its weight: gRPC's client refuses a
//    locality left unset, and skips one without a weight (Envoy ignores both
//    unless locality-weighted balancing is asked for).

import { createHash } from "node:crypto";
import {
  LISTENER_NAME,
  ROUTE_CONFIG_NAME,
  TYPE_URL,
  listener as envoyListener,
  type Cluster,
  type ClusterLoadAssignment,
  type ConfigSource,
  type EnvoyRoute,
  type RouteConfiguration,
  type VirtualHost,
} from "../../envoy/envoy-resources.js";
import type { Snapshot } from "../../envoy/snapshot.js";
import { encodeMessage, encodeResource, fieldNumber, type EncodedAny } from "./proto-codec.js";

/** The order a snapshot is pushed in: clusters before their endpoints, listeners before their routes. */
export const PUSH_ORDER = [
  TYPE_URL.cluster,
  TYPE_URL.clusterLoadAssignment,
  TYPE_URL.listener,
  TYPE_URL.routeConfiguration,
] as const;
export type XdsTypeUrl = (typeof PUSH_ORDER)[number];

/** LDS and CDS: a client that names nothing wants everything (the protocol's legacy wildcard). */
export function isWildcardType(typeUrl: string): boolean {
  return typeUrl === TYPE_URL.listener || typeUrl === TYPE_URL.cluster;
}

export interface XdsResource {
  readonly name: string;
  /** 16 hex digits of the SHA-256 of its bytes. */
  readonly version: string;
  readonly any: EncodedAny;
}

export interface XdsTypeResources {
  /** In the snapshot's order. */
  readonly list: readonly XdsResource[];
  readonly byName: ReadonlyMap<string, XdsResource>;
  /** The digest of the whole list, for wildcard subscribers. */
  readonly digest: string;
}

export interface XdsSnapshot {
  /** The snapshot's content hash: the version_info every response of it carries. */
  readonly version: string;
  readonly types: ReadonlyMap<string, XdsTypeResources>;
  /**
   * Per listener, the clusters its routes reach: Envoy's listener reaches every
   * virtual host. A client holds a snapshot only once it holds these too, not
   * just the route configuration that names them.
   */
  readonly clustersOf: ReadonlyMap<string, readonly string[]>;
  /** Per virtual-host domain (`shop.example.com`, `*.example.com`, `*`), the clusters its routes reach. */
  readonly clustersOfDomain: ReadonlyMap<string, readonly string[]>;
  /** Keys of the routes it serves: what `Programmed` is about. */
  readonly routes: readonly string[];
}

const ROUTER = { name: "envoy.filters.http.router", typed_config: { "@type": TYPE_URL.router } } as const;
const ADS_SOURCE: ConfigSource = { ads: {}, resource_api_version: "V3" };

/** The API listener a gRPC client asks for by the host name in its `xds:///HOST` target. */
export function apiListener(hostname: string): ApiListener {
  return {
    "@type": TYPE_URL.listener,
    name: hostname,
    api_listener: {
      api_listener: {
        "@type": TYPE_URL.httpConnectionManager,
        stat_prefix: "edge",
        rds: { config_source: ADS_SOURCE, route_config_name: ROUTE_CONFIG_NAME },
        http_filters: [ROUTER],
      },
    },
  };
}

const HOSTNAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A name a gRPC target can ask LDS for: a DNS-1123 host name, and not Envoy's own listener's. */
export function isApiListenerName(name: string): boolean {
  return name.length <= 253 && HOSTNAME.test(name) && name !== LISTENER_NAME;
}

const apiListeners = new Map<string, XdsResource>();

/** The API listener for `hostname`, encoded once per process (it never changes). */
export function apiListenerResource(hostname: string): XdsResource {
  let r = apiListeners.get(hostname);
  if (r === undefined) {
    const any = encodeResource(apiListener(hostname));
    r = { name: hostname, version: shortHash(any.value), any };
    // Bounded: names come from clients; past this many, new ones are made each time.
    if (apiListeners.size < 10_000) apiListeners.set(hostname, r);
  }
  return r;
}

/** The virtual host a host name lands on, as gRPC and Envoy pick it: exact, then the longest `*.suffix`, then `*`. */
export function domainFor(hostname: string, domains: ReadonlyMap<string, unknown>): string | undefined {
  if (domains.has(hostname)) return hostname;
  let best: string | undefined;
  for (const d of domains.keys())
    if (d.startsWith("*.") && hostname.endsWith(d.slice(1)) && hostname.length > d.length - 1)
      if (best === undefined || d.length > best.length) best = d;
  return best ?? (domains.has("*") ? "*" : undefined);
}

/** A resource in proto3 JSON form. */
export interface ResourceJson {
  readonly "@type": string;
}

/** The API listener's shape, for the type checker; envoy-proto tests check it against Envoy's protos. */
export interface ApiListener extends ResourceJson {
  readonly name: string;
  readonly api_listener: { readonly api_listener: Readonly<Record<string, unknown>> };
}

export interface XdsRouteConfiguration extends ResourceJson {
  readonly name: string;
  readonly virtual_hosts?: readonly (Omit<VirtualHost, "routes"> & {
    readonly routes: readonly XdsRoute[];
  })[];
}

type XdsRoute = Omit<EnvoyRoute, "match"> & { readonly match: Readonly<Record<string, unknown>> };

/** The virtual host for hosts no route names: no routes (Envoy answers 404, gRPC UNAVAILABLE, as with none). */
const NO_ROUTES = { name: "*", domains: ["*"], routes: [] } as const;

/**
 * The route configuration with each whole-segment prefix spelt as an exact
 * path and a prefix, and a catch-all virtual host without routes when there
 * is none: grpc-js-xds 1.14 throws (an unhandled rejection, and the channel
 * keeps its old routes) when no virtual host matches its target.
 */
export function grpcCompatibleRoutes(rc: RouteConfiguration): XdsRouteConfiguration {
  const hosts = rc.virtual_hosts ?? [];
  const catchAll = hosts.some((vh) => vh.domains.includes("*")) ? [] : [NO_ROUTES];
  return {
    ...rc,
    virtual_hosts: [...hosts, ...catchAll].map((vh) => ({
      ...vh,
      routes: vh.routes.flatMap((r): XdsRoute[] => {
        if (!("path_separated_prefix" in r.match)) return [r];
        const { path_separated_prefix: p, headers } = r.match;
        const h = headers === undefined ? {} : { headers };
        return [
          { name: r.name, match: { path: p, ...h }, route: r.route },
          { name: r.name, match: { prefix: `${p}/`, ...h }, route: r.route },
        ];
      }),
    })),
  };
}

/** The endpoints in one locality of weight 1, which gRPC's client needs and Envoy ignores. */
export function withLocality(cla: ClusterLoadAssignment): ResourceJson {
  if (cla.endpoints === undefined) return cla;
  const [{ lb_endpoints }] = cla.endpoints;
  return { ...cla, endpoints: [{ locality: {}, lb_endpoints, load_balancing_weight: 1 }] } as ResourceJson;
}

function clustersOfHost(vh: VirtualHost): readonly string[] {
  const names = new Set<string>();
  for (const r of vh.routes) {
    if ("cluster" in r.route) names.add(r.route.cluster);
    else for (const c of r.route.weighted_clusters.clusters) names.add(c.name);
  }
  return [...names].sort();
}

/**
 * What a client that asked LDS for `listeners` needs to route: per type, the
 * names it must hold. Undefined entries: nothing needed of that type.
 */
export function requiredNames(
  snapshot: XdsSnapshot,
  listeners: ReadonlySet<string> | "*",
): ReadonlyMap<string, ReadonlySet<string>> {
  const clusters = new Set<string>();
  let any = false;
  const names = listeners === "*" ? snapshot.clustersOf.keys() : listeners;
  for (const l of names) {
    const own = snapshot.clustersOf.get(l);
    if (own !== undefined) {
      any = true;
      for (const c of own) clusters.add(c);
    } else if (listeners !== "*" && isApiListenerName(l)) {
      any = true;
      const domain = domainFor(l, snapshot.clustersOfDomain);
      for (const c of domain === undefined ? [] : (snapshot.clustersOfDomain.get(domain) ?? []))
        clusters.add(c);
    }
  }
  return new Map<string, ReadonlySet<string>>([
    [TYPE_URL.routeConfiguration, new Set(any ? [ROUTE_CONFIG_NAME] : [])],
    [TYPE_URL.cluster, clusters],
    [TYPE_URL.clusterLoadAssignment, clusters],
  ]);
}

/** Whether a subscription asks for every name in `needed`. */
export function covers(
  subscription: ReadonlySet<string> | "*" | undefined,
  needed: ReadonlySet<string>,
): boolean {
  if (needed.size === 0) return true;
  if (subscription === undefined) return false;
  if (subscription === "*") return true;
  for (const n of needed) if (!subscription.has(n)) return false;
  return true;
}

const VIRTUAL_HOST = "envoy.config.route.v3.VirtualHost";
const VIRTUAL_HOSTS_FIELD = fieldNumber(TYPE_URL.routeConfiguration, "virtual_hosts");

/** A length-delimited field's key: its number and wire type 2. */
function fieldKey(field: number): Uint8Array {
  return varint((field << 3) | 2);
}

function varint(n: number): Uint8Array {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Uint8Array.from(out);
}

function shortHash(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex").slice(0, 16);
}

/** One digest for a set of resources: names sorted, so any order of asking gives the same one. */
export function digestOf(resources: readonly XdsResource[]): string {
  const h = createHash("sha256");
  for (const r of [...resources].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)))
    h.update(r.name).update("\0").update(r.version).update("\n");
  return h.digest("hex").slice(0, 16);
}

/**
 * Encoded resources are kept from one snapshot to the next by their JSON:
 * a one-route change re-encodes the route configuration and what changed,
 * not ten thousand clusters.
 */
export class XdsEncoder {
  private previous = new Map<string, XdsResource>();
  private previousHosts = new Map<string, Uint8Array>();
  private nextHosts = new Map<string, Uint8Array>();

  /**
   * A route configuration is one resource holding every virtual host: it is
   * written as its other fields followed by each virtual host's bytes (a
   * repeated field is its elements one after another), and a virtual host that
   * did not change keeps its bytes: a one-route change encodes one host.
   */
  private routeConfiguration(rc: XdsRouteConfiguration): XdsResource {
    const { virtual_hosts: hosts = [], ...head } = rc;
    const parts: Uint8Array[] = [encodeResource(head).value];
    for (const vh of hosts) {
      const key = JSON.stringify(vh);
      let bytes = this.previousHosts.get(key) ?? this.nextHosts.get(key);
      if (bytes === undefined) bytes = encodeMessage(VIRTUAL_HOST, vh);
      this.nextHosts.set(key, bytes);
      parts.push(fieldKey(VIRTUAL_HOSTS_FIELD), varint(bytes.byteLength), bytes);
    }
    const value = Buffer.concat(parts);
    return { name: rc.name, version: shortHash(value), any: { type_url: rc["@type"], value } };
  }

  encode(snapshot: Snapshot): XdsSnapshot {
    const next = new Map<string, XdsResource>();
    const one = (name: string, json: ResourceJson): XdsResource => {
      const key = JSON.stringify(json);
      let r = this.previous.get(key) ?? next.get(key);
      if (r === undefined) {
        const any = encodeResource(json);
        r = { name, version: shortHash(any.value), any };
      }
      next.set(key, r);
      return r;
    };
    const { resources } = snapshot;
    const rc = resources.routeConfigurations.map(grpcCompatibleRoutes);
    // Whatever config source the snapshot was built with, clients of this sink get everything through ADS.
    const listeners = resources.listeners.map((l) =>
      one(
        l.name,
        envoyListener(
          { address: l.address.socket_address.address, port: l.address.socket_address.port_value },
          { kind: "ads" },
        ),
      ),
    );
    const lists: Record<XdsTypeUrl, XdsResource[]> = {
      [TYPE_URL.cluster]: resources.clusters.map((c) => {
        const viaAds: Cluster = {
          ...c,
          eds_cluster_config: { eds_config: ADS_SOURCE, service_name: c.eds_cluster_config.service_name },
        };
        return one(c.name, viaAds);
      }),
      [TYPE_URL.clusterLoadAssignment]: resources.clusterLoadAssignments.map((c) =>
        one(c.cluster_name, withLocality(c)),
      ),
      [TYPE_URL.listener]: listeners,
      [TYPE_URL.routeConfiguration]: rc.map((c) => this.routeConfiguration(c)),
    };
    this.previous = next;
    this.previousHosts = this.nextHosts;
    this.nextHosts = new Map();
    const clustersOf = new Map<string, readonly string[]>();
    const all = resources.clusters.map((c) => c.name);
    for (const l of resources.listeners) clustersOf.set(l.name, all);
    const clustersOfDomain = new Map<string, readonly string[]>();
    for (const c of resources.routeConfigurations)
      for (const vh of c.virtual_hosts ?? [])
        for (const d of vh.domains) clustersOfDomain.set(d, clustersOfHost(vh));
    const types = new Map<string, XdsTypeResources>();
    for (const url of PUSH_ORDER) {
      const list = lists[url];
      types.set(url, { list, byName: new Map(list.map((r) => [r.name, r])), digest: digestOf(list) });
    }
    return {
      version: snapshot.version,
      types,
      clustersOf,
      clustersOfDomain,
      routes: snapshot.outcomes.filter((o) => o.accepted).map((o) => o.key),
    };
  }
}
