// What the ADS server serves for one snapshot: every resource encoded once,
// with a version of its own (for Delta) and a digest per subscription (so that
// State of the World sends a type only when what a client asked for changed).
//
// What each kind of client gets is the translation's (src/translate/): the
// resources served over ADS (envoy.ts's adsResources, one form Envoy and
// gRPC's client both read), and for a gRPC client the API listener of each
// host it asks LDS for, and that host's route configuration `edge/HOST`
// (grpc.ts). This side serves them: it picks what a subscription asks for,
// and makes a host's listener and `edge/HOST` on its first ask, kept with the
// snapshot so every client of the host shares them, never withdrawn (the
// virtual hosts decide what routes, so a wildcard host serves gRPC clients
// too, and a host whose routes all went still has its listener and an empty
// route configuration: grpc-js-xds 1.14 never notices a resource that comes
// back unchanged after it was gone). Envoy asks for every listener and gets
// only its own: it takes no API listener through LDS.
//
// TLS: the HTTPS listener, its route configurations `https/HOST` and the SDS
// Secrets they name go only to clients authenticated by mutual TLS. Every
// other stream is served the snapshot's `plain` view, the same snapshot
// without them: to such a client no Secret exists, and it holds no listener
// that would wait for one (Envoy warms a listener until its SDS secrets come).

import { createHash } from "node:crypto";
import { HTTPS_LISTENER_NAME, ROUTE_CONFIG_NAME, TYPE_URL } from "../../envoy/envoy-resources.js";
import {
  adsResources,
  NO_ROUTES,
  type AdsRouteConfiguration,
  type AdsVirtualHost,
  type ResourceJson,
} from "../../translate/envoy.js";
import {
  apiListener,
  clustersOfVirtualHost,
  grpcVirtualHost,
  domainFor,
  hostRoutesName,
  isApiListenerName,
  routesOfVirtualHost,
} from "../../translate/grpc.js";
import type { Snapshot } from "../../translate/snapshot.js";
import {
  encodeMessage,
  encodeResource,
  fieldKey,
  fieldSpans,
  fieldNumber,
  varint,
  type EncodedAny,
} from "./proto-codec.js";
import type { Names } from "./subscription.js";
import { perObject } from "../../api/per-object.js";

/**
 * The order a snapshot is pushed in: clusters before their endpoints, Secrets
 * before the listener that names them (it warms until they come), listeners
 * before their routes.
 */
export const PUSH_ORDER = [
  TYPE_URL.cluster,
  TYPE_URL.clusterLoadAssignment,
  TYPE_URL.secret,
  TYPE_URL.listener,
  TYPE_URL.routeConfiguration,
] as const;
export type XdsTypeUrl = (typeof PUSH_ORDER)[number];

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
  /** Per listener, the route configurations it names (`edge`, or each `https/HOST`). */
  readonly routeConfigsOf: ReadonlyMap<string, readonly string[]>;
  /** Per listener, the SDS Secrets its filter chains name (only the HTTPS listener's). */
  readonly secretsOf: ReadonlyMap<string, readonly string[]>;
  /** Per virtual-host domain (`shop.example.com`, `*.example.com`, `*`), the clusters its routes reach. */
  readonly clustersOfDomain: ReadonlyMap<string, readonly string[]>;
  /** Per virtual-host domain, the keys (`namespace/name`) of the routes in it. */
  readonly routesOfDomain: ReadonlyMap<string, readonly string[]>;
  /** Keys of the routes it serves: what `Programmed` is about. */
  readonly routes: readonly string[];
  /** Keys of the routes that serve a host over HTTPS. */
  readonly tlsRoutes: ReadonlySet<string>;
  /**
   * What a client not authenticated by mutual TLS is served: this snapshot
   * without the HTTPS listener, its route configurations and the Secrets
   * (itself when it has none). One object per snapshot, so that what is
   * cached per snapshot stays cached.
   */
  readonly plain: XdsSnapshot;
  /**
   * The route configuration `edge/HOST` of the API listener HOST: made on
   * first ask and kept with the snapshot, so every client of HOST shares it.
   */
  hostRoutes(hostname: string): XdsResource;
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

