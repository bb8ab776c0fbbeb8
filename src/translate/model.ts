// The translation's first step: all live routes and the Services that exist
// become the routing model, in named phases (as Contour's Build() is a list of
// compute* calls): rank the routes, claim their matches oldest first into
// virtual hosts, then list the clusters the kept rules send to. Pure and
// deterministic: the same routes and endpoints in any order give the same model.
// Its virtual hosts' routes are already Envoy's route entries (match and
// action): every kind of client reads those, and what gRPC's client needs on
// top is derived later (envoy.ts, grpc.ts).

import { LIMITS } from "../api/schema.js";
import type { EdgeRouteV2, PathMatchType, RouteMatch, RouteRule } from "../api/types.js";
import { fieldError, formatFieldError } from "../api/field-error.js";
import { objectKeyOf } from "../api/object-key.js";
import { ClaimRegistry, describeDropped, HELD, type DroppedMatch } from "../routing/claims.js";
import type { EnvoyRoute, EnvoyRouteMatch, RouteAction, VirtualHost } from "../envoy/envoy-resources.js";
import { envoyPathMatch, normalizePath } from "../routing/path-match.js";
import { HeaderSets, type HeaderSet } from "./header-sets.js";
import { grpcUnapplied, type GrpcUnapplied } from "./grpc-unapplied.js";
import { hasPolicies, isRedirectRule, perEntry, ruleForm, type RuleForm } from "./rule-filters.js";
import { RouteActions } from "./route-actions.js";
import { backendsAndMirrors, checkRoute, isProgrammable } from "../rules/route-check.js";
import { ageOrder, compareHostnames, creationTime, keyOrder, orderKeyOf } from "../routing/route-order.js";
import type { ServiceEndpoints, SocketAddress } from "../routing/service-endpoints.js";
import { claimTlsHosts, NO_TLS, type TlsModel } from "./tls-hosts.js";
import { HELD_REASON, holdOf, NO_HELD_ROUTES, type HeldRoutes } from "./held-routes.js";
import { NO_SECRETS, type TlsOutcome, type TlsSecrets } from "./tls-secrets.js";

export type RejectReason = "Conflicted" | "ServiceNotFound" | "Invalid" | "HostFull" | "Rejected";

/**
 * What the snapshot did with one route. `dropped` lists the matches an older
 * route kept for itself; `tls` is present exactly when the route's spec has `tls`.
 */
export type RouteOutcome =
  | {
      readonly key: string;
      readonly accepted: true;
      readonly dropped: readonly DroppedMatch[];
      readonly tls?: TlsOutcome;
      /** What gRPC clients do not apply of the route (grpc-unapplied.ts); absent when they apply all of it. */
      readonly grpcUnapplied?: readonly GrpcUnapplied[];
    }
  | {
      readonly key: string;
      readonly accepted: false;
      readonly reason: RejectReason;
      readonly message: string;
      readonly tls?: TlsOutcome;
    };

/** One cluster per Service port a kept rule sends to, with the Service's ready addresses on that port. */
export interface BackendCluster {
  /** `namespace/service:port`. */
  readonly name: string;
  readonly addresses: readonly SocketAddress[];
}

/** What the routes mean, before any client's form. */
export interface RouteModel {
  /** One per input route, sorted by key. */
  readonly outcomes: readonly RouteOutcome[];
  /** By host name (the catch-all `*` last), each with its routes in Envoy's match order. */
  readonly virtualHosts: readonly VirtualHost[];
  /** Sorted by name. */
  readonly clusters: readonly BackendCluster[];
  /** The hosts served over HTTPS and their Secrets (tls-hosts.ts). */
  readonly tls: TlsModel;
}

/** What TLS is translated with: the referenced Secrets' contents, and the time certificates are checked at. */
export interface TlsInputs {
  readonly secrets: TlsSecrets;
  readonly now: Date;
}

/** The routes' Services, by `namespace/name`; a Service absent from the map does not exist. */
export type EndpointsByService = ReadonlyMap<string, ServiceEndpoints>;

const ANY_HOST: readonly string[] = ["*"];
const NONE_DROPPED: readonly DroppedMatch[] = [];
const NONE_UNAPPLIED: readonly GrpcUnapplied[] = [];

/** Whether any rule or match says more than paths, exact headers and backends: only those can hold what gRPC ignores. */
function rulesHavePolicies(rules: readonly RouteRule[]): boolean {
  for (const rule of rules) {
    if (hasPolicies(rule)) return true;
    for (const m of rule.matches) if (m.method !== undefined || m.queryParams !== undefined) return true;
  }
  return false;
}

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

