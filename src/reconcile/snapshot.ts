// buildSnapshot: all live routes and the Services that exist become one set of
// Envoy resources, versioned by a hash of its content, with a verdict per route.
// Pure and deterministic: the same routes and endpoints in any order give the
// same snapshot. Terminating routes are the caller's to leave out.

import type { EdgeRouteV2, PathMatchType, RouteMatch, RouteRule } from "../api/types.js";
import {
  ClaimRegistry,
  claimKey,
  describeDropped,
  HELD,
  type DroppedMatch,
  type HeaderClaim,
} from "./conflicts.js";
import { contentVersion } from "./content-hash.js";
import {
  cluster,
  clusterLoadAssignment,
  clusterName,
  DEFAULT_XDS_DIR,
  listener,
  ROUTE_CONFIG_NAME,
  TYPE_URL,
  type ConfigSourceOptions,
  type EnvoyResources,
  type EnvoyRoute,
  type ListenerOptions,
  type RouteAction,
  type VirtualHost,
} from "./envoy-resources.js";
import { parseGatewayDuration } from "../api/duration.js";
import { protoDuration } from "./proto-duration.js";
import { envoyPathMatch, normalizePath } from "./path-match.js";
import { checkRoute } from "./route-check.js";
import { compareAge, compareHostnames, creationTime, orderKeyOf } from "./route-order.js";
import type { ServiceEndpoints, SocketAddress } from "./service-endpoints.js";

export type RejectReason = "Conflicted" | "ServiceNotFound" | "Invalid";

/** What the snapshot did with one route. `dropped` lists the matches an older route kept for itself. */
export type RouteOutcome =
  | { readonly key: string; readonly accepted: true; readonly dropped: readonly DroppedMatch[] }
  | {
      readonly key: string;
      readonly accepted: false;
      readonly reason: RejectReason;
      readonly message: string;
    };

export interface Snapshot {
  /** 16 hex digits of the SHA-256 of the resources' canonical JSON. */
  readonly version: string;
  readonly resources: EnvoyResources;
  /** One per input route, sorted by key. */
  readonly outcomes: readonly RouteOutcome[];
}

export interface SnapshotOptions {
  /** Default 0.0.0.0:8080. */
  readonly listener?: Partial<ListenerOptions>;
  /** Default: files in /etc/envoy/xds, the envoy-configmap sink's mount. */
  readonly configSource?: ConfigSourceOptions;
  /** Protobuf Duration JSON; default `5s`. */
  readonly connectTimeout?: string;
}

/** The routes' Services, by `namespace/name`; a Service absent from the map does not exist. */
export type EndpointsByService = ReadonlyMap<string, ServiceEndpoints>;

const ANY_HOST: readonly string[] = ["*"];
const NONE_DROPPED: readonly DroppedMatch[] = [];
const NO_HEADERS: readonly HeaderClaim[] = [];

/** The route's hostnames, or `*` for none; repeats would claim against themselves, so they go. */
function hostnamesOf(route: EdgeRouteV2): readonly string[] {
  const names = route.spec.hostnames;
  if (names === undefined || names.length === 0) return ANY_HOST;
  if (names.length === 1) return names;
  return [...new Set(names)];
}

/** A virtual host's routes and their order keys, side by side: no object per entry besides the route. */
interface HostRoutes {
  readonly keys: number[];
  readonly routes: EnvoyRoute[];
}

interface Candidate {
  readonly key: string;
  readonly created: number;
  readonly route: EdgeRouteV2;
}

export function routeKey(route: EdgeRouteV2): string {
  return `${route.metadata?.namespace ?? ""}/${route.metadata?.name ?? ""}`;
}

