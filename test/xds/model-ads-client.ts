// A client that behaves as Envoy or as gRPC's xDS client does on one ADS
// stream, State of the World or Delta, and keeps what it holds the way the
// protocol says it must (api/xds_protocol.rst, "Deleting Resources"): SotW
// Listener and Cluster responses are the whole set, anything else is merged;
// Delta adds and removes by name. It ACKs every response, asks for what its
// resources lead to (EDS for its clusters; gRPC: RDS for its listener, CDS
// for the clusters its routes name), and after every response records each
// moment a route it holds names a cluster it does not hold: what Envoy would
// answer with 503 (no cluster), or a gRPC channel with UNAVAILABLE.

import type * as grpc from "@grpc/grpc-js";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import { decodeResource, type EncodedAny } from "../../src/dataplane/xds/proto-codec.js";
import { deltaStream, sotwStream } from "./raw-ads-client.js";

type Resource = Record<string, unknown>;

export interface ModelOptions {
  readonly protocol: "sotw" | "delta";
  /** Envoy: every listener and cluster (wildcard); gRPC: the API listener of these hosts, and what they lead to. */
  readonly kind: { readonly envoy: true } | { readonly hosts: readonly string[] };
  readonly nodeId: string;
}

interface Route {
  readonly route?: {
    readonly cluster?: string;
    readonly weighted_clusters?: { readonly clusters: readonly { readonly name: string }[] };
  };
}
interface RouteConfig {
  readonly virtual_hosts?: readonly { readonly routes?: readonly Route[] }[];
}

function clustersNamed(rc: Resource): string[] {
  const out: string[] = [];
  for (const vh of (rc as RouteConfig).virtual_hosts ?? [])
    for (const r of vh.routes ?? []) {
      if (r.route?.cluster) out.push(r.route.cluster);
      for (const c of r.route?.weighted_clusters?.clusters ?? []) out.push(c.name);
    }
  return out;
}

function nameOf(typeUrl: string, r: Resource): string {
  return String(typeUrl === TYPE_URL.clusterLoadAssignment ? r.cluster_name : r.name);
}

export class ModelAdsClient {
  /** Per type, what the client holds by name. */
  readonly held = new Map<string, Map<string, Resource>>();
  /** Every response taken, in order: its type and the names it carried or removed. */
  readonly log: { readonly type: string; readonly names: string[]; readonly removed: string[] }[] = [];
  /** Each moment a held route named a cluster not held (or, with EDS, whose endpoints were not held). */
  readonly breaks: string[] = [];
  private readonly subscribed = new Map<string, Set<string>>();
  /** Clusters the server said are gone (left out of a SotW response that had to hold them, or removed by Delta). */
  private readonly deleted = new Set<string>();
  private readonly stream;
  private readonly delta;
  private closed = false;
  private readonly loop: Promise<void>;

  constructor(
    client: grpc.Client,
    private readonly opts: ModelOptions,
  ) {
    for (const t of [
      TYPE_URL.listener,
      TYPE_URL.routeConfiguration,
      TYPE_URL.cluster,
      TYPE_URL.clusterLoadAssignment,
    ])
      this.held.set(t, new Map());
    this.delta = opts.protocol === "delta" ? deltaStream(client) : undefined;
    this.stream = opts.protocol === "sotw" ? sotwStream(client) : undefined;
    const node = { id: opts.nodeId, cluster: "edge" };
    if ("envoy" in opts.kind) {
      // Envoy asks for every cluster and listener, then routes and endpoints as they lead there.
      this.ask(TYPE_URL.cluster, ["*"], node);
      this.ask(TYPE_URL.listener, ["*"]);
    } else {
      this.ask(TYPE_URL.listener, [...opts.kind.hosts], node);
    }
    this.loop = this.run();
  }

  private wildcard(typeUrl: string): boolean {
    return "envoy" in this.opts.kind && (typeUrl === TYPE_URL.cluster || typeUrl === TYPE_URL.listener);
  }

  /** Asks for exactly `names` of a type (SotW: the whole list; Delta: the difference). */
  private ask(typeUrl: string, names: string[], node?: { id: string; cluster: string }, nonce = ""): void {
    const before = this.subscribed.get(typeUrl) ?? new Set<string>();
    const after = new Set(names);
    this.subscribed.set(typeUrl, after);
    // What it no longer asks for, it forgets (as gRPC's client drops a resource it stops watching).
    if (!this.wildcard(typeUrl)) for (const n of before) if (!after.has(n)) this.held.get(typeUrl)?.delete(n);
    if (this.stream) {
      const list = this.wildcard(typeUrl) ? [] : [...after].sort();
      this.stream.send({
        ...(node ? { node } : {}),
        type_url: typeUrl,
        resource_names: list,
        response_nonce: nonce,
      });
    } else if (this.delta) {
      const subscribe = [...after].filter((n) => !before.has(n));
      const unsubscribe = [...before].filter((n) => !after.has(n));
      this.delta.send({
        ...(node ? { node } : {}),
        type_url: typeUrl,
        resource_names_subscribe: subscribe,
        resource_names_unsubscribe: unsubscribe,
        response_nonce: nonce,
      });
    }
  }

