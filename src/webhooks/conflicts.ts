// The conflict warning: a route whose host and match an older route already
// owns will be Accepted=False/Conflicted once reconciled; admission says so at
// once, but never refuses it (docs/architecture.md). What the cluster holds comes from a
// watch-fed index, so a warning never waits on the apiserver.

import type { ClusterAccess } from "../kube/kubeconfig.js";
import { edgeRoutesPath } from "../kube/paths.js";
import type { Logger } from "../observability/logger.js";
import { Informer, type EventType } from "../kube/informer.js";
import { kubeClient } from "../kube/client.js";
import { claimKey, claimsOf, describeMatch } from "../routing/match-keys.js";
import { compareAge } from "../routing/route-order.js";
import { isRecord } from "../api/is-record.js";
import { objectKey } from "../api/object-key.js";
import type { EdgeRouteV2 } from "../api/types.js";
import { isProgrammable } from "../rules/route-check.js";
import { weighRoute } from "../translate/model.js";

export interface RouteSummary {
  readonly namespace: string;
  readonly name: string;
  /** RFC 3339; absent for a route not yet created. */
  readonly creationTimestamp?: string;
  readonly terminating: boolean;
  readonly spec: unknown;
}

export function summarize(obj: unknown, fallbackNamespace = ""): RouteSummary | undefined {
  if (!isRecord(obj) || !isRecord(obj.metadata)) return undefined;
  const m = obj.metadata;
  const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);
  const ts = str(m.creationTimestamp);
  return {
    namespace: str(m.namespace) ?? fallbackNamespace,
    name: str(m.name) ?? "",
    ...(ts ? { creationTimestamp: ts } : {}),
    terminating: m.deletionTimestamp !== undefined && m.deletionTimestamp !== null,
    spec: obj.spec,
  };
}

/** Conflict order (Gateway API), the snapshot's: the older route first, then namespace/name. */
function isOlder(a: RouteSummary, b: RouteSummary): boolean {
  return (
    compareAge(
      { creationTimestamp: a.creationTimestamp, key: objectKey(a.namespace, a.name) },
      { creationTimestamp: b.creationTimestamp, key: objectKey(b.namespace, b.name) },
    ) < 0
  );
}

function describeClaim(host: string, match: string): string {
  return `${host === "" ? "any host" : host} ${describeMatch(match)}`;
}

/** One warning per older route that owns a host and match this route claims. */
export function conflictWarnings(route: RouteSummary, others: readonly RouteSummary[]): string[] {
  const mine = new Map(claimsOf(route.spec).map((c) => [claimKey(c), c]));
  if (mine.size === 0) return [];
  const owners = others
    .filter(
      (o) =>
        !o.terminating && !(o.namespace === route.namespace && o.name === route.name) && isOlder(o, route),
    )
    .sort((a, b) => (isOlder(a, b) ? -1 : 1));
  const warnings: string[] = [];
  const taken = new Set<string>();
  for (const o of owners) {
    const clash = claimsOf(o.spec).find((c) => mine.has(claimKey(c)) && !taken.has(claimKey(c)));
    if (!clash) continue;
    for (const c of claimsOf(o.spec)) if (mine.has(claimKey(c))) taken.add(claimKey(c));
    warnings.push(
      `conflicts with older EdgeRoute ${o.namespace}/${o.name} on ${describeClaim(clash.host, clash.match)}; that route wins`,
    );
  }
  return warnings;
}

/** The host names a v2 spec names, `*` for none: the virtual hosts its entries go to. */
export function hostsOf(spec: unknown): string[] {
  if (!isRecord(spec)) return [];
  const names = Array.isArray(spec.hostnames)
    ? spec.hostnames.filter((h): h is string => typeof h === "string")
    : [];
  return names.length === 0 ? ["*"] : [...new Set(names)];
}

export interface ConflictIndexOptions {
  log: Logger;
  /** Called with every event the index takes (tests wait on it). */
  onEvent?: (type: EventType) => void;
}

