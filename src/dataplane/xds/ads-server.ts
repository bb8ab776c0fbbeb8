// The ADS server: envoy.service.discovery.v3.AggregatedDiscoveryService over
// gRPC, both variants (State of the World and Delta) on one port. It holds one
// snapshot, pushes each new one to every stream, and answers what the
// connected clients add up to (combine(), in ack-tracker.ts). Messages are
// (de)serialized with Envoy's descriptor directly; no .proto files at run time.

import { createServer as createTcpServer, type Server as TcpServer } from "node:net";
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "../../observability/logger.js";
import { PENDING, combine, type AckVerdict } from "./ack-tracker.js";
import { ReloadableServerCredentials, type AdsTls } from "./ads-tls.js";
import { ConnectionGate, type ConnectionLimits } from "./connection-gate.js";
import { DeltaStream } from "./delta-stream.js";
import {
  ADS_SERVICE,
  decodeDeltaDiscoveryRequest,
  decodeDiscoveryRequest,
  type DeltaDiscoveryRequest,
  type DiscoveryRequest,
  type NodeInfo,
} from "./proto-codec.js";
import { boundNodeId, certName } from "./node-identity.js";
import { SPARE_NAMES, namesWorthAsking, type XdsSnapshot } from "./resources.js";
import { scratchJoiner, type ResponseChunks } from "./response-chunks.js";
import { SotwStream } from "./sotw-stream.js";
import { TooManyNames } from "./subscription.js";
import { WriteBudget, type PacedWriter } from "./write-budget.js";
import type { AdsStream, StreamHost, StreamReport } from "./stream.js";
import { scopeHasRoutes, type ClientView } from "./route-standing.js";

// One for both methods: the scratch buffer is as large as the largest response.
const serializeResponse = scratchJoiner();

function method<Req>(
  name: string,
  deserialize: (b: Buffer) => Req,
): grpc.MethodDefinition<Req, ResponseChunks> {
  return {
    path: `/${ADS_SERVICE}/${name}`,
    requestStream: true,
    responseStream: true,
    requestSerialize: () => {
      throw new Error("the ADS server does not send requests");
    },
    requestDeserialize: deserialize,
    // A response's bytes are joined only when gRPC writes it: a queued response holds the shared body.
    responseSerialize: serializeResponse,
    responseDeserialize: () => {
      throw new Error("the ADS server does not read responses");
    },
  };
}

const SERVICE = {
  StreamAggregatedResources: method<DiscoveryRequest>("StreamAggregatedResources", decodeDiscoveryRequest),
  DeltaAggregatedResources: method<DeltaDiscoveryRequest>(
    "DeltaAggregatedResources",
    decodeDeltaDiscoveryRequest,
  ),
} satisfies grpc.ServiceDefinition;

export interface AdsServerOptions {
  /** TLS with the operator's serving certificate; absent = plaintext (gRPC's xDS client cannot use a private CA). */
  readonly tls?: AdsTls;
  readonly log?: Logger;
  /** Connections per peer address and in all, and how long one may go without a stream (connection-gate.ts). */
  readonly connections?: ConnectionLimits;
  /** How long a client that went silent is still counted as holding what it held (default 10 min). */
  readonly forgetUnreachableAfterMs?: number;
  /** HTTP/2 keepalive: a ping every `timeMs`, the connection closed when one goes `timeoutMs` unanswered. */
  readonly keepalive?: { readonly timeMs: number; readonly timeoutMs: number };
}

export const DEFAULT_FORGET_UNREACHABLE_AFTER_MS = 10 * 60_000;
/** Silent clients remembered at most; past it the longest silent is forgotten first. */
export const MAX_UNREACHABLE = 1_024;

/**
 * Streams one connection may open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS).
 * A proxy opens one, but grpc-js shares one connection among the channels of a
 * process to the same server: the scale test's ten clients in one process are
 * ten streams on one connection.
 */
export const MAX_STREAMS_PER_CONNECTION = 32;

/** The address part of `call.getPeer()` (ADDRESS:PORT, also for IPv6). */
function addressOf(peer: string): string {
  const colon = peer.lastIndexOf(":");
  return colon < 0 ? peer : peer.slice(0, colon);
}

