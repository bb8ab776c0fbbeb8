// One Delta (incremental) ADS stream (DeltaAggregatedResources). The client
// subscribes and unsubscribes by name (subscription.ts: `*` for everything,
// and the legacy wildcard of LDS and CDS) and says which versions it already holds;
// each response carries only the resources whose version differs from what the
// client holds, and the names it holds that are gone. Each response's nonce is
// ACKed or NACKed; a NACK leaves the client with what it held, so what we think
// it holds goes back to its last ACK. What goes when is make-before-break.ts's.

import {
  ACKED,
  MAX_CLIENT_ID,
  PENDING,
  TypeAck,
  clip,
  clientStatus,
  type ClientStatus,
} from "./ack-tracker.js";
import { type DeltaDiscoveryRequest, type DeltaResource, type NodeInfo } from "./proto-codec.js";
import { deltaDiscoveryResponse } from "./response-chunks.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { RouteHolding, routesMayGo, subset, type HeldState } from "./make-before-break.js";
import { PUSH_ORDER, covers, requiredNames, type XdsSnapshot } from "./resources.js";
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

type Changes = ReadonlyMap<string, string | null>;

interface DeltaType {
  readonly sub: Subscription;
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

export class DeltaStream implements AdsStream, HeldState {
  readonly protocol = "delta";
  private node: NodeInfo | undefined;
  private readonly types = new Map<string, DeltaType>();
  private nonce = 0;
  /** The snapshots of the route configurations the client may hold. */
  private readonly routes = new RouteHolding();
  /** The route configurations wait for clusters the client does not hold yet. */
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

  onRequest(req: DeltaDiscoveryRequest): void {
    this.node ??= req.node;
    const url = req.type_url;
    if (!KNOWN_TYPES.has(url)) return;
    let st = this.types.get(url);
    let changed = false;
    if (st === undefined) {
      const initial = new Map(Object.entries(req.initial_resource_versions));
      st = {
        sub: new Subscription(url),
        acked: new Map(initial),
        held: initial,
        pending: new Map(),
        ack: new TypeAck(),
      };
      this.types.set(url, st);
      changed = true;
    }
    const nonce = req.response_nonce;
    let answered = false;
    if (nonce !== "" && st.pending.has(nonce)) {
      const taken = !req.error_detail;
      if (taken) st.ack.ack(nonce);
      else st.ack.reject(nonce, nackWords(url, req.error_detail?.message));
      this.settle(st, nonce, taken);
      if (url === TYPE_URL.routeConfiguration) this.routes.answered(nonce, taken);
      answered = true;
    }
    const update = st.sub.update(
      req.resource_names_subscribe,
      req.resource_names_unsubscribe,
      this.host.nameLimit(url, this),
    );
    for (const n of update.dropped) {
      st.acked.delete(n);
      st.held.delete(n);
    }
    if (url === TYPE_URL.routeConfiguration && st.sub.empty()) this.routes.clear();
    this.routes.changed();
    const snapshot = this.current();
    if (snapshot !== undefined) {
      if (changed || update.changed) this.push(snapshot);
      else if (answered && url === TYPE_URL.routeConfiguration)
        // Routes taken: the clusters they no longer name may go.
        this.push(snapshot, [TYPE_URL.cluster, TYPE_URL.clusterLoadAssignment]);
      // Clusters or endpoints taken: routes that waited for them may go.
      else if (answered && this.routesWaiting) this.push(snapshot, [TYPE_URL.routeConfiguration]);
    }
    this.host.changed();
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

  push(whole: XdsSnapshot, only: readonly string[] = PUSH_ORDER): void {
    const snapshot = viewFor(whole, this.mayHoldSecrets);
    for (const url of PUSH_ORDER) {
      const st = this.types.get(url);
      if (st === undefined || !only.includes(url)) continue;
      if (url === TYPE_URL.routeConfiguration) {
        this.routesWaiting = !routesMayGo(snapshot, this);
        if (this.routesWaiting) continue;
      }
      this.send(url, st, snapshot);
    }
  }

  subscription(url: string): Names | undefined {
    return this.types.get(url)?.sub;
  }

  holdsType(snapshot: XdsSnapshot, url: string): boolean {
    const st = this.types.get(url);
    return st !== undefined && this.typeStatus(snapshot, url, st).kind === "acked";
  }

  /** Whether the client holds `name` and should be told it is gone: not while its routes may name it. */
  private removable(snapshot: XdsSnapshot, url: string, name: string): boolean {
    if (url !== TYPE_URL.cluster && url !== TYPE_URL.clusterLoadAssignment) return true;
    return !this.routes.retained(snapshot, this.types.get(TYPE_URL.listener)?.sub).has(name);
  }

  private send(url: string, st: DeltaType, snapshot: XdsSnapshot): void {
    const changes = new Map<string, string | null>();
    const resources: DeltaResource[] = [];
    const content = subset(snapshot, url, st.sub);
    const names = new Set<string>();
    for (const r of content.resources) {
      names.add(r.name);
      if (st.held.get(r.name) === r.version) continue;
      changes.set(r.name, r.version);
      resources.push({ name: r.name, version: r.version, resource: r.any });
    }
    const removed: string[] = [];
    for (const name of st.held.keys())
      if (!names.has(name) && st.sub.has(name) && this.removable(snapshot, url, name)) {
        removed.push(name);
        changes.set(name, null);
      }
    if (changes.size === 0) {
      // The client's routes are this snapshot's as they are: no older one is kept for it.
      if (url === TYPE_URL.routeConfiguration && st.pending.size === 0) this.routes.rebase(snapshot);
      return;
    }
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
    st.ack.sent(nonce, snapshot.version, content.digest);
    if (url === TYPE_URL.routeConfiguration) this.routes.sent(nonce, snapshot);
    this.bytes += response.size;
    this.responses++;
    this.out.write(response);
  }

  status(whole: XdsSnapshot): ClientStatus {
    const snapshot = viewFor(whole, this.mayHoldSecrets);
    const per: ClientStatus[] = [];
    const lds = this.subscription(TYPE_URL.listener);
    if (lds !== undefined)
      for (const [url, needed] of requiredNames(snapshot, lds))
        if (!covers(this.subscription(url), needed)) per.push(PENDING);
    for (const [url, st] of this.types) per.push(this.typeStatus(snapshot, url, st));
    return clientStatus(per);
  }

  /** Held: every resource it gets at the version it gets, and nothing it is told is gone. */
  private typeStatus(snapshot: XdsSnapshot, url: string, st: DeltaType): ClientStatus {
    const content = subset(snapshot, url, st.sub);
    const names = new Set(content.resources.map((r) => r.name));
    let holds = content.resources.every((r) => st.acked.get(r.name) === r.version);
    if (holds)
      for (const name of st.acked.keys())
        if (!names.has(name) && st.sub.has(name) && this.removable(snapshot, url, name)) holds = false;
    if (holds) return ACKED;
    const s = st.ack.status(content.digest);
    return s.kind === "rejected" ? s : PENDING;
  }

  scope(): Scope {
    return scopeOf(this.subscription(TYPE_URL.listener), this.subscription(TYPE_URL.routeConfiguration));
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