/**
 * What a client that asked LDS for `listeners` needs to route: per type, the
 * names it must hold (Envoy's listener: `edge`; an API listener HOST:
 * `edge/HOST`; and the clusters and endpoints their routes reach).
 */
export function requiredNames(
  snapshot: XdsSnapshot,
  listeners: Names,
): ReadonlyMap<string, ReadonlySet<string>> {
  // Every stream asks this on every push and answer, and Envoys share one subscription
  // (`*`): made once per snapshot and subscription, not a 10,000-name set per stream.
  const key = `${listeners.wildcard ? "*" : ""}\0${[...listeners.names].sort().join("\0")}`;
  let bySubscription = requiredCache.get(snapshot);
  if (bySubscription === undefined) {
    bySubscription = new Map();
    requiredCache.set(snapshot, bySubscription);
  }
  let names = bySubscription.get(key);
  if (names === undefined) {
    names = computeRequiredNames(snapshot, listeners);
    // Bounded: subscriptions come from clients.
    if (bySubscription.size < 1_000) bySubscription.set(key, names);
  }
  return names;
}

const requiredCache = new WeakMap<XdsSnapshot, Map<string, ReadonlyMap<string, ReadonlySet<string>>>>();

function computeRequiredNames(
  snapshot: XdsSnapshot,
  listeners: Names,
): ReadonlyMap<string, ReadonlySet<string>> {
  const clusters = new Set<string>();
  const routeConfigs = new Set<string>();
  const secrets = new Set<string>();
  const add = (l: string, named: boolean) => {
    const own = snapshot.clustersOf.get(l);
    if (own !== undefined) {
      for (const r of snapshot.routeConfigsOf.get(l) ?? []) routeConfigs.add(r);
      for (const s of snapshot.secretsOf.get(l) ?? []) secrets.add(s);
      for (const c of own) clusters.add(c);
    } else if (named && isApiListenerName(l)) {
      routeConfigs.add(hostRoutesName(l));
      for (const c of clustersOfHostName(snapshot, l)) clusters.add(c);
    }
  };
  if (listeners.wildcard) for (const l of snapshot.clustersOf.keys()) add(l, false);
  for (const l of listeners.names) add(l, true);
  return new Map<string, ReadonlySet<string>>([
    [TYPE_URL.routeConfiguration, routeConfigs],
    [TYPE_URL.cluster, clusters],
    [TYPE_URL.clusterLoadAssignment, clusters],
    [TYPE_URL.secret, secrets],
  ]);
}

/** The clusters the routes of the virtual host `hostname` lands on reach. */
function clustersOfHostName(snapshot: XdsSnapshot, hostname: string): readonly string[] {
  const domain = domainFor(hostname, snapshot.clustersOfDomain);
  return domain === undefined ? [] : (snapshot.clustersOfDomain.get(domain) ?? []);
}

/** Whether a subscription asks for every name in `needed`. */
export function covers(subscription: Names | undefined, needed: ReadonlySet<string>): boolean {
  if (needed.size === 0) return true;
  if (subscription === undefined) return false;
  if (subscription.wildcard) return true;
  for (const n of needed) if (!subscription.names.has(n)) return false;
  return true;
}

/**
 * The keys of the routes a client that asked LDS for `listeners` was sent:
 * every route through Envoy's listener; through an API listener HOST, the
 * routes of the virtual host HOST lands on. `*`: every route.
 */
export function routesOfListeners(snapshot: XdsSnapshot, listeners: Names): "*" | ReadonlySet<string> {
  if (listeners.wildcard) return "*";
  const keys = new Set<string>();
  for (const l of listeners.names) {
    if (snapshot.clustersOf.has(l)) return "*";
    if (!isApiListenerName(l)) continue;
    const domain = domainFor(l, snapshot.routesOfDomain);
    for (const k of domain === undefined ? [] : (snapshot.routesOfDomain.get(domain) ?? [])) keys.add(k);
  }
  return keys;
}