// `/r0/m0` … `/r15/m7`, made once: an entry's name is then one concatenation.
const SUFFIXES: readonly (readonly string[])[] = Array.from({ length: LIMITS.rules }, (_, r) =>
  Array.from({ length: LIMITS.matches }, (_, m) => `/r${r}/m${m}`),
);

function entrySuffix(rule: number, match: number): string {
  return SUFFIXES[rule]?.[match] ?? `/r${rule}/m${match}`;
}

/** A route's key from the name of one of its entries, `namespace/name/rN/mM`. */
export function routeKeyOfEntry(entryName: string): string {
  return entryName.split("/", 2).join("/");
}

function envoyRoute(
  routeKey: string,
  rule: number,
  match: number,
  pathType: PathMatchType,
  path: string,
  conditions: HeaderSet,
  form: RuleForm,
): EnvoyRoute {
  const name = routeKey + entrySuffix(rule, match);
  const pathMatch = envoyPathMatch(pathType, path);
  const { matchers, query } = conditions;
  let m: EnvoyRouteMatch;
  if (matchers.length === 0 && query.length === 0) m = pathMatch;
  else if (query.length === 0)
    // Literals per path kind, not a spread, so that key order is fixed and the objects stay fast.
    m =
      "path" in pathMatch
        ? { path: pathMatch.path, headers: matchers }
        : "prefix" in pathMatch
          ? { prefix: pathMatch.prefix, headers: matchers }
          : "path_separated_prefix" in pathMatch
            ? { path_separated_prefix: pathMatch.path_separated_prefix, headers: matchers }
            : { safe_regex: pathMatch.safe_regex, headers: matchers };
  else
    m = {
      ...pathMatch,
      ...(matchers.length === 0 ? {} : { headers: matchers }),
      query_parameters: query,
    };
  const { action, redirect } = perEntry(form, pathType, path);
  const edits = form.edits;
  if (redirect !== undefined) return { name, match: m, redirect, ...edits };
  const route = action as RouteAction;
  return edits === undefined ? { name, match: m, route } : { name, match: m, route, ...edits };
}

/**
 * The route's weight in what a proxy receives: the JSON length of every entry
 * it makes (one per match, as if it kept them all), once per route object.
 */
function routeBytes(
  route: EdgeRouteV2,
  key: string,
  forms: readonly RuleForm[],
  headerSets: HeaderSets,
): number {
  const known = facts.get(route);
  if (known !== undefined && known >= 0) return known;
  let bytes = 0;
  route.spec.rules.forEach((rule, r) =>
    rule.matches.forEach((m, i) => {
      const pathType = m.path.type ?? "PathPrefix";
      const path = normalizePath(pathType, m.path.value);
      const headers = headerSets.of(m.headers, m.method, m.queryParams);
      bytes += JSON.stringify(envoyRoute(key, r, i, pathType, path, headers, forms[r] as RuleForm)).length;
    }),
  );
  facts.set(route, bytes);
  return bytes;
}

/**
 * What a build asks of each route object, found once and kept with it as one
 * number (one lookup a route a build, and no object a route: at 10,000 routes
 * each costs a build milliseconds, or the process a megabyte): NOT_PROGRAMMABLE
 * when the rule set refuses it, UNWEIGHED when it passes and its weight
 * (routeBytes) is not measured yet, else that weight.
 */
const facts = new WeakMap<EdgeRouteV2, number>();
const NOT_PROGRAMMABLE = -1;
const UNWEIGHED = -2;

function programmable(route: EdgeRouteV2): boolean {
  let f = facts.get(route);
  if (f === undefined) {
    f = isProgrammable(route) ? UNWEIGHED : NOT_PROGRAMMABLE;
    facts.set(route, f);
  }
  return f !== NOT_PROGRAMMABLE;
}

/**
 * A valid route's weight by itself (routeBytes), as admission measures it
 * before the route exists: its Services are taken to exist, which the weight
 * does not depend on.
 */
export function weighRoute(route: EdgeRouteV2): number {
  const namespace = route.metadata.namespace ?? "";
  const services = new Map<string, ServiceEndpoints>();
  for (const rule of route.spec.rules) {
    for (const b of backendsAndMirrors(rule)) {
      const key = `${namespace}/${b.name}`;
      const ports = services.get(key)?.ports ?? [];
      services.set(key, { ports: [...ports, { port: b.port, addresses: [] }] });
    }
  }
  const forms: RuleForm[] = [];
  if (!appendForms(namespace, route.spec.rules, new RouteActions(services), forms)) return 0;
  return routeBytes(route, objectKeyOf(route), forms, new HeaderSets());
}

