// One Delta (incremental) ADS stream (DeltaAggregatedResources). The client
// subscribes and unsubscribes by name (`*` for everything; LDS and CDS with no
// name at first are wildcard too) and says which versions it already holds;
// each response carries only the resources whose version differs from what the
// client holds, and the names it holds that are gone. Each response's nonce is
// ACKed or NACKed; a NACK leaves the client with what it held, so what we think
// it holds goes back to its last ACK.

import { ACKED, PENDING, TypeAck, clientStatus, type ClientStatus } from "./ack-tracker.js";
import { type DeltaDiscoveryRequest, type DeltaResource, type NodeInfo } from "./proto-codec.js";
import { deltaDiscoveryResponse } from "./response-chunks.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import {
  PUSH_ORDER,
  covers,
  isWildcardType,
  requiredNames,
  type XdsResource,
  type XdsSnapshot,
} from "./resources.js";
import { subset } from "./sotw-stream.js";
import type { AdsStream, StreamHost, StreamReport, Writable } from "./stream.js";

type Changes = ReadonlyMap<string, string | null>;

interface DeltaType {
  wildcard: boolean;
  readonly names: Set<string>;
  /** Versions the client holds as far as its ACKs tell. */
  readonly acked: Map<string, string>;
  /** acked, plus the responses not yet answered: what the next diff is taken against. */
  held: Map<string, string>;
  /** Per unanswered nonce, what it changed (null: removed), in the order sent. */
  readonly pending: Map<string, Changes>;
  readonly ack: TypeAck;
}

const KNOWN_TYPES: ReadonlySet<string> = new Set(PUSH_ORDER);

function apply(into: Map<string, string>, changes: Changes): void {
  for (const [name, version] of changes) {
    if (version === null) into.delete(name);
    else into.set(name, version);
  }
}

export class DeltaStream implements AdsStream {
  readonly protocol = "delta";
  private node: NodeInfo | undefined;
  private readonly types = new Map<string, DeltaType>();
  private nonce = 0;
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

  onRequest(req: DeltaDiscoveryRequest): void {
    this.node ??= req.node;
    const url = req.type_url;
    if (!KNOWN_TYPES.has(url)) return;
    let st = this.types.get(url);
    let changed = false;
    if (st === undefined) {
      const initial = new Map(Object.entries(req.initial_resource_versions));
      st = {
        wildcard: isWildcardType(url) && req.resource_names_subscribe.length === 0,
        names: new Set(),
        acked: new Map(initial),
        held: initial,
        pending: new Map(),
        ack: new TypeAck(),
      };
      this.types.set(url, st);
      changed = true;
    }
    const nonce = req.response_nonce;
    if (nonce !== "" && st.pending.has(nonce)) {
      if (req.error_detail) {
        st.ack.reject(nonce, req.error_detail.message ?? "");
        this.settle(st, nonce, false);
      } else {
        st.ack.ack(nonce);
        this.settle(st, nonce, true);
      }
      this.host.changed();
    }
    for (const n of req.resource_names_subscribe) {
      if (n === "*") st.wildcard = true;
      else st.names.add(n);
      changed = true;
    }
    for (const n of req.resource_names_unsubscribe) {
      if (n === "*") st.wildcard = false;
      else {
        st.names.delete(n);
        st.acked.delete(n);
        st.held.delete(n);
      }
      changed = true;
    }
    if (changed) {
      this.send(url, st);
      this.host.changed();
    }
  }

  /** The response `nonce` was answered: its changes join what the client holds, or are dropped. */
  private settle(st: DeltaType, nonce: string, taken: boolean): void {
    // Responses are answered in order: those before this one were taken with it.
    for (const [n, changes] of st.pending) {
      st.pending.delete(n);
      if (n === nonce) {
        if (taken) apply(st.acked, changes);
        break;
      }
      apply(st.acked, changes);
    }
    if (!taken) {
      st.held = new Map(st.acked);
      for (const changes of st.pending.values()) apply(st.held, changes);
    }
  }

  private subscribed(st: DeltaType, name: string): boolean {
    return st.wildcard || st.names.has(name);
  }

  push(snapshot: XdsSnapshot): void {
    for (const url of PUSH_ORDER) {
      const st = this.types.get(url);
      if (st !== undefined) this.send(url, st, snapshot);
    }
  }

  private send(url: string, st: DeltaType, snapshot = this.host.current()): void {
    if (snapshot === undefined) return;
    const changes = new Map<string, string | null>();
    const resources: DeltaResource[] = [];
    const { wanted, names } = this.wanted(snapshot, url, st);
    for (const r of wanted) {
      if (st.held.get(r.name) === r.version) continue;
      changes.set(r.name, r.version);
      resources.push({ name: r.name, version: r.version, resource: r.any });
    }
    const removed: string[] = [];
    for (const name of st.held.keys())
      if (!names.has(name) && this.subscribed(st, name)) {
        removed.push(name);
        changes.set(name, null);
      }
    if (changes.size === 0) return;
    const nonce = String(++this.nonce);
    const response = deltaDiscoveryResponse({
      system_version_info: snapshot.version,
      resources,
      type_url: url,
      removed_resources: removed,
      nonce,
    });
    apply(st.held, changes);
    st.pending.set(nonce, changes);
    st.ack.sent(nonce, snapshot.version, this.wantedDigest(snapshot, url, st));
    this.bytes += response.size;
    this.responses++;
    this.out.write(response);
  }

  private wantedDigest(snapshot: XdsSnapshot, url: string, st: DeltaType): string {
    return subset(snapshot, url, st.wildcard ? "*" : st.names).digest;
  }

  /** What the subscription gets: the same as State of the World's subset(). */
  private wanted(
    snapshot: XdsSnapshot,
    url: string,
    st: DeltaType,
  ): { readonly wanted: readonly XdsResource[]; readonly names: ReadonlySet<string> } {
    const wanted = subset(snapshot, url, st.wildcard ? "*" : st.names).resources;
    return { wanted, names: new Set(wanted.map((r) => r.name)) };
  }

  private subscription(url: string): ReadonlySet<string> | "*" | undefined {
    const st = this.types.get(url);
    return st === undefined ? undefined : st.wildcard ? "*" : st.names;
  }

  status(snapshot: XdsSnapshot): ClientStatus {
    if (this.types.size === 0) return ACKED;
    const per: ClientStatus[] = [];
    const lds = this.subscription(TYPE_URL.listener);
    if (lds !== undefined)
      for (const [url, needed] of requiredNames(snapshot, lds))
        if (!covers(this.subscription(url), needed)) per.push(PENDING);
    for (const [url, st] of this.types) {
      const { wanted, names } = this.wanted(snapshot, url, st);
      let holds = wanted.every((r) => st.acked.get(r.name) === r.version);
      if (holds)
        for (const name of st.acked.keys()) if (!names.has(name) && this.subscribed(st, name)) holds = false;
      if (holds) per.push(ACKED);
      else {
        const s = st.ack.status(this.wantedDigest(snapshot, url, st));
        per.push(s.kind === "rejected" ? s : PENDING);
      }
    }
    return clientStatus(per);
  }

  report(): StreamReport {
    const types: StreamReport["types"] = {};
    for (const [url, st] of this.types) {
      const nack = st.ack.lastNack();
      types[url] = {
        names: st.wildcard ? "*" : [...st.names].sort(),
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
