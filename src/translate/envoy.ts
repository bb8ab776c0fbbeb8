// The translation's second step: the routing model becomes Envoy's resources,
// in two forms.
//  - envoyResources: what the snapshot holds and its version hashes; with the
//    default config source, the form Envoy reads from the envoy-configmap
//    sink's files (envoy-files.ts), RDS and EDS pointing at those files.
//  - adsResources: what the xds sink serves over ADS, one form that Envoy and
//    gRPC's xDS client both read (each resource is encoded once and sent to
//    both, docs/architecture.md "The xds sink"), since gRPC's client refuses
//    or mishandles some of what Envoy takes:
//     - every config source is ADS;
//     - `path_separated_prefix` (a whole-segment prefix), which gRPC's client
//       refuses, becomes the pair it means: the exact path and the prefix with
//       a slash. Envoy reads both the same way, so both get the same routes;
//     - a route's timeout is also its `max_stream_duration`, the field gRPC reads;
//     - a catch-all virtual host without routes when there is none: grpc-js-xds
//       1.14 throws (an unhandled rejection, and the channel keeps its old
//       routes) when no virtual host matches its target;
//     - endpoints carry a locality and its weight: gRPC's client refuses a
//       locality left unset, and skips one without a weight (Envoy ignores
//       both unless locality-weighted balancing is asked for).

import {
  cluster,
  clusterLoadAssignment,
  DEFAULT_XDS_DIR,
  HTTPS_LISTENER_NAME,
  httpsListener,
  httpsRoutesName,
  listener,
  ROUTE_CONFIG_NAME,
  secretResource,
  TYPE_URL,
  type Cluster,
  type ClusterLoadAssignment,
  type ConfigSource,
  type ConfigSourceOptions,
  type EnvoyResources,
  type EnvoyRoute,
  type LbEndpoint,
  type Listener,
  type ListenerOptions,
  type RedirectRoute,
  type RedirectVirtualHost,
  type RouteAction,
  type RouteConfiguration,
  type RouteHeaderEdits,
  type Secret,
  type VirtualHost,
} from "../envoy/envoy-resources.js";
import { TLS12_CIPHER_SUITES } from "../envoy/tls-ciphers.js";
import { perObject } from "../api/per-object.js";
import { compareHostnames } from "../routing/route-order.js";
import type { RouteModel } from "./model.js";
import type { TlsModel } from "./tls-hosts.js";

export interface EnvoyOptions {
  /** Default 0.0.0.0:8080. */
  readonly listener?: Partial<ListenerOptions>;
  /** Default: files in /etc/envoy/xds, the envoy-configmap sink's mount. */
  readonly configSource?: ConfigSourceOptions;
  /** Protobuf Duration JSON; default `5s`. */
  readonly connectTimeout?: string;
  /** The HTTPS listener, made only when a host is served over TLS; default 0.0.0.0:8443. */
  readonly httpsListener?: Partial<ListenerOptions>;
  /** When certificates are checked for validity; default: the time of the build. */
  readonly now?: Date;
}

/** The plain listener's one route for a host whose plain HTTP goes to HTTPS. */
function redirectHost(hostname: string, routeKey: string): RedirectVirtualHost {
  const route: RedirectRoute = {
    name: `${routeKey}/https-redirect`,
    match: { prefix: "/" },
    redirect: { https_redirect: true, response_code: "MOVED_PERMANENTLY" },
  };
  return { name: hostname, domains: [hostname], routes: [route] };
}

/** `edge`'s virtual hosts: a TLS host that redirects gets the redirect instead of its routes. */
function plainVirtualHosts(
  virtualHosts: readonly VirtualHost[],
  tls: TlsModel,
): readonly (VirtualHost | RedirectVirtualHost)[] {
  const redirects = new Map(tls.hosts.filter((h) => h.redirect).map((h) => [h.hostname, h.route]));
  if (redirects.size === 0) return virtualHosts;
  const out: (VirtualHost | RedirectVirtualHost)[] = virtualHosts.map((vh) => {
    const route = redirects.get(vh.name);
    return route === undefined ? vh : redirectHost(vh.name, route);
  });
  const present = new Set(virtualHosts.map((vh) => vh.name));
  for (const [hostname, route] of redirects)
    if (!present.has(hostname)) out.push(redirectHost(hostname, route));
  return out.sort((a, b) => compareHostnames(a.name, b.name));
}

/**
 * `https/HOST` for each host served over TLS: the host's own virtual host,
 * with every route of it (TLS is the host's, as in Contour: its paths may come
 * from several routes).
 */
function httpsRouteConfigurations(virtualHosts: readonly VirtualHost[], tls: TlsModel): RouteConfiguration[] {
  const byName = new Map(virtualHosts.map((vh) => [vh.name, vh]));
  return tls.hosts.map((h) => ({
    "@type": TYPE_URL.routeConfiguration,
    name: httpsRoutesName(h.hostname),
    virtual_hosts: [byName.get(h.hostname) ?? { name: h.hostname, domains: [h.hostname], routes: [] }],
  }));
}

