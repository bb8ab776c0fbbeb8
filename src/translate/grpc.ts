// The translation's last step for a proxyless gRPC client: what it receives
// for the host names it asks LDS for (a channel to `xds:///HOST` asks for HOST).
//  - an API listener named HOST whose HTTP connection manager reads the route
//    configuration `edge/HOST` through ADS;
//  - `edge/HOST`: only the virtual host HOST lands on in the served `edge`
//    (exact, then the longest `*.suffix`, then `*`, as gRPC and Envoy pick
//    it), so a route change reaches only the clients of its host;
//  - the clusters those routes reach, and their endpoints, as served to Envoy
//    (envoy.ts's ADS form is written for gRPC's client too).
// Envoy's listener is not among them: an API listener is what gRPC takes, and
// Envoy takes its own listener only (docs/architecture.md, "The xds sink").

import {
  HTTPS_LISTENER_NAME,
  LISTENER_NAME,
  ROUTE_CONFIG_NAME,
  TYPE_URL,
  type ConfigSource,
} from "../envoy/envoy-resources.js";
import {
  NO_ROUTES,
  type AdsClusterLoadAssignment,
  type AdsResources,
  type AdsRouteConfiguration,
  type AdsVirtualHost,
  type ResourceJson,
} from "./envoy.js";
import { routeKeyOfEntry } from "./model.js";
import type { Cluster, ClusterLoadAssignment, HeaderMatcher, RouteAction } from "../envoy/envoy-resources.js";

const ROUTER = { name: "envoy.filters.http.router", typed_config: { "@type": TYPE_URL.router } } as const;
const ADS_SOURCE: ConfigSource = { ads: {}, resource_api_version: "V3" };

/** The API listener's shape, for the type checker; envoy-proto tests check it against Envoy's protos. */
export interface ApiListener extends ResourceJson {
  readonly name: string;
  readonly api_listener: { readonly api_listener: Readonly<Record<string, unknown>> };
}

/** The route configuration of one host's API listener: `edge/HOST` (a host name holds no `/`). */
export function hostRoutesName(hostname: string): string {
  return `${ROUTE_CONFIG_NAME}/${hostname}`;
}

/** The host name of a per-host route configuration's name, if it is one. */
export function hostOfRoutesName(name: string): string | undefined {
  const prefix = `${ROUTE_CONFIG_NAME}/`;
  if (!name.startsWith(prefix)) return undefined;
  const host = name.slice(prefix.length);
  return isApiListenerName(host) ? host : undefined;
}

const HOSTNAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A name a gRPC target can ask LDS for: a DNS-1123 host name, and not one of Envoy's own listeners'. */
export function isApiListenerName(name: string): boolean {
  return name.length <= 253 && HOSTNAME.test(name) && name !== LISTENER_NAME && name !== HTTPS_LISTENER_NAME;
}