const VIRTUAL_HOST = "envoy.config.route.v3.VirtualHost";
const VIRTUAL_HOSTS_FIELD = fieldNumber(TYPE_URL.routeConfiguration, "virtual_hosts");
const ROUTE = "envoy.config.route.v3.Route";
const ROUTES_FIELD = fieldNumber(VIRTUAL_HOST, "routes");
const ROUTES_KEY = fieldKey(ROUTES_FIELD);

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
 * What a resource is kept by from one snapshot to the next: the hash of its
 * JSON, not the JSON (at 10,000 routes the virtual hosts' JSON is megabytes
 * the server would otherwise hold).
 */
function jsonKey(json: unknown): string {
  return createHash("sha256").update(JSON.stringify(json)).digest("base64");
}

/** A route configuration's bytes: its head (the name), then each virtual host as a repeated field. */
function routeConfigBytes(name: string, hosts: readonly Uint8Array[]): Buffer {
  const head: AdsRouteConfiguration = { "@type": TYPE_URL.routeConfiguration, name };
  const parts: Uint8Array[] = [encodeResource(head).value];
  for (const bytes of hosts) parts.push(fieldKey(VIRTUAL_HOSTS_FIELD), varint(bytes.byteLength), bytes);
  return Buffer.concat(parts);
}

function routeConfigResource(name: string, hosts: readonly Uint8Array[]): XdsResource {
  const value = routeConfigBytes(name, hosts);
  return { name, version: shortHash(value), any: { type_url: TYPE_URL.routeConfiguration, value } };
}

/** Per-host route configurations one snapshot keeps; names come from clients, so they are bounded. */
const MAX_HOST_ROUTES = 10_000;

interface HostRoutes {
  /** The key (JSON hash) of the virtual host it was made of. */
  readonly key: string;
  readonly resource: XdsResource;
}

interface HostReach {
  readonly clusters: readonly string[];
  readonly routes: readonly string[];
}

interface EncodedHost {
  readonly key: string;
  readonly domains: readonly string[];
  /** Moved into the route configuration's bytes once that is made (routeConfiguration). */
  bytes: Uint8Array;
  /** gRPC's form (grpc.ts grpcVirtualHost), only where it differs from Envoy's. */
  readonly grpcBytes?: Uint8Array;
  /** For a host made of its route entries: entry i is bytes[offsets[i], offsets[i + 1]). */
  readonly offsets?: Uint32Array;
}

type RouteEntry = AdsVirtualHost["routes"][number];

/**
 * Where a route entry's bytes lie: in the last host encoded with it. A place,
 * not a copy: at 10,000 routes a buffer per entry raised the server's peak
 * by 10 MiB, and a view per entry, moved with its host, cost 20 ms a build.
 */
interface EntryPlace {
  host: EncodedHost;
  index: number;
}

/**
 * Encoded resources are kept from one snapshot to the next: by object (a part
 * the build kept, src/translate/keep-unchanged.ts), else by their JSON's hash.
 * A one-route change encodes that route's entries and splices the route
 * configuration, not ten thousand clusters or routes.
 */
export class XdsEncoder {
  private previous = new Map<string, XdsResource>();
  /** The last snapshot's per-host route configurations: one whose virtual host is unchanged is kept. */
  private previousHostRoutes = new Map<string, HostRoutes>();
  /**
   * What was made of each object, by object: a part the build kept from the
   * last snapshot (src/translate/keep-unchanged.ts) is found here without
   * serializing it to find its key.
   */
  private readonly encodedHosts = new WeakMap<AdsVirtualHost, EncodedHost>();
  private readonly encodedResources = new WeakMap<ResourceJson, { key: string; resource: XdsResource }>();
  private readonly hostReach = new WeakMap<object, HostReach>();
  private readonly entryPlaces = new WeakMap<RouteEntry, EntryPlace>();