function secretsOf(tls: TlsModel): Secret[] {
  return [...tls.secrets].map(([name, s]) => secretResource(name, s.certificate, s.privateKey));
}

/**
 * The model as Envoy's resources, pointing RDS and EDS at `options.configSource`.
 * With hosts served over TLS, also the HTTPS listener `https` (always over
 * ADS), a route configuration `https/HOST` per host after `edge` (a reader
 * that indexes virtual hosts by domain, later ones winning, so finds a TLS
 * host's real routes: what gRPC's `edge/HOST` carries), and their Secrets.
 */
export function envoyResources(model: RouteModel, options: EnvoyOptions = {}): EnvoyResources {
  const source = options.configSource ?? { kind: "path", dir: DEFAULT_XDS_DIR };
  const { virtualHosts, clusters, tls } = model;
  const plain = plainVirtualHosts(virtualHosts, tls);
  const https =
    tls.hosts.length === 0
      ? []
      : [
          httpsListener(
            {
              address: options.httpsListener?.address ?? "0.0.0.0",
              port: options.httpsListener?.port ?? 8443,
            },
            tls.hosts,
            TLS12_CIPHER_SUITES,
          ),
        ];
  return {
    listeners: [
      listener(
        { address: options.listener?.address ?? "0.0.0.0", port: options.listener?.port ?? 8080 },
        source,
      ),
      ...https,
    ],
    routeConfigurations: [
      plain.length === 0
        ? { "@type": TYPE_URL.routeConfiguration, name: ROUTE_CONFIG_NAME }
        : { "@type": TYPE_URL.routeConfiguration, name: ROUTE_CONFIG_NAME, virtual_hosts: plain },
      ...httpsRouteConfigurations(virtualHosts, tls),
    ],
    clusters: clusters.map((c) => cluster(c.name, options.connectTimeout ?? "5s", source)),
    clusterLoadAssignments: clusters.map((c) => clusterLoadAssignment(c.name, c.addresses)),
    secrets: secretsOf(tls),
  };
}

/** A resource in proto3 JSON form. */
export interface ResourceJson {
  readonly "@type": string;
}

export type AdsRoute = Omit<Extract<EnvoyRoute, { readonly route: RouteAction }>, "match" | "route"> & {
  readonly match: Readonly<Record<string, unknown>>;
  readonly route: RouteAction & { readonly max_stream_duration?: { readonly max_stream_duration: string } };
};

/** A rule's RequestRedirect, or the TLS host's redirect to HTTPS. */
export type AdsRedirectRoute = Omit<Extract<EnvoyRoute, { readonly redirect: unknown }>, "match"> & {
  readonly match: Readonly<Record<string, unknown>>;
};

export type AdsVirtualHost = Omit<VirtualHost, "routes"> & {
  readonly routes: readonly (AdsRoute | AdsRedirectRoute | RedirectRoute)[];
};

export interface AdsRouteConfiguration extends ResourceJson {
  readonly name: string;
  readonly virtual_hosts?: readonly AdsVirtualHost[];
}

export interface AdsClusterLoadAssignment extends ResourceJson {
  readonly cluster_name: string;
  readonly endpoints?: readonly [
    {
      readonly locality: Record<string, never>;
      readonly lb_endpoints: readonly LbEndpoint[];
      readonly load_balancing_weight: number;
    },
  ];
}

/**
 * What the xds sink serves: Envoy's listeners, `edge` (and `https/HOST`), the
 * clusters and their endpoints to every client; the Secrets only to clients
 * authenticated by mutual TLS.
 */
export interface AdsResources {
  readonly listeners: readonly Listener[];
  readonly routeConfigurations: readonly AdsRouteConfiguration[];
  readonly clusters: readonly Cluster[];
  readonly clusterLoadAssignments: readonly (ClusterLoadAssignment | AdsClusterLoadAssignment)[];
  readonly secrets: readonly Secret[];
}

const ADS_SOURCE: ConfigSource = { ads: {}, resource_api_version: "V3" };

/** The virtual host for hosts no route names: no routes (Envoy answers 404, gRPC UNAVAILABLE, as with none). */
export const NO_ROUTES: AdsVirtualHost = { name: "*", domains: ["*"], routes: [] };

/**
 * The route's timeout as gRPC's client reads it too: gRFC A31 takes the call's
 * deadline from `max_stream_duration` (and ignores `timeout`, Envoy's); Envoy
 * bounds the whole stream by it, which is what the route's timeout means.
 */
function withStreamDuration(action: RouteAction): AdsRoute["route"] {
  if (action.timeout === undefined) return action;
  let a = streamDurations.get(action);
  if (a === undefined) {
    a = { ...action, max_stream_duration: { max_stream_duration: action.timeout } };
    streamDurations.set(action, a);
  }
  return a;
}
/** One per action object: actions are shared by every rule that sends the same way (route-actions.ts). */
const streamDurations = new WeakMap<RouteAction, AdsRoute["route"]>();

/**
 * The route configuration with each whole-segment prefix spelt as an exact
 * path and a prefix, each timeout also a stream duration, and a catch-all
 * virtual host without routes when there is none.
 */