/** gRPC's HTTP/2 keepalive on the ADS port: a ping every 30 s, 10 s for its answer. */
const DEFAULT_KEEPALIVE = { timeMs: 30_000, timeoutMs: 10_000 } as const;

export class AdsServer implements StreamHost {
  private server: grpc.Server | undefined;
  private readonly ports: TcpServer[] = [];
  private readonly gate: ConnectionGate;
  /** Refusals since the last warning, logged at most once a second. */
  private refused = 0;
  private refusedLogged = 0;
  private snapshot: XdsSnapshot | undefined;
  private readonly streams = new Set<AdsStream>();
  /**
   * Clients whose connection went silent (no FIN: a partition, a frozen or
   * lost node) with the stream they had: they may still serve what they held,
   * so they count, as not answering, until one with the same node id is back
   * or they are forgotten.
   */
  private readonly unreachable = new Map<
    AdsStream,
    { readonly since: number; readonly timer: NodeJS.Timeout }
  >();
  private readonly watchers = new Set<() => void>();
  /** Per type, the most names any snapshot served gave a client a reason to ask for. */
  private readonly mostNames = new Map<string, number>();
  private credentials: ReloadableServerCredentials | undefined;
  /** Shared by every stream: the response bytes being written at once stay bounded. */
  private readonly budget = new WriteBudget();

  constructor(private readonly opts: AdsServerOptions = {}) {
    this.gate = new ConnectionGate(opts.connections, { silentAfterMs: this.keepalive().timeoutMs });
  }

  /**
   * Binds HOST:PORT (port 0: any free one) and answers the bound port: with
   * TLS when the server has it, unless `plaintext` (a second port for gRPC's
   * own xDS clients, beside Envoy's TLS one). One server, one set of streams.
   */
  async listen(host: string, port: number, plaintext = false): Promise<number> {
    const server = this.server ?? this.create();
    const tls = plaintext ? undefined : this.opts.tls;
    const credentials = tls
      ? (this.credentials ??= new ReloadableServerCredentials(tls))
      : grpc.ServerCredentials.createInsecure();
    // The port is ours, gRPC gets the sockets the gate admits (connection-gate.ts).
    const injector = server.createConnectionInjector(credentials);
    const tcp = createTcpServer({ noDelay: true }, (socket) => {
      const refusal = this.gate.admit(socket, { seesFin: tls === undefined });
      if (refusal) this.noteRefusal(refusal, socket.remoteAddress);
      else injector.injectConnection(socket);
    });
    const bound = await new Promise<number>((resolve, reject) => {
      tcp.once("error", reject);
      tcp.listen(port, host, () => {
        tcp.off("error", reject);
        resolve((tcp.address() as { port: number }).port);
      });
    });
    tcp.on("error", (err) => this.opts.log?.error({ err }, "ADS port failed"));
    this.ports.push(tcp);
    this.server = server;
    return bound;
  }

  private noteRefusal(refusal: string, address: string | undefined): void {
    this.refused++;
    const now = Date.now();
    if (now - this.refusedLogged < 1_000) return;
    this.opts.log?.warn(
      { refused: this.refused, last: { address, limit: refusal }, limits: this.gate.limits },
      "ADS connections refused: over the connection limits",
    );
    this.refused = 0;
    this.refusedLogged = now;
  }

  /** The renewed serving certificate (and client CA), for new handshakes on the TLS port (open streams keep theirs). */
  reloadTls(
    pair: { readonly cert: Buffer | string; readonly key: Buffer | string },
    clientCa?: Buffer | string,
  ): void {
    this.credentials?.reload(pair, clientCa);
  }

  private create(): grpc.Server {
    const server = new grpc.Server({
      // Dead clients are found and their streams closed, so they stop counting.
      "grpc.keepalive_time_ms": this.keepalive().timeMs,
      "grpc.keepalive_timeout_ms": this.keepalive().timeoutMs,
      "grpc.keepalive_permit_without_calls": 1,
      "grpc.http2.min_ping_interval_without_data_ms": 10_000,
      "grpc.max_receive_message_length": 4 * 1024 * 1024,
      "grpc.max_concurrent_streams": MAX_STREAMS_PER_CONNECTION,
    });
    server.addService(SERVICE, {
      StreamAggregatedResources: (call: grpc.ServerDuplexStream<DiscoveryRequest, ResponseChunks>) => {
        const out = this.budget.writer(call);
        const name = this.clientName(call);
        const stream = new SotwStream(call.getPeer(), out, this, name !== undefined);
        this.attach(call, stream, out, name, (req: DiscoveryRequest) => stream.onRequest(req));
      },
      DeltaAggregatedResources: (call: grpc.ServerDuplexStream<DeltaDiscoveryRequest, ResponseChunks>) => {
        const out = this.budget.writer(call);
        const name = this.clientName(call);
        const stream = new DeltaStream(call.getPeer(), out, this, name !== undefined);
        this.attach(call, stream, out, name, (req: DeltaDiscoveryRequest) => stream.onRequest(req));
      },
    });
    return server;
  }