/**
 * Every EdgeRoute's claims, kept current by one list+watch (the watcher's
 * Informer), so a warning costs a few map lookups instead of a LIST per
 * request: a LIST of thousands of routes, converted by this same process, is
 * what would make admission slow past its timeout. Until the first list is in,
 * and whenever the watch is down, the index may be behind: warnings are best
 * effort and admission never waits on them.
 */
export class ConflictIndex {
  private readonly routes = new Map<string, { summary: RouteSummary; claims: string[] }>();
  private readonly claimers = new Map<string, Set<string>>();
  /** Per host name as written (`*`: no hostnames), each valid route's weight there (translate/model.ts weighRoute). */
  private readonly hostWeights = new Map<string, Map<string, number>>();
  private readonly informer: Informer | undefined;

  constructor(
    access: ClusterAccess | undefined,
    private readonly opts: ConflictIndexOptions,
  ) {
    if (!access) return;
    this.informer = new Informer({
      name: "edgeroutes (conflict warnings)",
      path: edgeRoutesPath(),
      client: kubeClient(access),
      onEvent: (type, obj) => this.apply(type, obj),
      log: opts.log,
    });
    this.informer.start();
  }

  /** Takes one watch event: the route's old claims go, its new ones come. */
  apply(type: EventType, obj: unknown): void {
    const summary = summarize(obj);
    if (!summary) return;
    const key = objectKey(summary.namespace, summary.name);
    const old = this.routes.get(key);
    for (const c of old?.claims ?? []) {
      const set = this.claimers.get(c);
      set?.delete(key);
      if (set?.size === 0) this.claimers.delete(c);
    }
    this.routes.delete(key);
    for (const host of hostsOf(old?.summary.spec)) {
      const weights = this.hostWeights.get(host);
      weights?.delete(key);
      if (weights?.size === 0) this.hostWeights.delete(host);
    }
    if (type !== "DELETED") {
      const claims = [...new Set(claimsOf(summary.spec).map(claimKey))];
      this.routes.set(key, { summary, claims });
      for (const c of claims) {
        let set = this.claimers.get(c);
        if (!set) this.claimers.set(c, (set = new Set()));
        set.add(key);
      }
      const bytes =
        isRecord(obj) && isProgrammable(obj as unknown as EdgeRouteV2)
          ? weighRoute(obj as unknown as EdgeRouteV2)
          : 0;
      if (bytes > 0 && !summary.terminating)
        for (const host of hostsOf(summary.spec)) {
          let weights = this.hostWeights.get(host);
          if (!weights) this.hostWeights.set(host, (weights = new Map()));
          weights.set(key, bytes);
        }
    }
    this.opts.onEvent?.(type);
  }

  /** Warnings for `route` from the routes that share a claim with it. */
  warnings(route: RouteSummary): string[] {
    const others = new Set<string>();
    for (const c of claimsOf(route.spec)) for (const k of this.claimers.get(claimKey(c)) ?? []) others.add(k);
    if (others.size === 0) return [];
    const summaries: RouteSummary[] = [];
    for (const k of others) {
      const r = this.routes.get(k);
      if (r) summaries.push(r.summary);
    }
    return conflictWarnings(route, summaries);
  }

  /**
   * What the routes older than `route` weigh on `host` (as written; `*` for
   * routes with no hostnames): the snapshot gives a host's budget oldest first.
   */
  olderWeight(route: RouteSummary, host: string): number {
    let total = 0;
    for (const [key, bytes] of this.hostWeights.get(host) ?? []) {
      const other = this.routes.get(key)?.summary;
      if (
        other &&
        !(other.namespace === route.namespace && other.name === route.name) &&
        isOlder(other, route)
      )
        total += bytes;
    }
    return total;
  }

  async stop(): Promise<void> {
    await this.informer?.stop();
  }
}
