// Each rule's Envoy route action, made once per distinct action in a build:
// many rules send to the same Services with the same weights and timeout, and
// they then share one action object. The snapshot's JSON is the same either
// way; what changes is the number of objects built, kept and collected.

import { parseGatewayDuration } from "../api/duration.js";
import type { RouteRule } from "../api/types.js";
import { BackendClusters } from "./backend-clusters.js";
import type { RouteAction } from "../envoy/envoy-resources.js";
import { protoDuration } from "../envoy/proto-duration.js";
import { effectiveTimeout } from "./rule-filters.js";
import type { ServiceEndpoints } from "../routing/service-endpoints.js";

/** A step in the trie of weighted actions: by the next cluster's name, then its weight. */
interface WeightedNode {
  readonly next: Map<string, Map<number, WeightedNode>>;
  action?: RouteAction;
}

function weightedNode(): WeightedNode {
  return { next: new Map(), action: undefined };
}

export class RouteActions {
  private readonly clusters: BackendClusters;
  /** Timeout text → proto Duration. */
  private readonly timeouts = new Map<string, string | undefined>();
  /** Cluster → timeout ("" for none) → action. */
  private readonly single = new Map<string, Map<string, RouteAction>>();
  /** Timeout ("" for none) → a trie by cluster, then weight, in name order. */
  private readonly weighted = new Map<string, WeightedNode>();
  /** The rule being resolved: its clusters by name, and their weights. */
  private readonly names: string[] = [];
  private readonly weights: number[] = [];

  constructor(endpoints: ReadonlyMap<string, ServiceEndpoints>) {
    this.clusters = new BackendClusters(endpoints);
  }

  /**
   * One cluster per Service port; backends naming the same one add their
   * weights; weight 0 sends nothing. Undefined when a backend's Service or
   * port does not exist.
   */
  actionOf(namespace: string, rule: RouteRule): RouteAction | undefined {
    const text = effectiveTimeout(rule);
    const timeout = text === undefined ? undefined : this.timeoutOf(text);
    const only = rule.backends.length === 1 ? rule.backends[0] : undefined;
    if (only !== undefined && (only.weight ?? 1) > 0) {
      const name = this.clusters.clusterOf(namespace, only.name, only.port);
      return name === undefined ? undefined : this.singleAction(name, timeout);
    }
    // Kept sorted by name as they come (a rule has at most 8 backends), in
    // arrays reused from rule to rule: most rules find their action already made.
    const { names, weights } = this;
    let count = 0;
    for (const b of rule.backends) {
      const name = this.clusters.clusterOf(namespace, b.name, b.port);
      if (name === undefined) return undefined;
      const weight = b.weight ?? 1;
      if (weight <= 0) continue;
      let slot = 0;
      while (slot < count && (names[slot] as string) < name) slot++;
      if (slot < count && names[slot] === name) {
        weights[slot] = (weights[slot] as number) + weight;
        continue;
      }
      for (let k = count; k > slot; k--) {
        names[k] = names[k - 1] as string;
        weights[k] = weights[k - 1] as number;
      }
      names[slot] = name;
      weights[slot] = weight;
      count++;
    }
    return count === 1 ? this.singleAction(names[0] as string, timeout) : this.weightedAction(count, timeout);
  }

  /** `namespace/service:port`, or undefined when the Service or that port of it does not exist. */
  clusterOf(namespace: string, service: string, port: number): string | undefined {
    return this.clusters.clusterOf(namespace, service, port);
  }

  private timeoutOf(text: string): string | undefined {
    const known = this.timeouts.get(text);
    if (known !== undefined || this.timeouts.has(text)) return known;
    const ms = parseGatewayDuration(text);
    const timeout = ms === undefined ? undefined : protoDuration(ms);
    this.timeouts.set(text, timeout);
    return timeout;
  }

  private singleAction(cluster: string, timeout: string | undefined): RouteAction {
    let byTimeout = this.single.get(cluster);
    if (byTimeout === undefined) {
      byTimeout = new Map();
      this.single.set(cluster, byTimeout);
    }
    let action = byTimeout.get(timeout ?? "");
    if (action === undefined) {
      action = timeout === undefined ? { cluster } : { cluster, timeout };
      byTimeout.set(timeout ?? "", action);
    }
    return action;
  }

  /** The action for the first `count` clusters and weights of the scratch arrays. */
  private weightedAction(count: number, timeout: string | undefined): RouteAction {
    const { names, weights } = this;
    // A trie walk by strings the build already holds and small numbers: no key string is built.
    let root = this.weighted.get(timeout ?? "");
    if (root === undefined) {
      root = weightedNode();
      this.weighted.set(timeout ?? "", root);
    }
    let node: WeightedNode = root;
    for (let i = 0; i < count; i++) {
      const name = names[i] as string;
      const weight = weights[i] as number;
      let byWeight: Map<number, WeightedNode> | undefined = node.next.get(name);
      if (byWeight === undefined) {
        byWeight = new Map();
        node.next.set(name, byWeight);
      }
      let child: WeightedNode | undefined = byWeight.get(weight);
      if (child === undefined) {
        child = weightedNode();
        byWeight.set(weight, child);
      }
      node = child;
    }
    if (node.action === undefined) {
      const clusters = names.slice(0, count).map((name, i) => ({ name, weight: weights[i] as number }));
      const weighted_clusters = { clusters };
      node.action = timeout === undefined ? { weighted_clusters } : { weighted_clusters, timeout };
    }
    return node.action;
  }
}
