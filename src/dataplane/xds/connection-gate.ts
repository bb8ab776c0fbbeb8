// Who may hold a connection to the ADS port, and for how long, decided before
// gRPC sees the socket: the port accepts TCP itself and hands each admitted
// socket to gRPC (grpc-js's connection injector), because grpc-js sets no
// limit of its own on connections. Each open connection costs the server
// memory (a TLS session, an HTTP/2 session and its buffers), so:
//  - one peer address holds at most `perPeer` connections (a proxy needs one;
//    many pods behind one node address or NAT need more), and all peers
//    together `total`: a flood from one address cannot take the others' share;
//  - a connection without an open ADS stream for `idleMs` is closed: a
//    handshake never finished, or a client that connected and asked for
//    nothing (Envoy and gRPC's xDS client open their stream at once, and a
//    client closed while it backs off between streams just connects again).
// A socket turned away is closed at once, before any TLS work. Dead clients
// with a stream open are found by the server's keepalive pings (ads-server.ts).
// How a connection ended tells a client that left from one that went silent:
// a peer that exits or closes sends a FIN, or, leaving gracefully, a GOAWAY
// after which the server closes first; a partitioned or frozen one sends
// nothing, and it is the server's keepalive that closes the socket after
// `silentAfterMs` without an answer. So a socket that closes with no FIN is
// silent only if its peer sent no byte for half that long before (bytesRead,
// sampled: it counts the bytes HTTP/2 reads natively too). Only a plaintext
// socket is judged: on a TLS one the TLS layer takes over the socket's reads.

import type { Socket } from "node:net";

export interface ConnectionLimits {
  /** Connections one remote address may hold at once. */
  readonly perPeer: number;
  /** Connections all peers may hold at once. */
  readonly total: number;
  /** A connection with no ADS stream open for this long is closed. */
  readonly idleMs: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  perPeer: 64,
  total: 2_048,
  idleMs: 15_000,
};

export type Refusal = "per-peer" | "total";

/** How a connection ended: the peer said so (FIN), it went silent, it is still open, or nobody can tell (TLS). */
export type ConnectionEnd = "fin" | "silent" | "open" | "unknown";

interface Held {
  readonly socket: Socket;
  streams: number;
  idle: ReturnType<typeof setTimeout> | undefined;
  /** Whether this socket's FIN can be seen (plaintext), and whether it came. */
  readonly seesFin: boolean;
  fin: boolean;
  closed: boolean;
  /** The peer's bytes as last sampled, and when that count last changed. */
  bytes: number;
  bytesAt: number;
  /** How it ended, decided at its close. */
  end: ConnectionEnd;
  readonly onClose: (() => void)[];
}

/** After a stream's close, how long its connection may take to close too before it counts as still open. */
const CLOSE_WAIT_MS = 2_000;

/** `call.getPeer()`'s form (grpc-js: remoteAddress:remotePort), so a stream finds its connection. */
function peerKey(socket: Socket): string {
  return `${socket.remoteAddress ?? ""}:${socket.remotePort ?? ""}`;
}

export class ConnectionGate {
  private readonly byAddress = new Map<string, number>();
  private readonly connections = new Map<string, Held>();
  private readonly recentlyEnded = new Map<string, ConnectionEnd>();

  private sampler: ReturnType<typeof setInterval> | undefined;
  private readonly silentAfterMs: number;

  constructor(
    readonly limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS,
    /** The server's keepalive timeout: how long a silent peer goes unanswered before its close. */
    opts: { readonly silentAfterMs?: number } = {},
  ) {
    this.silentAfterMs = opts.silentAfterMs ?? 10_000;
  }