/** The API listener a gRPC client asks for by the host name in its `xds:///HOST` target. */
export function apiListener(hostname: string): ApiListener {
  return {
    "@type": TYPE_URL.listener,
    name: hostname,
    api_listener: {
      api_listener: {
        "@type": TYPE_URL.httpConnectionManager,
        stat_prefix: "edge",
        rds: { config_source: ADS_SOURCE, route_config_name: hostRoutesName(hostname) },
        http_filters: [ROUTER],
      },
    },
  };
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

/** The virtual hosts of route configurations by each of their domains. */
export function virtualHostsByDomain<V extends { readonly domains: readonly string[] }>(
  routeConfigurations: readonly { readonly virtual_hosts?: readonly V[] }[],
): Map<string, V> {
  const byDomain = new Map<string, V>();
  for (const rc of routeConfigurations)
    for (const vh of rc.virtual_hosts ?? []) for (const d of vh.domains) byDomain.set(d, vh);
  return byDomain;
}

type AdsEntry = AdsVirtualHost["routes"][number];

/**
 * A regex as gRPC's clients read it with Envoy's meaning, the whole value
 * (RE2 FullMatch): grpc-js-xds 1.14 compiles `new RE2('^' + regex + '$', 'u')`
 * (matcher.js, SafeRegexValueMatcher and PathSafeRegexValueMatcher), which
 * binds the anchors to an alternation's ends (`^/a|/b$`); a group keeps them
 * outside it. grpc-go 1.85 groups it itself, `^(?:regex)$` (internal/xds/matcher
 * CompileSafeRegex), where one more group changes nothing.
 */
export function grpcRegex(regex: string): string {
  return `(?:${regex})`;
}

function grpcHeader(h: HeaderMatcher): HeaderMatcher {
  return "safe_regex" in h.string_match
    ? { ...h, string_match: { safe_regex: { regex: grpcRegex(h.string_match.safe_regex.regex) } } }
    : h;
}

/**
 * A match as gRPC's client reads it: its regexes grouped (grpcRegex), its
 * header matchers without `:method` POST (every gRPC call is one); undefined
 * when the match is no gRPC call's. The same object when nothing changes.
 */
function grpcMatch(match: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> | undefined {
  if (match.query_parameters !== undefined) return undefined;
  const headers = match.headers as readonly HeaderMatcher[] | undefined;
  const method = headers?.find((h) => h.name === ":method");
  if (method !== undefined && (!("exact" in method.string_match) || method.string_match.exact !== "POST"))
    return undefined;
  const pathRegex = match.safe_regex as { readonly regex: string } | undefined;
  const regexHeader = headers?.some((h) => "safe_regex" in h.string_match) ?? false;
  if (method === undefined && pathRegex === undefined && !regexHeader) return match;
  const rest = (headers ?? []).filter((h) => h !== method).map(grpcHeader);
  const { headers: _, ...others } = match;
  return {
    ...others,
    ...(pathRegex === undefined ? {} : { safe_regex: { regex: grpcRegex(pathRegex.regex) } }),
    ...(rest.length === 0 ? {} : { headers: rest }),
  };
}

/**
 * The virtual host as gRPC's client reads it (grpc-unapplied.ts says why):
 * without redirects, which it NACKs, and without matches no gRPC call can
 * take (a query parameter, a method other than POST); a POST match loses its
 * `:method`, which gRPC's metadata never holds; a regex is grouped so that
 * it means the whole value, as Envoy reads it. The same object when nothing changes.
 */
export function grpcVirtualHost(vh: AdsVirtualHost): AdsVirtualHost {
  let changed = false;
  const routes: AdsEntry[] = [];
  for (const r of vh.routes) {
    if ("redirect" in r) {
      changed = true;
      continue;
    }
    const match = grpcMatch(r.match);
    if (match === r.match) routes.push(r);
    else {
      changed = true;
      if (match !== undefined) routes.push({ ...r, match });
    }
  }
  return changed ? { ...vh, routes } : vh;
}

/** `edge/HOST`: the one virtual host HOST lands on (in gRPC's form), or the catch-all without routes. */
export function hostRouteConfiguration(
  hostname: string,
  byDomain: ReadonlyMap<string, AdsVirtualHost>,
): AdsRouteConfiguration {
  const domain = domainFor(hostname, byDomain);
  const vhost = grpcVirtualHost((domain === undefined ? undefined : byDomain.get(domain)) ?? NO_ROUTES);
  return { "@type": TYPE_URL.routeConfiguration, name: hostRoutesName(hostname), virtual_hosts: [vhost] };
}

/** The keys (`namespace/name`) of the routes in a virtual host, sorted. */
export function routesOfVirtualHost(vh: {
  readonly routes: readonly { readonly name: string }[];
}): readonly string[] {
  return [...new Set(vh.routes.map((r) => routeKeyOfEntry(r.name)))].sort();
}

/** The clusters a virtual host's routes reach, sorted. */
export function clustersOfVirtualHost(vh: {
  readonly routes: readonly ({ readonly route: RouteAction } | { readonly redirect: unknown })[];
}): readonly string[] {
  const names = new Set<string>();
  for (const r of vh.routes) {
    // A redirect reaches no cluster.
    if (!("route" in r)) continue;
    if ("cluster" in r.route) names.add(r.route.cluster);
    else for (const c of r.route.weighted_clusters.clusters) names.add(c.name);
  }
  return [...names].sort();
}

/** What one gRPC client receives, by type. */
export interface GrpcResources {
  readonly listeners: readonly ApiListener[];
  readonly routeConfigurations: readonly AdsRouteConfiguration[];
  readonly clusters: readonly Cluster[];
  readonly clusterLoadAssignments: readonly (ClusterLoadAssignment | AdsClusterLoadAssignment)[];
}

/**
 * What a gRPC client with channels to `hosts` receives of the served
 * resources: per host its API listener and `edge/HOST`, and the clusters (and
 * endpoints) their routes reach, in the served order. A name that is no host
 * name (Envoy's listener's, say) gets nothing.
 */
export function grpcResources(served: AdsResources, hosts: readonly string[]): GrpcResources {
  const asked = hosts.filter(isApiListenerName);
  const byDomain = virtualHostsByDomain(served.routeConfigurations);
  const routeConfigurations = asked.map((h) => hostRouteConfiguration(h, byDomain));
  const reached = new Set<string>();
  for (const rc of routeConfigurations)
    for (const vh of rc.virtual_hosts ?? []) for (const c of clustersOfVirtualHost(vh)) reached.add(c);
  return {
    listeners: asked.map(apiListener),
    routeConfigurations,
    clusters: served.clusters.filter((c) => reached.has(c.name)),
    clusterLoadAssignments: served.clusterLoadAssignments.filter((c) => reached.has(c.cluster_name)),
  };
}
