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
// a peer that exits or closes sends a FIN; a partitioned or frozen one sends
// nothing, and it is the server's keepalive that closes the socket. Only a
// plaintext socket shows its FIN here: on a TLS one the TLS layer takes over
// the socket's reads, and its own end event is not ours to see.

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

  constructor(readonly limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS) {}

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
    socket.once("close", () => {
      entry.closed = true;
      for (const f of entry.onClose.splice(0)) f();
      clearTimeout(entry.idle);
      this.connections.delete(key);
      // A stream's close may come after its socket's: its verdict stays a moment.
      const end: ConnectionEnd = !entry.seesFin ? "unknown" : entry.fin ? "fin" : "silent";
      this.recentlyEnded.set(key, end);
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
    const verdict = (): ConnectionEnd => (!entry.seesFin ? "unknown" : entry.fin ? "fin" : "silent");
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

  private idleFrom(entry: Held): void {
    entry.idle = setTimeout(() => entry.socket.destroy(), this.limits.idleMs);
    entry.idle.unref();
  }
}