  /**
   * Each virtual host is encoded once per object, and spliced from its
   * entries' bytes (virtualHostBytes): a host that did not change keeps its
   * bytes from the last snapshot, and one that did costs its new entries.
   */
  private virtualHosts(rc: AdsRouteConfiguration): EncodedHost[] {
    return (rc.virtual_hosts ?? []).map((vh) => {
      const known = this.encodedHosts.get(vh);
      if (known !== undefined) return known;
      const { bytes, offsets } = this.virtualHostBytes(vh);
      const grpc = grpcVirtualHost(vh);
      const host: EncodedHost = {
        // Its bytes say what it is: equal keys, equal bytes served.
        key: shortHash(bytes),
        domains: vh.domains,
        bytes,
        ...(grpc === vh ? {} : { grpcBytes: this.virtualHostBytes(grpc).bytes }),
        ...(offsets === undefined ? {} : { offsets }),
      };
      if (offsets !== undefined)
        vh.routes.forEach((r, index) => {
          const place = this.entryPlaces.get(r);
          if (place === undefined) this.entryPlaces.set(r, { host, index });
          else [place.host, place.index] = [host, index];
        });
      this.encodedHosts.set(vh, host);
      return host;
    });
  }

  /** A route entry's bytes, framed (field key, length, message), if a host was encoded with it. */
  private entryBytes(r: RouteEntry): Uint8Array | undefined {
    const place = this.entryPlaces.get(r);
    const offsets = place?.host.offsets;
    if (place === undefined || offsets === undefined) return undefined;
    return place.host.bytes.subarray(offsets[place.index], offsets[place.index + 1]);
  }

  /**
   * encodeMessage(VirtualHost, vh), spliced from its route entries' bytes
   * where a host was encoded with them before: a host where one route
   * changed encodes that route's entries, not the host's thousand others.
   * Protobuf writes fields in number order (name 1, domains 2, routes 3), so
   * the head and then each entry as a repeated field are the same bytes; a
   * host with any other field is encoded whole, and so is one with no entry
   * known, whose entries are then found in its bytes. test/unit/xds.golden.test.ts
   * and translate/keep-unchanged.test.ts check the bytes.
   */
  private virtualHostBytes(vh: AdsVirtualHost): { bytes: Uint8Array; offsets?: Uint32Array } {
    const { routes, ...head } = vh;
    for (const k in head)
      if (k !== "name" && k !== "domains") return { bytes: encodeMessage(VIRTUAL_HOST, vh) };
    const offsets = new Uint32Array(routes.length + 1);
    if (!routes.some((r) => this.entryPlaces.has(r))) {
      const bytes = encodeMessage(VIRTUAL_HOST, vh);
      const spans = fieldSpans(bytes).filter((f) => f.field === ROUTES_FIELD);
      if (spans.length !== routes.length) return { bytes };
      offsets[0] = spans[0]?.start ?? bytes.byteLength;
      spans.forEach((f, i) => (offsets[i + 1] = f.end));
      return { bytes, offsets };
    }
    const parts: Uint8Array[] = [encodeMessage(VIRTUAL_HOST, head)];
    let at = (offsets[0] = (parts[0] as Uint8Array).byteLength);
    routes.forEach((r, i) => {
      let entry = this.entryBytes(r);
      if (entry === undefined) {
        const message = encodeMessage(ROUTE, r);
        entry = Buffer.concat([ROUTES_KEY, varint(message.byteLength), message]);
      }
      parts.push(entry);
      offsets[i + 1] = at += entry.byteLength;
    });
    return { bytes: Buffer.concat(parts), offsets };
  }

  /** The clusters and route keys of a virtual host, as gRPC's client reaches them; once per object. */
  private reachOf(vh: AdsVirtualHost): HostReach {
    // What a gRPC client subscribes to: the clusters of the routes its form keeps.
    return perObject(this.hostReach, vh, () => ({
      clusters: clustersOfVirtualHost(grpcVirtualHost(vh)),
      routes: routesOfVirtualHost(vh),
    }));
  }