  /**
   * The name of the client certificate the stream's connection was verified
   * with: only with mutual TLS on (a client CA), and only on the TLS port
   * (the plaintext port has no peer certificate). A stream with one is
   * authenticated: it may be sent Secrets (resources.ts); every other stream
   * is served as if no Secret existed.
   */
  private clientName(call: grpc.ServerDuplexStream<unknown, ResponseChunks>): string | undefined {
    if (this.opts.tls?.clientCa === undefined) return undefined;
    return certName(call.getAuthContext().sslPeerCertificate);
  }

  private attach<Req extends { readonly node?: NodeInfo }>(
    call: grpc.ServerDuplexStream<Req, ResponseChunks>,
    stream: AdsStream,
    out: PacedWriter,
    // Mutual TLS: the node id is bound to the client's certificate (node-identity.ts).
    name: string | undefined,
    onRequest: (req: Req) => void,
  ): void {
    this.streams.add(stream);
    const streamClosed = this.gate.streamOpened(call.getPeer());
    let open = true;
    // `byServer`: the server ended it (too many names, a failed request): the client heard why.
    const close = (byServer = false) => {
      if (!open) return;
      open = false;
      streamClosed();
      out.close();
      this.streams.delete(stream);
      this.opts.log?.info({ client: stream.id, protocol: stream.protocol }, "xDS client disconnected");
      this.changed();
      if (!byServer) void this.noteEnding(stream);
    };
    call.on("data", (req: Req) => {
      try {
        const node = req.node;
        onRequest(name && node ? { ...req, node: { ...node, id: boundNodeId(name, node.id ?? "") } } : req);
      } catch (err) {
        if (err instanceof TooManyNames) {
          // The client's own doing: it hears why, in gRPC's words for it, and the stream ends.
          this.opts.log?.warn({ client: stream.id, reason: err.message }, "xDS stream ended: too many names");
          call.emit("error", { code: grpc.status.RESOURCE_EXHAUSTED, details: err.message });
          close(true);
          return;
        }
        this.opts.log?.error({ err, client: stream.id }, "xDS request failed");
        close(true);
        call.destroy(err instanceof Error ? err : new Error(String(err)));
      }
    });
    call.on("end", () => {
      call.end();
      close();
    });
    call.on("error", () => close());
    call.on("close", () => close());
    call.on("cancelled", () => close());
    this.opts.log?.info({ peer: call.getPeer(), protocol: stream.protocol }, "xDS client connected");
  }

  private keepalive(): { readonly timeMs: number; readonly timeoutMs: number } {
    return this.opts.keepalive ?? DEFAULT_KEEPALIVE;
  }

  /** A closed stream whose connection went silent is remembered (a stream that asked for no route is not). */
  private async noteEnding(stream: AdsStream): Promise<void> {
    const end = await this.gate.ending(stream.peer);
    if (end !== "silent" || this.server === undefined || !scopeHasRoutes(stream.scope())) return;
    if (this.unreachable.size >= MAX_UNREACHABLE) {
      const [oldest] = this.unreachable.keys();
      if (oldest) this.forget(oldest);
    }
    const ttl = this.opts.forgetUnreachableAfterMs ?? DEFAULT_FORGET_UNREACHABLE_AFTER_MS;
    const timer = setTimeout(() => {
      this.opts.log?.warn(
        { client: stream.id, afterMs: ttl },
        "xDS client forgotten: unreachable for too long",
      );
      this.forget(stream);
    }, ttl);
    timer.unref();
    this.unreachable.set(stream, { since: Date.now(), timer });
    this.opts.log?.warn(
      { client: stream.id, peer: stream.peer },
      "xDS client unreachable: its connection went silent (no FIN); it counts as holding what it held",
    );
    this.changed();
  }

