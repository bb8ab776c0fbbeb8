// The last step of a build: every virtual host, route entry, cluster and
// endpoint list equal to one of the previous snapshot keeps the previous object. The
// resources are the same JSON either way; what changes is that an unchanged
// part is the same object as before, so the work done per object further on
// (the content hash, the ADS form, the protobuf encoding: content-hash.ts,
// envoy.ts, src/dataplane/xds/resources.ts) is looked up rather than done
// again. At 10,000 routes a one-route change then costs about one virtual
// host's hashing and encoding, not every one's (BENCHMARKS.md, "A change's
// way to the data plane").
//
// Equal means the same JSON text: same keys in the same order, same values.
// The builders write a fixed key order, so equal content is equal text, and
// a kept object hashes and serializes exactly as the new one would.

import type {
  Cluster,
  ClusterLoadAssignment,
  EnvoyResources,
  RedirectVirtualHost,
  RouteConfiguration,
  VirtualHost,
} from "../envoy/envoy-resources.js";

/** Whether JSON.stringify(a) === JSON.stringify(b), without making either string. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const xk = Object.keys(x);
  const yk = Object.keys(y);
  // Keys whose value is undefined are not written; the builders never set one,
  // so a differing count or order is a differing text.
  if (xk.length !== yk.length) return false;
  for (let i = 0; i < xk.length; i++) {
    const k = xk[i] as string;
    if (k !== yk[i] || !sameJson(x[k], y[k])) return false;
  }
  return true;
}

type AnyVirtualHost = VirtualHost | RedirectVirtualHost;

/** `next` with every part equal to one of `previous` replaced by that one (same name, same JSON). */
export function keepUnchanged(next: EnvoyResources, previous: EnvoyResources | undefined): EnvoyResources {
  if (previous === undefined) return next;
  const oldHosts = new Map<string, AnyVirtualHost>();
  for (const rc of previous.routeConfigurations)
    for (const vh of rc.virtual_hosts ?? []) oldHosts.set(`${rc.name}\0${vh.name}`, vh);
  const routeConfigurations = next.routeConfigurations.map((rc): RouteConfiguration => {
    const hosts = rc.virtual_hosts;
    if (hosts === undefined) return rc;
    return {
      ...rc,
      virtual_hosts: hosts.map((vh) => keepHost(vh, oldHosts.get(`${rc.name}\0${vh.name}`))),
    };
  });
  return {
    ...next,
    routeConfigurations,
    clusters: keepByName(next.clusters, previous.clusters, (c: Cluster) => c.name),
    clusterLoadAssignments: keepByName(
      next.clusterLoadAssignments,
      previous.clusterLoadAssignments,
      (c: ClusterLoadAssignment) => c.cluster_name,
    ),
  };
}

/**
 * The host as it was when equal; else the host with each of its route
 * entries that did not change kept (entry names are unique within a host),
 * so that only the entries that changed are encoded again.
 */
function keepHost(vh: AnyVirtualHost, before: AnyVirtualHost | undefined): AnyVirtualHost {
  if (before === undefined) return vh;
  if (sameJson(before, vh)) return before;
  type Entry = AnyVirtualHost["routes"][number];
  const old = new Map<string, Entry>();
  for (const r of before.routes) old.set(r.name, r);
  let kept = 0;
  const routes = vh.routes.map((r: Entry): Entry => {
    const b = old.get(r.name);
    if (b === undefined || !sameJson(b, r)) return r;
    kept++;
    return b;
  });
  return kept === 0 ? vh : ({ ...vh, routes } as AnyVirtualHost);
}

function keepByName<T>(next: readonly T[], previous: readonly T[], nameOf: (t: T) => string): readonly T[] {
  if (previous.length === 0) return next;
  const old = new Map(previous.map((t) => [nameOf(t), t]));
  return next.map((t) => {
    const before = old.get(nameOf(t));
    return before !== undefined && sameJson(before, t) ? before : t;
  });
}
