// ADS clients for the scale test and bench, on the raw client
// (raw-ads-client.ts): each ACKs every response as it arrives, counts the
// bytes it received and keeps what it holds (per type, name → the resource's
// bytes), so a test can check what each one holds.
//  - `envoy`: what Envoy asks for: every listener and cluster (wildcard),
//    the endpoints of every cluster, and the route configuration `edge`;
//  - `hosts`: a proxyless gRPC process with a channel to each of `hosts`:
//    the API listener HOST and the route configuration `edge/HOST` of each,
//    every cluster and its endpoints.

import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import { ROUTE_CONFIG_NAME } from "../../src/envoy/envoy-resources.js";
import { hostRoutesName } from "../../src/translate/grpc.js";
import { adsClient, deltaStream, sotwStream } from "./raw-ads-client.js";

export type Protocol = "sotw" | "delta";

export interface ScaleClient {
  readonly id: string;
  readonly bytes: () => number;
  readonly responses: () => number;
  /** Per type URL, what the client holds: name → the resource's bytes. */
  readonly held: ReadonlyMap<string, ReadonlyMap<string, Uint8Array>>;
  stop(): void;
}

export interface ScaleClientOptions {
  readonly port: number;
  readonly protocol: Protocol;
  readonly id: string;
  /** Absent: Envoy's subscriptions. */
  readonly hosts?: readonly string[];
  /** How long the client waits for its next response before it gives up (bounds its loop). */
  readonly idleMs?: number;
}

export function scaleClient(opts: ScaleClientOptions): ScaleClient {
  const listeners = opts.hosts ?? [];
  const routeConfigs = opts.hosts === undefined ? [ROUTE_CONFIG_NAME] : opts.hosts.map(hostRoutesName);
  const held = new Map<string, Map<string, Uint8Array>>(
    [TYPE_URL.listener, TYPE_URL.routeConfiguration, TYPE_URL.cluster, TYPE_URL.clusterLoadAssignment].map(
      (t) => [t, new Map()],
    ),
  );
  const client = adsClient(opts.port);
  let bytes = 0;
  let responses = 0;
  let stopped = false;
  const idleMs = opts.idleMs ?? 600_000;
  let end: () => void;
  if (opts.protocol === "sotw") {
    const s = sotwStream(client);
    end = () => s.end();
    let clusters: string[] = [];
    const names = (type: string): string[] =>
      type === TYPE_URL.listener
        ? [...listeners]
        : type === TYPE_URL.routeConfiguration
          ? routeConfigs
          : type === TYPE_URL.clusterLoadAssignment
            ? clusters
            : [];
    s.send({ node: { id: opts.id }, type_url: TYPE_URL.cluster });
    s.send({ type_url: TYPE_URL.listener, resource_names: names(TYPE_URL.listener) });
    s.send({ type_url: TYPE_URL.routeConfiguration, resource_names: routeConfigs });
    void (async () => {
      while (!stopped) {
        const r = await s.next(idleMs).catch(() => undefined);
        if (r === undefined) break;
        bytes += r.bytes;
        responses++;
        const m = r.message;
        const own = held.get(m.type_url);
        const byName = new Map<string, Uint8Array>();
        for (const x of m.resources) byName.set(resourceName(m.type_url, x.value), x.value);
        if (own !== undefined) {
          own.clear();
          for (const [n, v] of byName) own.set(n, v);
        }
        s.send({ type_url: m.type_url, response_nonce: m.nonce, resource_names: names(m.type_url) });
        if (m.type_url === TYPE_URL.cluster) {
          const next = [...byName.keys()].sort();
          if (next.join() !== clusters.join()) {
            clusters = next;
            s.send({ type_url: TYPE_URL.clusterLoadAssignment, resource_names: clusters });
          }
        }
      }
    })();
  } else {
    const d = deltaStream(client);
    end = () => d.end();
    const known = new Set<string>();
    d.send({ node: { id: opts.id }, type_url: TYPE_URL.cluster, resource_names_subscribe: ["*"] });
    d.send({
      type_url: TYPE_URL.listener,
      resource_names_subscribe: opts.hosts === undefined ? ["*"] : [...listeners],
    });
    d.send({ type_url: TYPE_URL.routeConfiguration, resource_names_subscribe: routeConfigs });
    void (async () => {
      while (!stopped) {
        const r = await d.next(idleMs).catch(() => undefined);
        if (r === undefined) break;
        bytes += r.bytes;
        responses++;
        const m = r.message;
        const own = held.get(m.type_url);
        for (const n of m.removed_resources) own?.delete(n);
        for (const x of m.resources) own?.set(x.name, x.resource.value);
        d.send({ type_url: m.type_url, response_nonce: m.nonce });
        if (m.type_url === TYPE_URL.cluster) {
          const added = m.resources.map((x) => x.name).filter((n) => !known.has(n));
          for (const n of added) known.add(n);
          if (added.length > 0)
            d.send({ type_url: TYPE_URL.clusterLoadAssignment, resource_names_subscribe: added });
        }
      }
    })();
  }
  return {
    id: opts.id,
    bytes: () => bytes,
    responses: () => responses,
    held,
    stop() {
      stopped = true;
      end();
      client.close();
    },
  };
}

/** A State of the World response names its resources only inside them: read the name field. */
function resourceName(typeUrl: string, value: Uint8Array): string {
  // Every type served has its name as field 1 (Listener, RouteConfiguration, Cluster, ClusterLoadAssignment.cluster_name).
  if (value[0] !== 0x0a) throw new Error(`${typeUrl}: resource without a name first`);
  let len = 0;
  let shift = 0;
  let i = 1;
  for (;;) {
    const b = value[i++] as number;
    len |= (b & 0x7f) << shift;
    if (b < 0x80) break;
    shift += 7;
  }
  return Buffer.from(value.buffer, value.byteOffset + i, len).toString("utf8");
}