export function adsRouteConfiguration(rc: RouteConfiguration): AdsRouteConfiguration {
  const hosts = rc.virtual_hosts ?? [];
  // `https/HOST` is Envoy's only, and reached by its SNI name: no catch-all.
  const catchAll =
    rc.name !== ROUTE_CONFIG_NAME || hosts.some((vh) => vh.domains.includes("*")) ? [] : [NO_ROUTES];
  return { ...rc, virtual_hosts: [...hosts.map(adsVirtualHost), ...catchAll] };
}

/** A virtual host in its ADS form, made once per object: a host kept from the last build (keep-unchanged.ts) keeps it. */
function adsVirtualHost(vh: VirtualHost | RedirectVirtualHost): AdsVirtualHost {
  return perObject(adsHosts, vh, () => ({
    ...vh,
    routes: (vh.routes as readonly (EnvoyRoute | RedirectRoute)[]).flatMap(adsEntries),
  }));
}

type AdsEntry = AdsRoute | AdsRedirectRoute | RedirectRoute;

/** A route entry in its ADS form (two for a whole-segment prefix), made once per entry object, as hosts are. */
function adsEntries(r: EnvoyRoute | RedirectRoute): readonly AdsEntry[] {
  return perObject(adsEntryForms, r, (): readonly AdsEntry[] => {
    if ("redirect" in r) {
      if (!("path_separated_prefix" in r.match)) return [r];
      const { path_separated_prefix: p, ...conditions } = r.match;
      return [
        { ...r, match: { path: p, ...conditions } },
        { ...r, match: { prefix: `${p}/`, ...conditions } },
      ];
    }
    const route = withStreamDuration(r.route);
    if (!("path_separated_prefix" in r.match)) return [{ ...r, route }];
    const { path_separated_prefix: p, ...conditions } = r.match;
    const edits = entryEdits(r);
    if (edits === undefined)
      return [
        { name: r.name, match: { path: p, ...conditions }, route },
        { name: r.name, match: { prefix: `${p}/`, ...conditions }, route },
      ];
    return [
      { name: r.name, match: { path: p, ...conditions }, route, ...edits },
      { name: r.name, match: { prefix: `${p}/`, ...conditions }, route, ...edits },
    ];
  });
}
const adsEntryForms = new WeakMap<EnvoyRoute | RedirectRoute, readonly AdsEntry[]>();
const adsHosts = new WeakMap<VirtualHost | RedirectVirtualHost, AdsVirtualHost>();

/** A route entry's header edits, or undefined when it has none. */
function entryEdits(r: RouteHeaderEdits): RouteHeaderEdits | undefined {
  const {
    request_headers_to_add,
    request_headers_to_remove,
    response_headers_to_add,
    response_headers_to_remove,
  } = r;
  if (
    request_headers_to_add === undefined &&
    request_headers_to_remove === undefined &&
    response_headers_to_add === undefined &&
    response_headers_to_remove === undefined
  )
    return undefined;
  return {
    ...(request_headers_to_add === undefined ? {} : { request_headers_to_add }),
    ...(request_headers_to_remove === undefined ? {} : { request_headers_to_remove }),
    ...(response_headers_to_add === undefined ? {} : { response_headers_to_add }),
    ...(response_headers_to_remove === undefined ? {} : { response_headers_to_remove }),
  };
}

/** The endpoints in one locality of weight 1, which gRPC's client needs and Envoy ignores. */
export function withLocality(cla: ClusterLoadAssignment): ClusterLoadAssignment | AdsClusterLoadAssignment {
  const endpoints = cla.endpoints;
  if (endpoints === undefined) return cla;
  return perObject(localities, cla, () => {
    const [{ lb_endpoints }] = endpoints;
    return { ...cla, endpoints: [{ locality: {}, lb_endpoints, load_balancing_weight: 1 }] };
  });
}
const localities = new WeakMap<ClusterLoadAssignment, AdsClusterLoadAssignment>();

/** A cluster pointing EDS at ADS. */
function adsCluster(c: Cluster): Cluster {
  return perObject(adsClusters, c, () => ({
    ...c,
    eds_cluster_config: { eds_config: ADS_SOURCE, service_name: c.eds_cluster_config.service_name },
  }));
}
const adsClusters = new WeakMap<Cluster, Cluster>();

/** The snapshot's resources as served over ADS, whatever config source the snapshot was built with. */
export function adsResources(resources: EnvoyResources): AdsResources {
  return {
    listeners: resources.listeners.map((l) =>
      // The HTTPS listener is made for ADS already.
      l.name === HTTPS_LISTENER_NAME
        ? l
        : listener(
            { address: l.address.socket_address.address, port: l.address.socket_address.port_value },
            { kind: "ads" },
          ),
    ),
    routeConfigurations: resources.routeConfigurations.map(adsRouteConfiguration),
    clusters: resources.clusters.map(adsCluster),
    clusterLoadAssignments: resources.clusterLoadAssignments.map(withLocality),
    secrets: resources.secrets,
  };
}