  private forget(stream: AdsStream): void {
    const entry = this.unreachable.get(stream);
    if (!entry) return;
    clearTimeout(entry.timer);
    this.unreachable.delete(stream);
    this.changed();
  }

  current(): XdsSnapshot | undefined {
    return this.snapshot;
  }

  /**
   * Every resource and host of the largest snapshot this server has served, and
   * SPARE_NAMES more: a client that still asks for what a larger snapshot had
   * keeps its stream; one that asks for a million names does not. All the
   * streams from one address share that many (nameLimit), so that opening
   * more streams buys no more names (an unknown name costs about 3 KiB).
   */
  addressNameLimit(typeUrl: string): number {
    return SPARE_NAMES + (this.mostNames.get(typeUrl) ?? 0);
  }

  nameLimit(typeUrl: string, stream: AdsStream): number {
    const limit = this.addressNameLimit(typeUrl);
    const address = addressOf(stream.peer);
    let others = 0;
    for (const s of this.streams)
      if (s !== stream && addressOf(s.peer) === address) others += s.namesHeld(typeUrl);
    return Math.max(0, limit - others);
  }

  /** Serves this snapshot from now on: every stream gets what changed for it. */
  serve(snapshot: XdsSnapshot): void {
    this.snapshot = snapshot;
    for (const url of snapshot.types.keys())
      this.mostNames.set(url, Math.max(this.mostNames.get(url) ?? 0, namesWorthAsking(snapshot, url)));
    for (const s of this.streams) s.push(snapshot);
    this.changed();
  }

  changed(): void {
    for (const w of [...this.watchers]) w();
  }

  /** What the connected clients that take routes add up to for the snapshot served now. */
  verdict(): AckVerdict {
    if (this.snapshot === undefined) return { kind: "none" };
    return combine(this.statuses().filter((c) => scopeHasRoutes(c.scope)));
  }

  /**
   * Where each client stands on the snapshot served now (all pending before
   * the first): the connected ones, and the unreachable ones no connected
   * stream of the same node id has replaced.
   */
  statuses(): ClientView[] {
    const snapshot = this.snapshot;
    const view = (s: AdsStream): ClientView => ({
      id: s.id,
      status: snapshot ? s.status(snapshot) : PENDING,
      scope: s.scope(),
      servesTls: s.mayHoldSecrets,
    });
    const live = [...this.streams].map(view);
    if (this.unreachable.size === 0) return live;
    const connected = new Set(live.map((c) => c.id));
    const silent: ClientView[] = [];
    for (const [s, { since }] of [...this.unreachable]) {
      if (connected.has(s.id)) this.forget(s);
      else silent.push({ ...view(s), unreachableSince: since });
    }
    return [...live, ...silent];
  }

  /** Called after each ACK, NACK, subscription, connect, disconnect and serve. */
  watch(listener: () => void): () => void {
    this.watchers.add(listener);
    return () => this.watchers.delete(listener);
  }

  /** The verdict once it is no longer pending, or the pending one after `timeoutMs`. */
  settled(timeoutMs: number): Promise<AckVerdict> {
    return new Promise((resolve) => {
      const check = () => {
        const v = this.verdict();
        if (v.kind === "pending") return false;
        done(v);
        return true;
      };
      const done = (v: AckVerdict) => {
        clearTimeout(timer);
        this.watchers.delete(watch);
        resolve(v);
      };
      const watch = () => void check();
      const timer = setTimeout(() => done(this.verdict()), timeoutMs);
      this.watchers.add(watch);
      check();
    });
  }

  clients(): StreamReport[] {
    return [...this.streams].map((s) => s.report()).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /** Stops at once: every stream ends, and its client reconnects (to this server's successor). */
  stop(): void {
    for (const tcp of this.ports.splice(0)) tcp.close();
    // forceShutdown closes every stream: none of them is the client's doing (noteEnding sees no server).
    const server = this.server;
    this.server = undefined;
    for (const { timer } of this.unreachable.values()) clearTimeout(timer);
    this.unreachable.clear();
    server?.forceShutdown();
    this.streams.clear();
    this.changed();
  }
}