  private async run(): Promise<void> {
    // Bounded: at most 10 minutes of 500 ms waits, ended by close().
    for (let i = 0; i < 1_200 && !this.closed; i++) {
      try {
        if (this.stream) {
          const m = (await this.stream.next(500)).message;
          this.take(m.type_url, m.resources, [], true, m.version_info, m.nonce);
        } else if (this.delta) {
          const m = (await this.delta.next(500)).message;
          this.take(
            m.type_url,
            m.resources.map((r) => r.resource),
            m.removed_resources,
            false,
            m.system_version_info,
            m.nonce,
          );
        }
      } catch {
        // No response within the wait: look again, unless closed.
      }
    }
  }

  private take(
    typeUrl: string,
    resources: readonly EncodedAny[],
    removed: readonly string[],
    sotw: boolean,
    version: string,
    nonce: string,
  ): void {
    const held = this.held.get(typeUrl) as Map<string, Resource>;
    const decoded = resources.map((r) => decodeResource(r));
    const before = new Set(held.keys());
    if (sotw && (typeUrl === TYPE_URL.listener || typeUrl === TYPE_URL.cluster)) held.clear();
    for (const r of decoded) held.set(nameOf(typeUrl, r), r);
    for (const n of removed) held.delete(n);
    if (typeUrl === TYPE_URL.cluster) {
      const asked = this.subscribed.get(typeUrl) ?? new Set<string>();
      for (const n of before)
        if (!held.has(n) && (this.wildcard(typeUrl) || asked.has(n))) this.deleted.add(n);
      for (const n of held.keys()) this.deleted.delete(n);
    }
    this.log.push({ type: typeUrl, names: decoded.map((r) => nameOf(typeUrl, r)), removed: [...removed] });
    this.check(`after a ${typeUrl.split(".").at(-1)} response (version ${version})`);
    // The ACK, asking for what this type leads to.
    const wants = this.wants();
    if (this.stream) {
      const list = this.wildcard(typeUrl)
        ? []
        : [...(wants.get(typeUrl) ?? this.subscribed.get(typeUrl) ?? [])];
      this.subscribed.set(typeUrl, new Set(list));
      this.stream.send({
        type_url: typeUrl,
        version_info: version,
        response_nonce: nonce,
        resource_names: list.sort(),
      });
    } else
      this.ask(typeUrl, [...(wants.get(typeUrl) ?? this.subscribed.get(typeUrl) ?? [])], undefined, nonce);
    // Other types whose wanted names changed.
    for (const [t, names] of wants) {
      if (t === typeUrl || this.wildcard(t)) continue;
      const now = this.subscribed.get(t) ?? new Set<string>();
      if (names.size === now.size && [...names].every((n) => now.has(n))) continue;
      if (names.size === 0 && !this.subscribed.has(t)) continue;
      this.ask(t, [...names]);
    }
  }

  /** What the held resources lead to: per type, the names to ask for. */
  private wants(): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    const routeConfigs = new Set<string>();
    for (const l of this.held.get(TYPE_URL.listener)?.values() ?? []) {
      const text = JSON.stringify(l);
      const m = /"route_config_name":"([^"]+)"/.exec(text);
      if (m?.[1]) routeConfigs.add(m[1]);
    }
    out.set(TYPE_URL.routeConfiguration, routeConfigs);
    if (!("envoy" in this.opts.kind)) {
      const clusters = new Set<string>();
      for (const rc of this.held.get(TYPE_URL.routeConfiguration)?.values() ?? [])
        for (const c of clustersNamed(rc)) clusters.add(c);
      out.set(TYPE_URL.cluster, clusters);
    }
    out.set(TYPE_URL.clusterLoadAssignment, new Set(this.held.get(TYPE_URL.cluster)?.keys() ?? []));
    return out;
  }

  private check(when: string): void {
    const clusters = this.held.get(TYPE_URL.cluster) as Map<string, Resource>;
    const endpoints = this.held.get(TYPE_URL.clusterLoadAssignment) as Map<string, Resource>;
    const wanted = this.subscribed.get(TYPE_URL.routeConfiguration) ?? new Set<string>();
    for (const [name, rc] of this.held.get(TYPE_URL.routeConfiguration) ?? []) {
      if (!wanted.has(name)) continue;
      for (const c of clustersNamed(rc)) {
        // gRPC asks for a cluster once its routes name it: only one it was told is gone counts.
        if (!("envoy" in this.opts.kind) && !this.deleted.has(c)) continue;
        if (!clusters.has(c)) this.breaks.push(`${when}: ${name} names ${c}, which the client does not hold`);
        else if ("envoy" in this.opts.kind && !endpoints.has(c))
          this.breaks.push(`${when}: ${name} names ${c}, whose endpoints the client does not hold`);
      }
    }
  }

  /** The clusters held now. */
  clusters(): string[] {
    return [...(this.held.get(TYPE_URL.cluster)?.keys() ?? [])].sort();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.stream?.end();
    this.delta?.end();
    await this.loop;
  }
}
