// Raw ADS clients that answer as a test scripts them, over one stream each
// (raw-ads-client.ts), recording every response and every answer with its
// time:
//  - `startSotwClient`: State of the World with fixed subscriptions, as a
//    gRPC client asks (LDS [HOST], RDS [edge/HOST], CDS [its clusters], EDS
//    [the same]), each type ACKed, held (no answer: not taken yet) or NACKed
//    with the test's words;
//  - `startEnvoyLikeDelta`: Delta as Envoy subscribes: CDS `*`, LDS `*`,
//    RDS `edge` once a listener came, EDS for every cluster it holds; ACKs
//    every response unless told to hold a type.

import type * as grpc from "@grpc/grpc-js";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import {
  decodeResource,
  type DeltaDiscoveryResponse,
  type DiscoveryResponse,
} from "../../src/dataplane/xds/proto-codec.js";
import { adsClient, deltaStream, sotwStream } from "./raw-ads-client.js";

export type Answer = { kind: "ack" } | { kind: "hold" } | { kind: "nack"; message: string };
type Json = Record<string, unknown>;

export interface Seen {
  readonly typeUrl: string;
  readonly version: string;
  readonly nonce: string;
  /** Resources by name, in proto3 JSON form. */
  readonly resources: ReadonlyMap<string, Json>;
  /** Delta only. */
  readonly removed: readonly string[];
  /** performance.now() when it came. */
  readonly at: number;
}

export interface Sent {
  readonly typeUrl: string;
  readonly kind: "ack" | "nack";
  readonly nonce: string;
  readonly at: number;
}

/** The name of a resource of any type, from its proto3 JSON form. */
export function resourceName(typeUrl: string, r: Json): string {
  const name = typeUrl === TYPE_URL.clusterLoadAssignment ? r.cluster_name : r.name;
  return typeof name === "string" ? name : "";
}