/** Why the route does not fit, by itself or in one of its hosts with the older routes there; undefined when it fits. */
function sizeOutcome(
  key: string,
  bytes: number,
  hostnames: readonly string[],
  hostBytes: ReadonlyMap<string, number>,
): RouteOutcome | undefined {
  if (bytes > LIMITS.maxRouteBytes)
    return {
      key,
      accepted: false,
      reason: "Invalid",
      message: formatFieldError(fieldError("spec", "Too long", tooLargeDetail(bytes))),
    };
  for (const hostname of hostnames) {
    const total = (hostBytes.get(hostname) ?? 0) + bytes;
    if (total > LIMITS.maxHostBytes)
      return { key, accepted: false, reason: "HostFull", message: hostFullMessage(hostname, total) };
  }
  return undefined;
}

/** The words for a route over its own limit: admission's too. */
export function tooLargeDetail(bytes: number): string {
  return `the route is ${bytes} bytes as a proxy receives it, more than the ${LIMITS.maxRouteBytes} one route may be (a gRPC client refuses a message over 4 MiB, and then every update): split it into smaller routes`;
}

/** The words for a host filled by older routes: they name the host and the sizes, never another route. */
export function hostFullMessage(hostname: string, total: number): string {
  return `host ${hostname} is full: with this route its routes would be ${total} bytes as a proxy receives them, more than the ${LIMITS.maxHostBytes} one host may hold (a gRPC client refuses a message over 4 MiB, and then every update)`;
}

/** Appends each rule's form to `forms`; false when a backend's (or a mirror's) Service or port does not exist. */
function appendForms(
  namespace: string,
  rules: readonly RouteRule[],
  ruleActions: RouteActions,
  forms: RuleForm[],
): boolean {
  const start = forms.length;
  for (const rule of rules) {
    const redirect = isRedirectRule(rule);
    const action = redirect ? undefined : ruleActions.actionOf(namespace, rule);
    const form =
      !redirect && action === undefined
        ? undefined
        : hasPolicies(rule)
          ? ruleForm(rule, action, (service, port) => ruleActions.clusterOf(namespace, service, port))
          : formOf(action as RouteAction);
    if (form === undefined) {
      forms.length = start;
      return false;
    }
    forms.push(form);
  }
  return true;
}

/** A plain rule's form, one per shared action: no object per rule. */
function formOf(action: RouteAction): RuleForm {
  let form = plainForms.get(action);
  if (form === undefined) {
    form = { action };
    plainForms.set(action, form);
  }
  return form;
}
const plainForms = new WeakMap<RouteAction, RuleForm>();

/** The outcome of a route that cannot be programmed; checkRoute says why, as field errors. */
function rejection(key: string, route: EdgeRouteV2, endpoints: EndpointsByService): RouteOutcome {
  const check = checkRoute(route, endpoints);
  // checkRoute and the fast path (isProgrammable, then every backend found) agree; this is for the types.
  if (check.ok) return { key, accepted: false, reason: "Invalid", message: "the route cannot be programmed" };
  return { key, accepted: false, reason: check.reason, message: check.message };
}

function sortedRoutes(host: HostRoutes): EnvoyRoute[] {
  const { keys, routes } = host;
  const order = keys.map((_, i) => i).sort((a, b) => (keys[a] as number) - (keys[b] as number));
  return order.map((i) => routes[i] as EnvoyRoute);
}

/** The routing model of the live routes: rank, claim, virtual hosts, clusters, TLS hosts. */
export function translateRoutes(
  routes: readonly EdgeRouteV2[],
  endpoints: EndpointsByService,
  tlsInputs: TlsInputs = { secrets: NO_SECRETS, now: new Date() },
  held: HeldRoutes = NO_HELD_ROUTES,
): RouteModel {
  const ranking = rankRoutes(routes);
  const claimed = claimRoutes(routes, ranking, endpoints, held);
  const tls = claimTls(routes, ranking, claimed.outcomes, tlsInputs);
  return {
    outcomes: tls === NO_TLS ? claimed.outcomes : withTls(claimed.outcomes, tls),
    virtualHosts: virtualHostsOf(claimed.byHost),
    clusters: clusterNamesOf(claimed.usedActions).map((name) => ({
      name,
      addresses: addressesOf(name, endpoints),
    })),
    tls,
  };
}

