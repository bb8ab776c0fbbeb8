// What the ADS server needs from a stream, whichever protocol variant it speaks.

import type { ClientStatus, TypeAck } from "./ack-tracker.js";
import {
  HTTPS_LISTENER_NAME,
  LISTENER_NAME,
  ROUTE_CONFIG_NAME,
  TYPE_URL,
} from "../../envoy/envoy-resources.js";
import { hostOfRoutesName, isApiListenerName } from "../../translate/grpc.js";
import type { Names, Subscription } from "./subscription.js";
import type { XdsSnapshot } from "./resources.js";
import type { ResponseChunks } from "./response-chunks.js";

/**
 * What is kept of a client's NACK: its words, except for a Secret, whose
 * NACK could quote what it refused (a key): that one says only that it was
 * refused. Kept words reach route status, /debug/xds and the ACK records.
 */
export function nackWords(typeUrl: string, message: string | undefined): string {
  if (typeUrl === TYPE_URL.secret)
    return "the client refused a Secret (its words are not kept: they may quote key material)";
  return message ?? "";
}

export interface Writable {
  write(response: ResponseChunks): void;
}

/** The server, as a stream sees it. */
export interface StreamHost {
  current(): XdsSnapshot | undefined;
  /** An ACK, a NACK or a new subscription arrived: waiters look again. */
  changed(): void;
  /** The most names of a type `stream` may subscribe to, with what the other streams from its address hold. */
  nameLimit(typeUrl: string, stream: AdsStream): number;
}

export interface StreamReport {
  /** The client's node id, else its address. */
  readonly id: string;
  readonly peer: string;
  readonly protocol: "sotw" | "delta";
  /** Verified by a client certificate: it is served Secrets. */
  readonly mayHoldSecrets: boolean;
  readonly responses: number;
  readonly bytes: number;
  readonly types: Record<
    string,
    {
      readonly names: "*" | readonly string[];
      readonly acked?: string;
      readonly nacked?: { readonly version: string; readonly message: string };
    }
  >;
}

/** Per type, what a stream of either variant reports: its subscription, the version it ACKed, its last NACK. */
export function typesReport(
  types: ReadonlyMap<string, { readonly sub: Subscription; readonly ack: TypeAck }>,
): StreamReport["types"] {
  const out: StreamReport["types"] = {};
  for (const [url, st] of types) {
    const nack = st.ack.lastNack();
    const acked = st.ack.ackedVersion();
    out[url] = {
      names: st.sub.describe(),
      ...(acked !== undefined ? { acked } : {}),
      ...(nack ? { nacked: nack } : {}),
    };
  }
  return out;
}

/**
 * The routes a client asked for, by the listeners and route configurations it
 * subscribed to: `*` (Envoy's listener or route configuration: every route),
 * or host names (an API listener HOST, `xds:///HOST`, or `edge/HOST`); none:
 * it holds no route, and no route waits for it (a stream that asked only for
 * clusters, or for nothing).
 */
export type Scope = "*" | readonly string[];

export function scopeOf(lds: Names | undefined, rds: Names | undefined): Scope {
  if (lds?.wildcard || rds?.wildcard) return "*";
  const hosts = new Set<string>();
  for (const l of lds?.names ?? []) {
    if (l === LISTENER_NAME || l === HTTPS_LISTENER_NAME) return "*";
    // A name that is neither Envoy's listener nor a host gets nothing, and holds no route.
    if (isApiListenerName(l)) hosts.add(l);
  }
  for (const r of rds?.names ?? []) {
    const host = hostOfRoutesName(r);
    if (host !== undefined) hosts.add(host);
    else if (r === ROUTE_CONFIG_NAME) return "*";
  }
  return [...hosts].sort();
}

/**
 * The snapshot as a stream may see it: whole for a client that proved who it
 * is with a client certificate (mutual TLS), else without TLS (resources.ts's
 * `plain`): such a stream is never sent a Secret, nor a listener that names one.
 */
export function viewFor(snapshot: XdsSnapshot, mayHoldSecrets: boolean): XdsSnapshot {
  return mayHoldSecrets ? snapshot : snapshot.plain;
}

export interface AdsStream {
  readonly id: string;
  /** Its client presented a client certificate the ADS port verified: it may be sent Secrets. */
  readonly mayHoldSecrets: boolean;
  /** The client's address and port, as gRPC gives it (`call.getPeer()`). */
  readonly peer: string;
  readonly protocol: "sotw" | "delta";
  /** Sends each subscribed type whose content for this client changed, in PUSH_ORDER. */
  push(snapshot: XdsSnapshot): void;
  status(snapshot: XdsSnapshot): ClientStatus;
  scope(): Scope;
  report(): StreamReport;
  /** How many names of the type this stream is subscribed to (not `*`). */
  namesHeld(typeUrl: string): number;
}