  /**
   * The route configuration, after which its virtual hosts' bytes are kept as
   * views into its own: one copy of every virtual host (and of its entries)
   * is held, not two.
   */
  private routeConfiguration(name: string, hosts: EncodedHost[]): XdsResource {
    const r = routeConfigResource(
      name,
      hosts.map((h) => h.bytes),
    );
    const value = r.any.value;
    let end = value.byteLength;
    for (let i = hosts.length - 1; i >= 0; i--) {
      const h = hosts[i] as EncodedHost;
      const len = h.bytes.byteLength;
      h.bytes = value.subarray(end - len, end);
      end -= len + varint(len).byteLength + fieldKey(VIRTUAL_HOSTS_FIELD).byteLength;
    }
    return r;
  }

  /**
   * `edge/HOST`, made on first ask: the bytes of grpc.ts's
   * hostRouteConfiguration (the virtual host HOST lands on, the catch-all `*`
   * at least), spliced from the virtual hosts already encoded rather than
   * encoded again; test/unit/xds.golden.test.ts checks they are the same bytes.
   */
  private hostRoutesOf(
    byDomain: ReadonlyMap<string, EncodedHost>,
    made: Map<string, HostRoutes>,
    kept: ReadonlyMap<string, HostRoutes>,
  ): (hostname: string) => XdsResource {
    return (hostname) => {
      const own = made.get(hostname);
      if (own !== undefined) return own.resource;
      const domain = domainFor(hostname, byDomain);
      const vhost = (domain === undefined ? undefined : byDomain.get(domain)) ?? noRoutesVirtualHost();
      const before = kept.get(hostname);
      const entry: HostRoutes =
        before !== undefined && before.key === vhost.key
          ? before
          : {
              key: vhost.key,
              resource: routeConfigResource(hostRoutesName(hostname), [vhost.grpcBytes ?? vhost.bytes]),
            };
      if (made.size < MAX_HOST_ROUTES) made.set(hostname, entry);
      return entry.resource;
    };
  }