/** TLS hosts, claimed in the same age order as the paths. */
function claimTls(
  routes: readonly EdgeRouteV2[],
  { keys, keyRank, byAge }: Ranking,
  outcomes: readonly RouteOutcome[],
  { secrets, now }: TlsInputs,
): TlsModel {
  return claimTlsHosts(
    byAge.map((i) => ({
      route: routes[i] as EdgeRouteV2,
      key: keys[i] as string,
      accepted: (outcomes[keyRank[i] as number] as RouteOutcome).accepted,
    })),
    secrets,
    now,
  );
}

function withTls(outcomes: readonly RouteOutcome[], tls: TlsModel): RouteOutcome[] {
  return outcomes.map((o) => {
    const t = tls.outcomes.get(o.key);
    return t === undefined ? o : { ...o, tls: t };
  });
}

/** The routes' keys and their two orders: by key (where each outcome goes) and by age (who claims first). */
interface Ranking {
  readonly keys: readonly string[];
  /** Route index → its place in key order. */
  readonly keyRank: Int32Array;
  /** Route indexes, oldest first. */
  readonly byAge: readonly number[];
}

function rankRoutes(routes: readonly EdgeRouteV2[]): Ranking {
  const n = routes.length;
  const keys: string[] = new Array<string>(n);
  const created = new Float64Array(n);
  // Routes created in one burst share their second: each timestamp is parsed once.
  const times = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    const route = routes[i] as EdgeRouteV2;
    keys[i] = objectKeyOf(route);
    const stamp = route.metadata?.creationTimestamp;
    let t = stamp === undefined ? undefined : times.get(stamp);
    if (t === undefined) {
      t = creationTime(stamp);
      if (stamp !== undefined) times.set(stamp, t);
    }
    created[i] = t;
  }
  // Outcomes are listed by key: rank the routes by key once, so that each
  // outcome goes straight to its place and the age order (creationTimestamp,
  // then key) is a stable pass over numbers.
  const byKey = keyOrder(routes, keys, created);
  const keyRank = new Int32Array(n);
  for (let r = 0; r < n; r++) keyRank[byKey[r] as number] = r;
  return { keys, keyRank, byAge: ageOrder(byKey, created) };
}

interface Claimed {
  /** One per route, in key order. */
  readonly outcomes: RouteOutcome[];
  readonly byHost: Map<string, HostRoutes>;
  /** The actions of rules that kept at least one match: only their Services get clusters. */
  readonly usedActions: Set<RouteAction>;
}

