// One State-of-the-World ADS stream (StreamAggregatedResources). Per type the
// client names what it wants (or nothing, for LDS and CDS: everything); each
// response carries the whole of that set, the snapshot's version and a nonce;
// the client's next request for the type ACKs the nonce, or NACKs it with
// `error_detail` and keeps what it had. A request whose nonce is not the
// latest one sent answers an older response: it is ignored, as the protocol
// says, since the newer response is on its way.

import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { ACKED, PENDING, TypeAck, clientStatus, type ClientStatus } from "./ack-tracker.js";
import { type DiscoveryRequest, type NodeInfo } from "./proto-codec.js";
import { discoveryResponse } from "./response-chunks.js";
import {
  PUSH_ORDER,
  apiListenerResource,
  covers,
  hostOfRoutesName,
  isApiListenerName,
  digestOf,
  isWildcardType,
  requiredNames,
  type XdsResource,
  type XdsSnapshot,
} from "./resources.js";
import type { AdsStream, StreamHost, StreamReport, Writable } from "./stream.js";

interface TypeState {
  names: ReadonlySet<string> | "*";
  readonly ack: TypeAck;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(PUSH_ORDER);

function subscription(typeUrl: string, names: readonly string[]): ReadonlySet<string> | "*" {
  if (names.includes("*") || (names.length === 0 && isWildcardType(typeUrl))) return "*";
  return new Set(names);
}

function sameNames(a: ReadonlySet<string> | "*", b: ReadonlySet<string> | "*"): boolean {
  if (a === "*" || b === "*") return a === b;
  if (a.size !== b.size) return false;
  for (const n of a) if (!b.has(n)) return false;
  return true;
}

/** A gRPC client's API listener and its route configuration exist for any host name it asks for. */
function onDemand(snapshot: XdsSnapshot, typeUrl: string, name: string): XdsResource | undefined {
  if (typeUrl === TYPE_URL.listener) return isApiListenerName(name) ? apiListenerResource(name) : undefined;
  if (typeUrl !== TYPE_URL.routeConfiguration) return undefined;
  const host = hostOfRoutesName(name);
  return host === undefined ? undefined : snapshot.hostRoutes(host);
}

/** The resources a subscription gets from a snapshot, and their digest. */
export function subset(
  snapshot: XdsSnapshot,
  typeUrl: string,
  names: ReadonlySet<string> | "*",
): { readonly resources: readonly XdsResource[]; readonly digest: string } {
  const type = snapshot.types.get(typeUrl);
  if (type === undefined) return { resources: [], digest: digestOf([]) };
  if (names === "*") return { resources: type.list, digest: type.digest };
  const resources: XdsResource[] = [];
  for (const n of names) {
    const r = type.byName.get(n) ?? onDemand(snapshot, typeUrl, n);
    if (r !== undefined) resources.push(r);
  }
  return { resources, digest: digestOf(resources) };
}

export class SotwStream implements AdsStream {
  readonly protocol = "sotw";
  private node: NodeInfo | undefined;
  private readonly types = new Map<string, TypeState>();
  private nonce = 0;
  /** The clusters last sent to a named CDS subscription, by name. */
  private readonly sentClusters = new Map<string, XdsResource>();
  private bytes = 0;
  private responses = 0;

  constructor(
    readonly peer: string,
    private readonly out: Writable,
    private readonly host: StreamHost,
  ) {}

  get id(): string {
    return this.node?.id || this.peer;
  }

  onRequest(req: DiscoveryRequest): void {
    this.node ??= req.node;
    const url = req.type_url;
    // This server serves the four types a snapshot holds; anything else gets no answer.
    if (!KNOWN_TYPES.has(url)) return;
    const names = subscription(url, req.resource_names);
    const st = this.types.get(url);
    // A nonce on a stream that never sent this type comes from an earlier stream (a
    // reconnect): it is a first request.
    if (st !== undefined && req.response_nonce !== "" && st.ack.hasSent()) {
      if (!st.ack.isLatest(req.response_nonce)) return;
      if (req.error_detail) st.ack.reject(req.response_nonce, req.error_detail.message ?? "");
      else st.ack.ack(req.response_nonce);
      this.host.changed();
      if (sameNames(st.names, names)) return;
      st.names = names;
      this.send(url, st);
      return;
    }
    const fresh: TypeState = st ?? { names, ack: new TypeAck() };
    fresh.names = names;
    this.types.set(url, fresh);
    this.send(url, fresh);
    this.host.changed();
  }

