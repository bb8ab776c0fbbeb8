// The one place that decides order. Routes are ranked oldest first
// (creationTimestamp, then namespace/name): the older owns a contested match;
// the snapshot lists its outcomes by namespace/name.
// Within a virtual host, Envoy takes the first route that matches, so entries
// follow the Gateway API's precedence: Exact before PathPrefix, longer path
// first, more header matches first, then the older route, then rule and match
// order inside that route.

import type { EdgeRouteV2, PathMatchType } from "../api/types.js";

/** Milliseconds since the epoch; Infinity when unknown, so that it sorts last. */
export function creationTime(timestamp: string | undefined): number {
  const t = timestamp === undefined ? Number.NaN : Date.parse(timestamp);
  return Number.isNaN(t) ? Number.POSITIVE_INFINITY : t;
}

/** A route as the age order reads it. */
export interface Aged {
  /** RFC 3339; absent or malformed sorts last. */
  readonly creationTimestamp?: string | undefined;
  /** `namespace/name`. */
  readonly key: string;
}

/** Age order for two routes (the older first, then by key): what keyOrder then ageOrder give a whole set. */
export function compareAge(a: Aged, b: Aged): number {
  const ta = creationTime(a.creationTimestamp);
  const tb = creationTime(b.creationTimestamp);
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/**
 * Route indexes in key order (`namespace/name`; then age, then input order).
 * Sorted per namespace by name, the namespaces by `namespace/`: the same order
 * with fewer and shorter comparisons, of strings the routes already hold.
 */
export function keyOrder(
  routes: readonly EdgeRouteV2[],
  keys: readonly string[],
  created: Float64Array,
): number[] {
  const byNamespace = new Map<string, number[]>();
  for (let i = 0; i < routes.length; i++) {
    const ns = (routes[i] as EdgeRouteV2).metadata?.namespace ?? "";
    const group = byNamespace.get(ns);
    if (group === undefined) byNamespace.set(ns, [i]);
    else group.push(i);
  }
  const namespaces = [...byNamespace.keys()];
  const compareIndexes = (a: number, b: number) =>
    compareKeys(keys[a] as string, keys[b] as string) || compareNumbers(created, a, b) || a - b;
  // A "/" in a namespace would break the equivalence; the apiserver allows none.
  if (namespaces.some((ns) => ns.includes("/"))) {
    const all = routes.map((_, i) => i);
    return all.sort(compareIndexes);
  }
  const nameOf = (i: number) => (routes[i] as EdgeRouteV2).metadata?.name ?? "";
  const out: number[] = [];
  for (const ns of namespaces.map((ns) => `${ns}/`).sort()) {
    const group = byNamespace.get(ns.slice(0, -1)) as number[];
    group.sort((a, b) => compareKeys(nameOf(a), nameOf(b)) || compareNumbers(created, a, b) || a - b);
    for (const i of group) out.push(i);
  }
  return out;
}

/** `byKey` stably sorted by creation time: a counting sort over the distinct times. */
export function ageOrder(byKey: readonly number[], created: Float64Array): number[] {
  const counts = new Map<number, number>();
  for (const t of created) counts.set(t, (counts.get(t) ?? 0) + 1);
  const times = Float64Array.from(counts.keys()).sort();
  const next = new Map<number, number>();
  let position = 0;
  for (const t of times) {
    next.set(t, position);
    position += counts.get(t) as number;
  }
  const out = new Array<number>(byKey.length);
  for (const i of byKey) {
    const t = created[i] as number;
    const p = next.get(t) as number;
    out[p] = i;
    next.set(t, p + 1);
  }
  return out;
}

function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareNumbers(xs: Float64Array, a: number, b: number): number {
  const x = xs[a] as number;
  const y = xs[b] as number;
  return x < y ? -1 : x > y ? 1 : 0;
}

export interface Ordered {
  readonly pathType: PathMatchType;
  readonly path: string;
  /** Header and query parameter matches together (a method match is not one of them). */
  readonly headerCount: number;
  readonly method?: boolean;
  /** The route's position in age order. */
  readonly rank: number;
  readonly rule: number;
  readonly match: number;
}

/** Exact, then PathPrefix, then RegularExpression (whose precedence Gateway API leaves to implementations). */
function pathRank(t: PathMatchType): number {
  return t === "Exact" ? 0 : t === "PathPrefix" ? 1 : 2;
}

export function compareEntries(a: Ordered, b: Ordered): number {
  if (a.pathType !== b.pathType) return pathRank(a.pathType) - pathRank(b.pathType);
  if (a.path.length !== b.path.length) return b.path.length - a.path.length;
  if ((a.method ?? false) !== (b.method ?? false)) return a.method === true ? -1 : 1;
  if (a.headerCount !== b.headerCount) return b.headerCount - a.headerCount;
  if (a.rank !== b.rank) return a.rank - b.rank;
  if (a.rule !== b.rule) return a.rule - b.rule;
  return a.match - b.match;
}

/** Virtual hosts by name, with the catch-all `*` last; Envoy picks by domain, so this is for stable output. */
export function compareHostnames(a: string, b: string): number {
  if (a === b) return 0;
  if (a === "*") return 1;
  if (b === "*") return -1;
  return a < b ? -1 : 1;
}

// compareEntries as one number, for speed: the sort of tens of thousands of
// entries compares doubles instead of calling a comparator that reads six
// fields. Fields take fixed bit ranges, most significant first; 52 bits in all,
// exact in a double. Query parameter matches count with the header matches:
// one more field would not fit. A property test holds it to compareEntries.
const PATH_BITS = 2048; // paths up to 1024 characters (the schema's limit)
const HEADER_BITS = 32; // up to 16 header matches
const RANK_BITS = 2 ** 24; // up to 16 million routes
const RULE_BITS = 32; // up to 16 rules
const MATCH_BITS = 16; // up to 8 matches

export const ORDER_LIMITS = {
  path: PATH_BITS - 1,
  headers: HEADER_BITS - 1,
  rank: RANK_BITS - 1,
  rule: RULE_BITS - 1,
  match: MATCH_BITS - 1,
};

export function orderKey(e: Ordered): number {
  return orderKeyOf(e.pathType, e.path.length, e.headerCount, e.rank, e.rule, e.match, e.method ?? false);
}

/** orderKey without the object, for the builder's inner loop. */
export function orderKeyOf(
  pathType: PathMatchType,
  pathLength: number,
  headerCount: number,
  rank: number,
  rule: number,
  match: number,
  method = false,
): number {
  const type = pathRank(pathType);
  const path = PATH_BITS - 1 - Math.min(pathLength, PATH_BITS - 1);
  const headers = HEADER_BITS - 1 - Math.min(headerCount, HEADER_BITS - 1);
  const unmethod = method ? 0 : 1;
  return (
    (((((type * PATH_BITS + path) * 2 + unmethod) * HEADER_BITS + headers) * RANK_BITS + rank) * RULE_BITS +
      rule) *
      MATCH_BITS +
    match
  );
}