/** The route keys (`namespace/name`) in a route configuration: snapshot.ts names Envoy routes `ns/name/rN/mM`. */
export function routeKeysOf(rc: Json | undefined): string[] {
  const keys = new Set<string>();
  for (const vh of (rc?.virtual_hosts ?? []) as { routes?: { name?: string }[] }[])
    for (const r of vh.routes ?? []) if (r.name) keys.add(r.name.split("/", 2).join("/"));
  return [...keys].sort();
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Base {
  readonly received: readonly Seen[];
  readonly answers: readonly Sent[];
  /** From now on, for `typeUrl`; leaving "hold" answers the response held, if any, the new way. */
  answer(typeUrl: string, a: Answer): void;
  /** The newest response of `typeUrl` that satisfies `pred`, waited for. */
  waitFor(typeUrl: string, pred: (s: Seen) => boolean, timeoutMs?: number): Promise<Seen>;
  close(): Promise<void>;
}

export interface SotwClient extends Base {
  /** The resources of the last response of each type the client ACKed. */
  acked(typeUrl: string): ReadonlyMap<string, Json> | undefined;
}

export interface SotwOptions {
  readonly port: number;
  readonly node: string;
  /** Type URL → names, sent in this order. */
  readonly subscriptions: readonly (readonly [string, readonly string[]])[];
}

const LIFETIME_MS = 10 * 60_000;

export function startSotwClient(opts: SotwOptions): SotwClient {
  const client: grpc.Client = adsClient(opts.port);
  const s = sotwStream(client);
  const received: Seen[] = [];
  const answers: Sent[] = [];
  const policy = new Map<string, Answer>();
  const held = new Map<string, Seen>();
  const ackedVersion = new Map<string, string>();
  const ackedResources = new Map<string, ReadonlyMap<string, Json>>();
  const names = new Map(opts.subscriptions.map(([t, n]) => [t, [...n]]));
  let closed = false;

  const respond = (m: Seen): void => {
    const a = policy.get(m.typeUrl) ?? { kind: "ack" };
    if (a.kind === "hold") {
      held.set(m.typeUrl, m);
      return;
    }
    held.delete(m.typeUrl);
    const base = { type_url: m.typeUrl, resource_names: names.get(m.typeUrl) ?? [], response_nonce: m.nonce };
    if (a.kind === "ack") {
      ackedVersion.set(m.typeUrl, m.version);
      ackedResources.set(m.typeUrl, m.resources);
      s.send({ ...base, version_info: m.version });
    } else
      s.send({
        ...base,
        version_info: ackedVersion.get(m.typeUrl) ?? "",
        error_detail: { code: 3, message: a.message },
      });
    answers.push({ typeUrl: m.typeUrl, kind: a.kind, nonce: m.nonce, at: performance.now() });
  };

  opts.subscriptions.forEach(([typeUrl, list], i) =>
    s.send({
      ...(i === 0 ? { node: { id: opts.node, cluster: "edge" } } : {}),
      type_url: typeUrl,
      resource_names: [...list],
    }),
  );
  const deadline = Date.now() + LIFETIME_MS;
  const loop = (async () => {
    while (!closed && Date.now() < deadline) {
      let m: DiscoveryResponse;
      try {
        m = (await s.next(250)).message;
      } catch {
        continue;
      }
      const resources = new Map<string, Json>();
      for (const any of m.resources ?? []) {
        const r = decodeResource(any);
        resources.set(resourceName(m.type_url, r), r);
      }
      const seen: Seen = {
        typeUrl: m.type_url,
        version: m.version_info,
        nonce: m.nonce,
        resources,
        removed: [],
        at: performance.now(),
      };
      received.push(seen);
      respond(seen);
    }
  })();

  return {
    received,
    answers,
    answer(typeUrl, a) {
      policy.set(typeUrl, a);
      const h = held.get(typeUrl);
      if (h !== undefined && a.kind !== "hold") respond(h);
    },
    waitFor(typeUrl, pred, timeoutMs = 10_000) {
      return until(
        `a ${typeUrl} response on ${opts.node}`,
        () => [...received].reverse().find((r) => r.typeUrl === typeUrl && pred(r)),
        timeoutMs,
      );
    },
    acked: (typeUrl) => ackedResources.get(typeUrl),
    async close() {
      closed = true;
      await loop;
      s.end();
      client.close();
    },
  };
}

export interface EnvoyLikeClient extends Base {
  /** What it holds (took and ACKed) of `typeUrl`, by name. */
  holds(typeUrl: string): ReadonlyMap<string, Json>;
  /** EDS names it is subscribed to. */
  edsNames(): string[];
}

export function startEnvoyLikeDelta(opts: { port: number; node: string }): EnvoyLikeClient {
  const client: grpc.Client = adsClient(opts.port);
  const s = deltaStream(client);
  const received: Seen[] = [];
  const answers: Sent[] = [];
  const policy = new Map<string, Answer>();
  const held = new Map<string, Seen[]>();
  const state = new Map<string, Map<string, Json>>();
  const eds = new Set<string>();
  let rdsAsked = false;
  let closed = false;

  const holdsOf = (t: string): Map<string, Json> => {
    let m = state.get(t);
    if (m === undefined) state.set(t, (m = new Map()));
    return m;
  };
  /** Takes a response as Envoy does: applies it, asks for what it now references, then ACKs. */
  const take = (m: Seen): void => {
    const mine = holdsOf(m.typeUrl);
    for (const n of m.removed) mine.delete(n);
    for (const [n, r] of m.resources) mine.set(n, r);
    if (m.typeUrl === TYPE_URL.listener && !rdsAsked && mine.size > 0) {
      rdsAsked = true;
      s.send({ type_url: TYPE_URL.routeConfiguration, resource_names_subscribe: ["edge"] });
    }
    if (m.typeUrl === TYPE_URL.cluster) {
      const want = new Set(
        [...mine.values()].map((c) => {
          const svc = (c.eds_cluster_config as { service_name?: string } | undefined)?.service_name;
          return svc || resourceName(TYPE_URL.cluster, c);
        }),
      );
      const add = [...want].filter((n) => !eds.has(n));
      const drop = [...eds].filter((n) => !want.has(n));
      for (const n of add) eds.add(n);
      for (const n of drop) {
        eds.delete(n);
        holdsOf(TYPE_URL.clusterLoadAssignment).delete(n);
      }
      if (add.length > 0 || drop.length > 0)
        s.send({
          type_url: TYPE_URL.clusterLoadAssignment,
          resource_names_subscribe: add,
          resource_names_unsubscribe: drop,
        });
    }
  };
  const respond = (m: Seen): void => {
    const a = policy.get(m.typeUrl) ?? { kind: "ack" };
    if (a.kind === "hold") {
      held.set(m.typeUrl, [...(held.get(m.typeUrl) ?? []), m]);
      return;
    }
    if (a.kind === "ack") {
      take(m);
      s.send({ type_url: m.typeUrl, response_nonce: m.nonce });
    } else
      s.send({ type_url: m.typeUrl, response_nonce: m.nonce, error_detail: { code: 3, message: a.message } });
    answers.push({ typeUrl: m.typeUrl, kind: a.kind, nonce: m.nonce, at: performance.now() });
  };

  s.send({
    node: { id: opts.node, cluster: "edge", user_agent_name: "envoy" },
    type_url: TYPE_URL.cluster,
    resource_names_subscribe: ["*"],
  });
  s.send({ type_url: TYPE_URL.listener, resource_names_subscribe: ["*"] });
  const deadline = Date.now() + LIFETIME_MS;
  const loop = (async () => {
    while (!closed && Date.now() < deadline) {
      let m: DeltaDiscoveryResponse;
      try {
        m = (await s.next(250)).message;
      } catch {
        continue;
      }
      const resources = new Map<string, Json>();
      for (const r of m.resources ?? []) resources.set(r.name, decodeResource(r.resource));
      const seen: Seen = {
        typeUrl: m.type_url,
        version: m.system_version_info,
        nonce: m.nonce,
        resources,
        removed: m.removed_resources ?? [],
        at: performance.now(),
      };
      received.push(seen);
      respond(seen);
    }
  })();

  return {
    received,
    answers,
    answer(typeUrl, a) {
      policy.set(typeUrl, a);
      if (a.kind === "hold") return;
      const list = held.get(typeUrl) ?? [];
      held.delete(typeUrl);
      // Delta responses are changes: every one held is answered, in order.
      for (const m of list) respond(m);
    },
    waitFor(typeUrl, pred, timeoutMs = 10_000) {
      return until(
        `a ${typeUrl} response on ${opts.node}`,
        () => [...received].reverse().find((r) => r.typeUrl === typeUrl && pred(r)),
        timeoutMs,
      );
    },
    holds: (t) => holdsOf(t),
    edsNames: () => [...eds].sort(),
    async close() {
      closed = true;
      await loop;
      s.end();
      client.close();
    },
  };
}