/** Gateway API: of several header matches with the same name, the first counts. */
function headerClaims(
  headers: readonly { name: string; value: string }[] | undefined,
): readonly HeaderClaim[] {
  if (headers === undefined || headers.length === 0) return NO_HEADERS;
  if (headers.length === 1) {
    const h = headers[0] as { name: string; value: string };
    return [{ name: h.name.toLowerCase(), value: h.value }];
  }
  const byName = new Map<string, string>();
  for (const h of headers) {
    const name = h.name.toLowerCase();
    if (!byName.has(name)) byName.set(name, h.value);
  }
  return [...byName]
    .map(([name, value]) => ({ name, value }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** One cluster per Service port; backends naming the same one add their weights; weight 0 sends nothing. */
function routeAction(namespace: string, rule: RouteRule): RouteAction {
  const ms = rule.timeout === undefined ? undefined : parseGatewayDuration(rule.timeout);
  const timeout = ms === undefined ? undefined : protoDuration(ms);
  // Plain arrays, not a Map: a rule has at most 8 backends and this runs for every rule.
  const names: string[] = [];
  const weights: number[] = [];
  for (const b of rule.backends) {
    const weight = b.weight ?? 1;
    if (weight <= 0) continue;
    const name = clusterName(namespace, b.name, b.port);
    const at = names.indexOf(name);
    if (at >= 0) weights[at] = (weights[at] as number) + weight;
    else {
      names.push(name);
      weights.push(weight);
    }
  }
  if (names.length === 1) {
    const cluster = names[0] as string;
    return timeout === undefined ? { cluster } : { cluster, timeout };
  }
  const clusters = names
    .map((name, i) => ({ name, weight: weights[i] as number }))
    .sort((x, y) => (x.name < y.name ? -1 : 1));
  const weighted_clusters = { clusters };
  return timeout === undefined ? { weighted_clusters } : { weighted_clusters, timeout };
}

function envoyRoute(
  routeKey: string,
  rule: number,
  match: number,
  pathType: PathMatchType,
  path: string,
  headers: readonly HeaderClaim[],
  action: RouteAction,
): EnvoyRoute {
  const name = `${routeKey}/r${rule}/m${match}`;
  const pathMatch = envoyPathMatch(pathType, path);
  if (headers.length === 0) return { name, match: pathMatch, route: action };
  const matchers = headers.map((h) => ({ name: h.name, string_match: { exact: h.value } }));
  // Literals per path kind, not a spread, so that key order is fixed and the objects stay fast.
  const m =
    "path" in pathMatch
      ? { path: pathMatch.path, headers: matchers }
      : "prefix" in pathMatch
        ? { prefix: pathMatch.prefix, headers: matchers }
        : { path_separated_prefix: pathMatch.path_separated_prefix, headers: matchers };
  return { name, match: m, route: action };
}

function sortedRoutes(host: HostRoutes): EnvoyRoute[] {
  const { keys, routes } = host;
  const order = keys.map((_, i) => i).sort((a, b) => (keys[a] as number) - (keys[b] as number));
  return order.map((i) => routes[i] as EnvoyRoute);
}

export function buildSnapshot(
  routes: readonly EdgeRouteV2[],
  endpoints: EndpointsByService,
  options: SnapshotOptions = {},
): Snapshot {
  const source = options.configSource ?? { kind: "path", dir: DEFAULT_XDS_DIR };
  const candidates: Candidate[] = routes.map((route) => ({
    key: routeKey(route),
    created: creationTime(route.metadata?.creationTimestamp),
    route,
  }));
  candidates.sort(compareAge);

  const registry = new ClaimRegistry();
  const outcomes: RouteOutcome[] = [];
  const byHost = new Map<string, HostRoutes>();
  const usedClusters = new Set<string>();

  for (let rank = 0; rank < candidates.length; rank++) {
    const { key, route } = candidates[rank] as Candidate;
    const check = checkRoute(route, endpoints);
    if (!check.ok) {
      outcomes.push({ key, accepted: false, reason: check.reason, message: check.message });
      continue;
    }
    const namespace = route.metadata.namespace ?? "";
    const hostnames = hostnamesOf(route);
    let dropped: DroppedMatch[] | undefined;
    let kept = 0;
    const rules = route.spec.rules;
    for (let r = 0; r < rules.length; r++) {
      const rule = rules[r] as RouteRule;
      const action = routeAction(namespace, rule);
      let ruleKept = false;
      for (let i = 0; i < rule.matches.length; i++) {
        const m = rule.matches[i] as RouteMatch;
        const pathType = m.path.type ?? "PathPrefix";
        const path = normalizePath(pathType, m.path.value);
        const headers = headerClaims(m.headers);
        for (const hostname of hostnames) {
          const granted = registry.claim(key, claimKey(hostname, pathType, path, headers));
          if ("owner" in granted) {
            (dropped ??= []).push({ hostname, rule: r, match: i, owner: granted.owner });
            continue;
          }
          // Asked twice by this route: the second copy could never be reached.
          if (granted === HELD) continue;
          ruleKept = true;
          kept++;
          // Straight into its virtual host: a route that keeps nothing never gets here.
          const order = orderKeyOf(pathType, path.length, headers.length, rank, r, i);
          const out = envoyRoute(key, r, i, pathType, path, headers, action);
          const host = byHost.get(hostname);
          if (host === undefined) byHost.set(hostname, { keys: [order], routes: [out] });
          else {
            host.keys.push(order);
            host.routes.push(out);
          }
        }
      }
      // A rule that lost every match sends traffic nowhere: its Services get no cluster.
      if (ruleKept) {
        if ("cluster" in action) usedClusters.add(action.cluster);
        else for (const c of action.weighted_clusters.clusters) usedClusters.add(c.name);
      }
    }
    if (kept === 0) {
      const message = `an older route owns every match of this route: ${describeDropped(dropped ?? [])}`;
      outcomes.push({ key, accepted: false, reason: "Conflicted", message });
      continue;
    }
    outcomes.push({ key, accepted: true, dropped: dropped ?? NONE_DROPPED });
  }

  const virtualHosts: VirtualHost[] = [...byHost.keys()].sort(compareHostnames).map((hostname) => ({
    name: hostname,
    domains: [hostname],
    routes: sortedRoutes(byHost.get(hostname) as HostRoutes),
  }));

  const clusterNames = [...usedClusters].sort();
  const resources: EnvoyResources = {
    listeners: [
      listener(
        { address: options.listener?.address ?? "0.0.0.0", port: options.listener?.port ?? 8080 },
        source,
      ),
    ],
    routeConfigurations: [
      virtualHosts.length === 0
        ? { "@type": TYPE_URL.routeConfiguration, name: ROUTE_CONFIG_NAME }
        : { "@type": TYPE_URL.routeConfiguration, name: ROUTE_CONFIG_NAME, virtual_hosts: virtualHosts },
    ],
    clusters: clusterNames.map((name) => cluster(name, options.connectTimeout ?? "5s", source)),
    clusterLoadAssignments: clusterNames.map((name) =>
      clusterLoadAssignment(name, addressesOf(name, endpoints)),
    ),
  };
  outcomes.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  return { version: contentVersion(resources), resources, outcomes };
}

/** The ready addresses behind a cluster named `namespace/service:port`. */
function addressesOf(name: string, endpoints: EndpointsByService): readonly SocketAddress[] {
  const colon = name.lastIndexOf(":");
  const service = endpoints.get(name.slice(0, colon));
  const port = Number(name.slice(colon + 1));
  return service?.ports.find((p) => p.port === port)?.addresses ?? [];
}