  encode(snapshot: Snapshot): XdsSnapshot {
    const next = new Map<string, XdsResource>();
    const one = (name: string, json: ResourceJson): XdsResource => {
      let known = this.encodedResources.get(json);
      if (known === undefined) {
        const key = jsonKey(json);
        let resource = this.previous.get(key) ?? next.get(key);
        if (resource === undefined) {
          const any = encodeResource(json);
          resource = { name, version: shortHash(any.value), any };
        }
        known = { key, resource };
        this.encodedResources.set(json, known);
      }
      next.set(known.key, known.resource);
      return known.resource;
    };
    const { resources } = snapshot;
    const served = adsResources(resources);
    const byDomain = new Map<string, EncodedHost>();
    const routeConfigs = served.routeConfigurations.map((c) => {
      const hosts = this.virtualHosts(c);
      for (const h of hosts) for (const d of h.domains) byDomain.set(d, h);
      return this.routeConfiguration(c.name, hosts);
    });
    const lists: Record<XdsTypeUrl, XdsResource[]> = {
      [TYPE_URL.cluster]: served.clusters.map((c) => one(c.name, c)),
      [TYPE_URL.clusterLoadAssignment]: served.clusterLoadAssignments.map((c) => one(c.cluster_name, c)),
      // Its own version is the hash of its bytes: a renewed certificate changes this resource only.
      [TYPE_URL.secret]: served.secrets.map((s) => one(s.name, s)),
      [TYPE_URL.listener]: served.listeners.map((l) => one(l.name, l)),
      [TYPE_URL.routeConfiguration]: routeConfigs,
    };
    this.previous = next;
    const made = new Map<string, HostRoutes>();
    const hostRoutes = this.hostRoutesOf(byDomain, made, this.previousHostRoutes);
    this.previousHostRoutes = made;
    const clustersOf = new Map<string, readonly string[]>();
    const routeConfigsOf = new Map<string, readonly string[]>();
    const secretsOf = new Map<string, readonly string[]>();
    const all = resources.clusters.map((c) => c.name);
    for (const l of resources.listeners) clustersOf.set(l.name, all);
    const https = resources.routeConfigurations.map((c) => c.name).filter((n) => n !== ROUTE_CONFIG_NAME);
    for (const l of resources.listeners) {
      const isHttps = l.name === HTTPS_LISTENER_NAME;
      routeConfigsOf.set(l.name, isHttps ? https : [ROUTE_CONFIG_NAME]);
      if (isHttps)
        secretsOf.set(
          l.name,
          resources.secrets.map((s) => s.name),
        );
    }
    const clustersOfDomain = new Map<string, readonly string[]>();
    const routesOfDomain = new Map<string, readonly string[]>();
    for (const c of resources.routeConfigurations)
      for (const vh of c.virtual_hosts ?? []) {
        const { clusters, routes } = this.reachOf(vh as AdsVirtualHost);
        for (const d of vh.domains) {
          clustersOfDomain.set(d, clusters);
          routesOfDomain.set(d, routes);
        }
      }
    const types = typesOf(lists);
    const full: Omit<XdsSnapshot, "plain"> = {
      version: snapshot.version,
      types,
      clustersOf,
      routeConfigsOf,
      secretsOf,
      clustersOfDomain,
      routesOfDomain,
      routes: snapshot.outcomes.filter((o) => o.accepted).map((o) => o.key),
      tlsRoutes: new Set(
        snapshot.outcomes.filter((o) => o.tls !== undefined && o.tls.served.length > 0).map((o) => o.key),
      ),
      hostRoutes,
    };
    if (!clustersOf.has(HTTPS_LISTENER_NAME) && lists[TYPE_URL.secret].length === 0) {
      const self: XdsSnapshot = {
        ...full,
        get plain() {
          return self;
        },
      };
      return self;
    }
    const plain: XdsSnapshot = {
      ...full,
      types: typesOf({
        ...lists,
        [TYPE_URL.secret]: [],
        [TYPE_URL.listener]: lists[TYPE_URL.listener].filter((r) => r.name !== HTTPS_LISTENER_NAME),
        [TYPE_URL.routeConfiguration]: lists[TYPE_URL.routeConfiguration].filter(
          (r) => r.name === ROUTE_CONFIG_NAME,
        ),
      }),
      clustersOf: without(clustersOf, HTTPS_LISTENER_NAME),
      routeConfigsOf: without(routeConfigsOf, HTTPS_LISTENER_NAME),
      secretsOf: new Map(),
      get plain() {
        return plain;
      },
    };
    return { ...full, plain };
  }
}

function typesOf(lists: Record<XdsTypeUrl, readonly XdsResource[]>): Map<string, XdsTypeResources> {
  const types = new Map<string, XdsTypeResources>();
  for (const url of PUSH_ORDER) {
    const list = lists[url];
    types.set(url, { list, byName: new Map(list.map((r) => [r.name, r])), digest: digestOf(list) });
  }
  return types;
}

function without<V>(map: ReadonlyMap<string, V>, key: string): Map<string, V> {
  const out = new Map(map);
  out.delete(key);
  return out;
}

let noRoutes: EncodedHost | undefined;
/** The catch-all virtual host without routes, encoded once. */
function noRoutesVirtualHost(): EncodedHost {
  if (noRoutes === undefined) {
    const bytes = encodeMessage(VIRTUAL_HOST, NO_ROUTES);
    noRoutes = { key: shortHash(bytes), domains: NO_ROUTES.domains, bytes };
  }
  return noRoutes;
}

/** Names beyond what the snapshots hold that a stream may ask for, per type. */
export const SPARE_NAMES = 10_000;

/**
 * How many names of a type a snapshot gives a client a reason to ask for:
 * every resource of the type and every host it routes.
 */
export function namesWorthAsking(snapshot: XdsSnapshot, typeUrl: string): number {
  return (snapshot.types.get(typeUrl)?.list.length ?? 0) + snapshot.clustersOfDomain.size;
}
