// buildSnapshot: all live routes and the Services that exist become one set of
// Envoy resources, versioned by a hash of its content, with a verdict per route.
// Pure and deterministic: the same routes and endpoints in any order give the
// same snapshot. Terminating routes are the caller's to leave out.

import type { EdgeRouteV2, RouteRule } from "../api/types.js";
import { ClaimRegistry, claimKey, describeDropped, type Claim, type DroppedMatch, type HeaderClaim } from "./conflicts.js";
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
import { parseGatewayDuration, protoDuration } from "./gateway-duration.js";
import { envoyPathMatch, normalizePath } from "./path-match.js";
import { checkRoute } from "./route-check.js";
import { compareAge, compareEntries, compareHostnames, creationTime, type Ordered } from "./route-order.js";
import type { ServiceEndpoints, SocketAddress } from "./service-endpoints.js";

export type RejectReason = "Conflicted" | "ServiceNotFound" | "Invalid";

/** What the snapshot did with one route. `dropped` lists the matches an older route kept for itself. */
export type RouteOutcome =
  | { readonly key: string; readonly accepted: true; readonly dropped: readonly DroppedMatch[] }
  | { readonly key: string; readonly accepted: false; readonly reason: RejectReason; readonly message: string };

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

interface Entry extends Ordered {
  readonly hostname: string;
  readonly routeKey: string;
  readonly headers: readonly HeaderClaim[];
  readonly action: RouteAction;
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
function headerClaims(headers: readonly { name: string; value: string }[] | undefined): HeaderClaim[] {
  if (headers === undefined || headers.length === 0) return [];
  const byName = new Map<string, string>();
  for (const h of headers) {
    const name = h.name.toLowerCase();
    if (!byName.has(name)) byName.set(name, h.value);
  }
  return [...byName].map(([name, value]) => ({ name, value })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** One cluster per Service port; backends naming the same one add their weights; weight 0 sends nothing. */
function routeAction(namespace: string, rule: RouteRule, used: Set<string>): RouteAction {
  const weights = new Map<string, number>();
  for (const b of rule.backends) {
    const weight = b.weight ?? 1;
    if (weight <= 0) continue;
    const name = clusterName(namespace, b.name, b.port);
    weights.set(name, (weights.get(name) ?? 0) + weight);
  }
  for (const name of weights.keys()) used.add(name);
  const ms = rule.timeout === undefined ? undefined : parseGatewayDuration(rule.timeout);
  const timeout = ms === undefined ? {} : { timeout: protoDuration(ms) };
  const names = [...weights.keys()].sort();
  if (names.length === 1) return { cluster: names[0] as string, ...timeout };
  return { weighted_clusters: { clusters: names.map((name) => ({ name, weight: weights.get(name) as number })) }, ...timeout };
}

function envoyRoute(e: Entry): EnvoyRoute {
  const path = envoyPathMatch(e.pathType, e.path);
  const match =
    e.headers.length === 0
      ? path
      : { ...path, headers: e.headers.map((h) => ({ name: h.name, string_match: { exact: h.value } })) };
  return { name: `${e.routeKey}/r${e.rule}/m${e.match}`, match, route: e.action };
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
  const byHost = new Map<string, Entry[]>();
  const usedClusters = new Set<string>();

  candidates.forEach(({ key, route }, rank) => {
    const check = checkRoute(route, endpoints);
    if (!check.ok) {
      outcomes.push({ key, accepted: false, reason: check.reason, message: check.message });
      return;
    }
    const namespace = route.metadata.namespace ?? "";
    const hostnames = route.spec.hostnames?.length ? [...new Set(route.spec.hostnames.map((h) => h.toLowerCase()))] : ["*"];
    const dropped: DroppedMatch[] = [];
    const kept: Entry[] = [];
    route.spec.rules.forEach((rule, r) => {
      const ruleClusters = new Set<string>();
      const action = routeAction(namespace, rule, ruleClusters);
      let ruleKept = false;
      rule.matches.forEach((m, i) => {
        const pathType = m.path.type ?? "PathPrefix";
        const path = normalizePath(pathType, m.path.value);
        const headers = headerClaims(m.headers);
        for (const hostname of hostnames) {
          const claim: Claim = { hostname, pathType, path, headers, rule: r, match: i };
          const granted = registry.claim(key, claimKey(claim));
          if ("owner" in granted) {
            dropped.push({ hostname, rule: r, match: i, owner: granted.owner });
            continue;
          }
          // Asked twice by this route: the second copy could never be reached.
          if ("held" in granted) continue;
          ruleKept = true;
          // A literal, not a spread: V8 keeps it a fast object, and the sort below is hot.
          kept.push({ hostname, pathType, path, headers, rule: r, match: i, headerCount: headers.length, rank, routeKey: key, action });
        }
      });
      // A rule that lost every match sends traffic nowhere: its Services get no cluster.
      if (ruleKept) for (const c of ruleClusters) usedClusters.add(c);
    });
    if (kept.length === 0) {
      const message = `an older route owns every match of this route: ${describeDropped(dropped)}`;
      outcomes.push({ key, accepted: false, reason: "Conflicted", message });
      return;
    }
    for (const e of kept) {
      const list = byHost.get(e.hostname);
      if (list === undefined) byHost.set(e.hostname, [e]);
      else list.push(e);
    }
    outcomes.push({ key, accepted: true, dropped });
  });

  const virtualHosts: VirtualHost[] = [...byHost.keys()].sort(compareHostnames).map((hostname) => ({
    name: hostname,
    domains: [hostname],
    routes: (byHost.get(hostname) as Entry[]).sort(compareEntries).map(envoyRoute),
  }));

  const clusterNames = [...usedClusters].sort();
  const resources: EnvoyResources = {
    listeners: [listener({ address: options.listener?.address ?? "0.0.0.0", port: options.listener?.port ?? 8080 }, source)],
    routeConfigurations: [
      virtualHosts.length === 0
        ? { "@type": TYPE_URL.routeConfiguration, name: ROUTE_CONFIG_NAME }
        : { "@type": TYPE_URL.routeConfiguration, name: ROUTE_CONFIG_NAME, virtual_hosts: virtualHosts },
    ],
    clusters: clusterNames.map((name) => cluster(name, options.connectTimeout ?? "5s", source)),
    clusterLoadAssignments: clusterNames.map((name) => clusterLoadAssignment(name, addressesOf(name, endpoints))),
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