  /** Takes the socket in (counted until it closes), or says why not and closes it. */
  admit(socket: Socket, opts: { readonly seesFin?: boolean } = {}): Refusal | undefined {
    const address = socket.remoteAddress ?? "";
    const held = this.byAddress.get(address) ?? 0;
    const refusal: Refusal | undefined =
      held >= this.limits.perPeer
        ? "per-peer"
        : this.connections.size >= this.limits.total
          ? "total"
          : undefined;
    if (refusal) {
      socket.destroy();
      return refusal;
    }
    const key = peerKey(socket);
    const entry: Held = {
      socket,
      streams: 0,
      idle: undefined,
      seesFin: opts.seesFin === true,
      fin: false,
      closed: false,
      bytes: socket.bytesRead,
      bytesAt: Date.now(),
      end: "open",
      onClose: [],
    };
    this.byAddress.set(address, held + 1);
    this.connections.set(key, entry);
    this.idleFrom(entry);
    // A reset is the peer's doing too: its process or its kernel answered.
    if (entry.seesFin) {
      socket.once("end", () => (entry.fin = true));
      socket.on("error", (err: NodeJS.ErrnoException) => {
        if (err.code === "ECONNRESET" || err.code === "EPIPE") entry.fin = true;
      });
    }
    if (entry.seesFin) this.sampleBytes();
    socket.once("close", () => {
      entry.closed = true;
      entry.end = this.judge(entry);
      for (const f of entry.onClose.splice(0)) f();
      clearTimeout(entry.idle);
      this.connections.delete(key);
      // A stream's close may come after its socket's: its verdict stays a moment.
      this.recentlyEnded.set(key, entry.end);
      setTimeout(() => this.recentlyEnded.delete(key), CLOSE_WAIT_MS).unref();
      const left = (this.byAddress.get(address) ?? 1) - 1;
      if (left <= 0) this.byAddress.delete(address);
      else this.byAddress.set(address, left);
    });
    return undefined;
  }

  /** A stream opened on the connection of `peer` (call.getPeer()); answers its close. */
  streamOpened(peer: string): () => void {
    const entry = this.connections.get(peer);
    if (entry === undefined) return () => undefined;
    entry.streams++;
    clearTimeout(entry.idle);
    entry.idle = undefined;
    let closed = false;
    return () => {
      if (closed) return;
      closed = true;
      entry.streams--;
      if (entry.streams === 0) this.idleFrom(entry);
    };
  }

  /**
   * How the connection of `peer` ended, once a stream on it closed: waits (up
   * to CLOSE_WAIT_MS) for the socket to close, since a stream's close and its
   * socket's come in either order.
   */
  ending(peer: string): Promise<ConnectionEnd> {
    const entry = this.connections.get(peer);
    if (entry === undefined) return Promise.resolve(this.recentlyEnded.get(peer) ?? "unknown");
    const verdict = (): ConnectionEnd => entry.end;
    if (entry.closed) return Promise.resolve(verdict());
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve("open"), CLOSE_WAIT_MS);
      timer.unref();
      entry.onClose.push(() => {
        clearTimeout(timer);
        resolve(verdict());
      });
    });
  }

  /** Connections held now: all of them, or those of one remote address. */
  held(address?: string): number {
    return address === undefined ? this.connections.size : (this.byAddress.get(address) ?? 0);
  }

  /** At its close: the peer's FIN or reset, its last bytes recent (a GOAWAY, then our close), or silence. */
  private judge(entry: Held): ConnectionEnd {
    if (!entry.seesFin) return "unknown";
    if (entry.fin || entry.socket.bytesRead !== entry.bytes) return "fin";
    return Date.now() - entry.bytesAt < this.silentAfterMs / 2 ? "fin" : "silent";
  }

  /** One timer for every plaintext connection, running while there are any. */
  private sampleBytes(): void {
    if (this.sampler !== undefined) return;
    const everyMs = Math.min(1_000, Math.max(50, Math.floor(this.silentAfterMs / 3)));
    this.sampler = setInterval(() => {
      const now = Date.now();
      let any = false;
      for (const e of this.connections.values()) {
        if (!e.seesFin) continue;
        any = true;
        const read = e.socket.bytesRead;
        if (read !== e.bytes) {
          e.bytes = read;
          e.bytesAt = now;
        }
      }
      if (!any) {
        clearInterval(this.sampler);
        this.sampler = undefined;
      }
    }, everyMs);
    this.sampler.unref();
  }

  private idleFrom(entry: Held): void {
    entry.idle = setTimeout(() => entry.socket.destroy(), this.limits.idleMs);
    entry.idle.unref();
  }
}
