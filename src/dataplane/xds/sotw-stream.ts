// One State-of-the-World ADS stream (StreamAggregatedResources). Per type the
// client names what it wants (subscription.ts: the wildcard, its legacy form,
// and the empty list that unsubscribes); each response carries the whole of
// that set, the snapshot's version and a nonce; the client's next request for
// the type ACKs the nonce, or NACKs it with `error_detail` and keeps what it
// had. A request whose nonce is not the latest one sent answers an older
// response: it is ignored, as the protocol says, since the newer response is
// on its way. What goes when is make-before-break.ts's.

import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { MAX_CLIENT_ID, PENDING, TypeAck, clip, clientStatus, type ClientStatus } from "./ack-tracker.js";
import { RouteHolding, routesMayGo, subset, type Content, type HeldState } from "./make-before-break.js";
import { type DiscoveryRequest, type NodeInfo } from "./proto-codec.js";
import { discoveryResponse } from "./response-chunks.js";
import {
  PUSH_ORDER,
  covers,
  digestOf,
  requiredNames,
  type XdsResource,
  type XdsSnapshot,
} from "./resources.js";
import { Subscription, type Names } from "./subscription.js";
import {
  nackWords,
  scopeOf,
  viewFor,
  type AdsStream,
  type Scope,
  type StreamHost,
  typesReport,
  type StreamReport,
  type Writable,
} from "./stream.js";

interface TypeState {
  readonly sub: Subscription;
  readonly ack: TypeAck;
  /** The subscription changed: its resources go again, changed or not (the protocol asks it). */
  dirty: boolean;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(PUSH_ORDER);

/**
 * The most bytes of resources one route response carries: gRPC clients
 * (grpc-js, grpc-go) refuse a message over 4 MiB (grpc.max_receive_message_length)
 * and then take no update at all; a route configuration is at most
 * LIMITS.maxHostBytes, so each part holds at least one.
 */
export const MAX_RESPONSE_BYTES = 3 * 1024 * 1024;

/** `resources` in order, cut into runs of at most `max` bytes (a larger one alone). */
export function partsWithin(resources: readonly XdsResource[], max: number): XdsResource[][] {
  const parts: XdsResource[][] = [];
  let part: XdsResource[] = [];
  let bytes = 0;
  for (const r of resources) {
    const size = r.any.value.byteLength + r.any.type_url.length + 16;
    if (part.length > 0 && bytes + size > max) {
      parts.push(part);
      part = [];
      bytes = 0;
    }
    part.push(r);
    bytes += size;
  }
  if (part.length > 0 || parts.length === 0) parts.push(part);
  return parts;
}

export class SotwStream implements AdsStream, HeldState {
  readonly protocol = "sotw";
  private node: NodeInfo | undefined;
  private readonly types = new Map<string, TypeState>();
  private nonce = 0;
  /** The snapshots of the route configurations the client may hold. */
  private readonly routes = new RouteHolding();
  /** The clusters last sent to a named CDS subscription, by name. */
  private readonly sentClusters = new Map<string, XdsResource>();
  /** The route configuration waits for clusters the client does not hold yet. */
  private routesWaiting = false;
  private bytes = 0;
  private responses = 0;

  constructor(
    readonly peer: string,
    private readonly out: Writable,
    private readonly host: StreamHost,
    readonly mayHoldSecrets = false,
  ) {}

  /** The snapshot served now, as this stream may see it. */
  private current(): XdsSnapshot | undefined {
    const s = this.host.current();
    return s === undefined ? undefined : viewFor(s, this.mayHoldSecrets);
  }

  get id(): string {
    return clip(this.node?.id || this.peer, MAX_CLIENT_ID);
  }

  onRequest(req: DiscoveryRequest): void {
    this.node ??= req.node;
    const url = req.type_url;
    // This server serves the five types a snapshot holds; anything else gets no answer.
    if (!KNOWN_TYPES.has(url)) return;
    let st = this.types.get(url);
    if (st === undefined) {
      st = { sub: new Subscription(url), ack: new TypeAck(), dirty: true };
      this.types.set(url, st);
    }
    const nonce = req.response_nonce;
    let answered = false;
    // A nonce on a stream that never sent this type comes from an earlier stream (a
    // reconnect): it is a first request.
    if (nonce !== "" && st.ack.hasSent()) {
      if (!st.ack.isLatest(nonce)) return;
      const taken = !req.error_detail;
      this.host.observer.answered(url, taken, st.ack.waitedMs(nonce));
      // A part of a response sent in parts answers for the whole (its last part's nonce).
      const whole = st.ack.wholeOf(nonce);
      if (taken) st.ack.ack(nonce);
      else st.ack.reject(nonce, nackWords(url, req.error_detail?.message));
      if (url === TYPE_URL.routeConfiguration && (!taken || whole === nonce))
        this.routes.answered(whole, taken && st.ack.status(st.ack.lastSent()?.digest ?? "").kind === "acked");
      answered = true;
    }
    if (st.sub.replace(req.resource_names, this.host.nameLimit(url, this))) {
      st.dirty = true;
      st.ack.resubscribed();
      if (url === TYPE_URL.routeConfiguration && st.sub.empty()) this.routes.clear();
    }
    this.routes.changed();
    this.followUp(url, st, answered);
    this.host.changed();
  }

  /** What may go now that the client answered or asked anew. */
  private followUp(url: string, st: TypeState, answered: boolean): void {
    const snapshot = this.current();
    if (snapshot === undefined) return;
    if (st.dirty || url === TYPE_URL.listener) return this.push(snapshot);
    if (!answered) return;
    // Routes taken: the clusters they no longer name may go.
    if (url === TYPE_URL.routeConfiguration)
      return this.push(snapshot, [TYPE_URL.cluster, TYPE_URL.clusterLoadAssignment]);
    // Clusters or endpoints taken: routes that waited for them may go.
    if (this.routesWaiting) this.push(snapshot, [TYPE_URL.routeConfiguration]);
  }