/** Oldest first, each route claims its (host, match) pairs; what it keeps goes into its virtual hosts. */
function claimRoutes(
  routes: readonly EdgeRouteV2[],
  ranking: Ranking,
  endpoints: EndpointsByService,
  held: HeldRoutes,
): Claimed {
  const { keys, keyRank, byAge } = ranking;
  const n = routes.length;
  const claims = new ClaimRegistry();
  const outcomes = new Array<RouteOutcome>(n);
  const byHost = new Map<string, HostRoutes>();
  // Actions are shared between rules, so the set of those in use is small.
  const usedActions = new Set<RouteAction>();
  const headerSets = new HeaderSets();
  const ruleActions = new RouteActions(endpoints);
  // One route's rule forms at a time, in an array reused from route to route.
  const forms: RuleForm[] = [];
  /** Each host's weight so far (routeBytes), by the routes that claimed into it. */
  const hostBytes = new Map<string, number>();

  for (let rank = 0; rank < n; rank++) {
    const index = byAge[rank] as number;
    const key = keys[index] as string;
    const outcomeIndex = keyRank[index] as number;
    // A route a client refused says so; what is served of it is the version
    // the clients took before, where this process knows it (held-routes.ts),
    // else nothing: younger routes may take its matches.
    const current = routes[index] as EdgeRouteV2;
    const hold = holdOf(current, key, held);
    const heldOutcome: RouteOutcome | undefined =
      hold === undefined ? undefined : { key, accepted: false, reason: HELD_REASON, message: hold };
    const route = hold === undefined ? current : held.get(key)?.served;
    if (route === undefined) {
      outcomes[outcomeIndex] = heldOutcome as RouteOutcome;
      continue;
    }
    forms.length = 0;
    if (
      !programmable(route) ||
      !appendForms(route.metadata.namespace ?? "", route.spec.rules, ruleActions, forms)
    ) {
      outcomes[outcomeIndex] = heldOutcome ?? rejection(key, route, endpoints);
      continue;
    }
    const hostnames = hostnamesOf(route);
    // Oldest first, as claims: a host's older routes keep their place in its budget.
    const bytes = routeBytes(route, key, forms, headerSets);
    const tooLarge = sizeOutcome(key, bytes, hostnames, hostBytes);
    if (tooLarge !== undefined) {
      outcomes[outcomeIndex] = heldOutcome ?? tooLarge;
      continue;
    }
    for (const hostname of hostnames) hostBytes.set(hostname, (hostBytes.get(hostname) ?? 0) + bytes);
    let dropped: DroppedMatch[] | undefined;
    let kept = 0;
    const rules = route.spec.rules;
    for (let r = 0; r < rules.length; r++) {
      const rule = rules[r] as RouteRule;
      const form = forms[r] as RuleForm;
      let ruleKept = false;
      for (let i = 0; i < rule.matches.length; i++) {
        const m = rule.matches[i] as RouteMatch;
        const pathType = m.path.type ?? "PathPrefix";
        const path = normalizePath(pathType, m.path.value);
        const headers = headerSets.of(m.headers, m.method, m.queryParams);
        // The same entry serves every host of the route that keeps this match.
        let out: EnvoyRoute | undefined;
        let order = 0;
        for (const hostname of hostnames) {
          const granted = claims.claim(key, hostname, pathType, path, headers.key);
          if ("owner" in granted) {
            (dropped ??= []).push({ hostname, rule: r, match: i, owner: granted.owner });
            continue;
          }
          // Asked twice by this route: the second copy could never be reached.
          if (granted === HELD) continue;
          ruleKept = true;
          kept++;
          // Straight into its virtual host: a route that keeps nothing never gets here.
          if (out === undefined) {
            order = orderKeyOf(pathType, path.length, headers.count, rank, r, i, headers.method);
            out = envoyRoute(key, r, i, pathType, path, headers, form);
          }
          const host = byHost.get(hostname);
          if (host === undefined) byHost.set(hostname, { keys: [order], routes: [out] });
          else {
            host.keys.push(order);
            host.routes.push(out);
          }
        }
      }
      // A rule that lost every match sends traffic nowhere: its Services get no cluster.
      if (ruleKept && form.action !== undefined) usedActions.add(form.action);
    }
    if (kept === 0) {
      const message = `an older route owns every match of this route: ${describeDropped(dropped ?? [])}`;
      outcomes[outcomeIndex] = heldOutcome ?? { key, accepted: false, reason: "Conflicted", message };
      continue;
    }
    const unapplied = rulesHavePolicies(rules) ? grpcUnapplied(route) : NONE_UNAPPLIED;
    outcomes[outcomeIndex] =
      heldOutcome ??
      (unapplied.length === 0
        ? { key, accepted: true, dropped: dropped ?? NONE_DROPPED }
        : { key, accepted: true, dropped: dropped ?? NONE_DROPPED, grpcUnapplied: unapplied });
  }
  return { outcomes, byHost, usedActions };
}

/** Virtual hosts by name (the catch-all last), each with its routes in Envoy's match order. */
function virtualHostsOf(byHost: ReadonlyMap<string, HostRoutes>): VirtualHost[] {
  return [...byHost.keys()].sort(compareHostnames).map((hostname) => ({
    name: hostname,
    domains: [hostname],
    routes: sortedRoutes(byHost.get(hostname) as HostRoutes),
  }));
}

/** The clusters the kept rules send traffic to, sorted. */
function clusterNamesOf(usedActions: ReadonlySet<RouteAction>): string[] {
  const used = new Set<string>();
  for (const action of usedActions) {
    if ("cluster" in action) used.add(action.cluster);
    else for (const c of action.weighted_clusters.clusters) used.add(c.name);
    for (const m of action.request_mirror_policies ?? []) used.add(m.cluster);
  }
  return [...used].sort();
}

/** The ready addresses behind a cluster named `namespace/service:port`. */
function addressesOf(name: string, endpoints: EndpointsByService): readonly SocketAddress[] {
  const colon = name.lastIndexOf(":");
  const service = endpoints.get(name.slice(0, colon));
  const port = Number(name.slice(colon + 1));
  return service?.ports.find((p) => p.port === port)?.addresses ?? [];
}