  push(snapshot: XdsSnapshot): void {
    for (const url of PUSH_ORDER) {
      const st = this.types.get(url);
      if (st === undefined) continue;
      // Unchanged for this client: not sent again; its ACK of the same content still counts.
      if (st.ack.lastSent()?.digest === this.subset(snapshot, url, st.names).digest) continue;
      this.send(url, st);
    }
  }

  /**
   * subset(), plus the clusters this client named that the snapshot dropped,
   * as last sent. In State of the World a named resource left out of CDS is
   * deleted, and grpc-js-xds 1.14 never notices such a cluster coming back
   * unchanged; a cluster no route names sends nothing anywhere, and the client
   * unsubscribes from it once its routes stop naming it.
   */
  private subset(
    snapshot: XdsSnapshot,
    url: string,
    names: ReadonlySet<string> | "*",
  ): { readonly resources: readonly XdsResource[]; readonly digest: string } {
    const own = subset(snapshot, url, names);
    if (url !== TYPE_URL.cluster || names === "*" || own.resources.length === names.size) return own;
    const resources = [...own.resources];
    for (const n of names) {
      const kept = this.sentClusters.get(n);
      if (kept !== undefined && !snapshot.types.get(url)?.byName.has(n)) resources.push(kept);
    }
    return { resources, digest: digestOf(resources) };
  }

  private send(url: string, st: TypeState): void {
    const snapshot = this.host.current();
    if (snapshot === undefined) return;
    // A type the client unsubscribed from entirely gets no response (and no nonce it would not know).
    if (st.names !== "*" && st.names.size === 0) return;
    const { resources, digest } = this.subset(snapshot, url, st.names);
    if (url === TYPE_URL.cluster && st.names !== "*") {
      for (const n of [...this.sentClusters.keys()]) if (!st.names.has(n)) this.sentClusters.delete(n);
      for (const r of resources) this.sentClusters.set(r.name, r);
    }
    const nonce = String(++this.nonce);
    // The response points at the snapshot's bytes: every client shares them.
    const response = discoveryResponse({
      version_info: snapshot.version,
      resources: resources.map((r) => r.any),
      type_url: url,
      nonce,
    });
    st.ack.sent(nonce, snapshot.version, digest);
    this.bytes += response.size;
    this.responses++;
    this.out.write(response);
  }

  status(snapshot: XdsSnapshot): ClientStatus {
    if (this.types.size === 0) return ACKED;
    const per: ClientStatus[] = [];
    // What the client's listeners lead to must be asked for before it can be held.
    const lds = this.types.get(TYPE_URL.listener);
    if (lds !== undefined)
      for (const [url, needed] of requiredNames(snapshot, lds.names))
        if (!covers(this.types.get(url)?.names, needed)) per.push(PENDING);
    for (const [url, st] of this.types) per.push(st.ack.status(this.subset(snapshot, url, st.names).digest));
    return clientStatus(per);
  }

  report(): StreamReport {
    const types: StreamReport["types"] = {};
    for (const [url, st] of this.types) {
      const nack = st.ack.lastNack();
      types[url] = {
        names: st.names === "*" ? "*" : [...st.names].sort(),
        ...(st.ack.ackedVersion() !== undefined ? { acked: st.ack.ackedVersion() } : {}),
        ...(nack ? { nacked: nack } : {}),
      };
    }
    return {
      id: this.id,
      peer: this.peer,
      protocol: this.protocol,
      responses: this.responses,
      bytes: this.bytes,
      types,
    };
  }
}