  push(whole: XdsSnapshot, only: readonly string[] = PUSH_ORDER): void {
    const snapshot = viewFor(whole, this.mayHoldSecrets);
    for (const url of PUSH_ORDER) {
      const st = this.types.get(url);
      if (st === undefined || !only.includes(url)) continue;
      if (st.sub.empty()) {
        // Unsubscribed entirely: no response (and no nonce the client would not know).
        st.dirty = false;
        continue;
      }
      if (url === TYPE_URL.routeConfiguration) {
        this.routesWaiting = !routesMayGo(snapshot, this);
        if (this.routesWaiting) continue;
      }
      const content = this.content(snapshot, url, st);
      // Unchanged for this client: not sent again; its ACK of the same content still counts.
      if (!st.dirty && st.ack.lastSent()?.digest === content.digest) {
        if (url === TYPE_URL.routeConfiguration) this.routes.rebase(snapshot);
        continue;
      }
      this.send(snapshot, url, st, content);
    }
  }

  subscription(url: string): Names | undefined {
    return this.types.get(url)?.sub;
  }

  holdsType(snapshot: XdsSnapshot, url: string): boolean {
    const st = this.types.get(url);
    return st !== undefined && st.ack.status(this.content(snapshot, url, st).digest).kind === "acked";
  }

  /**
   * subset(), with the clusters the client's routes may still name
   * (make-before-break.ts), and, for a named CDS subscription, the clusters it
   * still names that the snapshot dropped, as last sent: in State of the World
   * a named resource left out of CDS is deleted, and grpc-js-xds 1.14 never
   * notices such a cluster coming back unchanged.
   */
  private content(snapshot: XdsSnapshot, url: string, st: TypeState): Content {
    const own = subset(snapshot, url, st.sub);
    if (url !== TYPE_URL.cluster) return own;
    const retained = this.routes.retained(snapshot, this.types.get(TYPE_URL.listener)?.sub);
    if (retained.size === 0 && (st.sub.wildcard || own.resources.length >= st.sub.names.size)) return own;
    const have = new Set(own.resources.map((r) => r.name));
    const resources = [...own.resources];
    const keep = (name: string, r: XdsResource | undefined) => {
      if (r === undefined || have.has(name) || !st.sub.has(name)) return;
      have.add(name);
      resources.push(r);
    };
    for (const [name, r] of retained) keep(name, r);
    if (!st.sub.wildcard) for (const n of st.sub.names) keep(n, this.sentClusters.get(n));
    return resources.length === own.resources.length ? own : { resources, digest: digestOf(resources) };
  }

  private send(snapshot: XdsSnapshot, url: string, st: TypeState, { resources, digest }: Content): void {
    if (url === TYPE_URL.cluster && !st.sub.wildcard) {
      for (const n of [...this.sentClusters.keys()]) if (!st.sub.names.has(n)) this.sentClusters.delete(n);
      for (const r of resources) this.sentClusters.set(r.name, r);
    }
    // Route configurations past a gRPC client's message limit go in parts: in
    // State of the World a route configuration left out of a response is not
    // deleted (only listeners and clusters must come whole), so each part is a
    // response of its own, and the last one stands for the whole.
    const parts =
      url === TYPE_URL.routeConfiguration ? partsWithin(resources, MAX_RESPONSE_BYTES) : [resources];
    const group = parts.length > 1 ? String(this.nonce + parts.length) : undefined;
    parts.forEach((part, i) => {
      const nonce = String(++this.nonce);
      const last = i === parts.length - 1;
      // The response points at the snapshot's bytes: every client shares them.
      const response = discoveryResponse({
        version_info: snapshot.version,
        resources: part.map((r) => r.any),
        type_url: url,
        nonce,
      });
      st.ack.sent(nonce, snapshot.version, last ? digest : `${digest}/part-${i}`, group);
      if (last && url === TYPE_URL.routeConfiguration) this.routes.sent(nonce, snapshot);
      this.bytes += response.size;
      this.responses++;
      this.host.observer.sent(url, response.size);
      this.out.write(response);
    });
    st.dirty = false;
  }

  status(whole: XdsSnapshot): ClientStatus {
    const snapshot = viewFor(whole, this.mayHoldSecrets);
    const per: ClientStatus[] = [];
    // What the client's listeners lead to must be asked for before it can be held.
    const lds = this.types.get(TYPE_URL.listener);
    if (lds !== undefined)
      for (const [url, needed] of requiredNames(snapshot, lds.sub))
        if (!covers(this.types.get(url)?.sub, needed)) per.push(PENDING);
    for (const [url, st] of this.types) {
      // A type it asks nothing of, it holds.
      if (st.sub.empty()) continue;
      per.push(st.ack.status(this.content(snapshot, url, st).digest));
    }
    return clientStatus(per);
  }

  scope(): Scope {
    return scopeOf(this.types.get(TYPE_URL.listener)?.sub, this.types.get(TYPE_URL.routeConfiguration)?.sub);
  }

  namesHeld(typeUrl: string): number {
    return this.types.get(typeUrl)?.sub.names.size ?? 0;
  }

  report(): StreamReport {
    return {
      id: this.id,
      peer: this.peer,
      protocol: this.protocol,
      mayHoldSecrets: this.mayHoldSecrets,
      responses: this.responses,
      bytes: this.bytes,
      types: typesReport(this.types),
    };
  }
}
