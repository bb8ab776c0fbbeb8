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

interface Held {
  readonly socket: Socket;
  streams: number;
  idle: ReturnType<typeof setTimeout> | undefined;
}

/** `call.getPeer()`'s form (grpc-js: remoteAddress:remotePort), so a stream finds its connection. */
function peerKey(socket: Socket): string {
  return `${socket.remoteAddress ?? ""}:${socket.remotePort ?? ""}`;
}

export class ConnectionGate {
  private readonly byAddress = new Map<string, number>();
  private readonly connections = new Map<string, Held>();

  constructor(readonly limits: ConnectionLimits = DEFAULT_CONNECTION_LIMITS) {}

  /** Takes the socket in (counted until it closes), or says why not and closes it. */
  admit(socket: Socket): Refusal | undefined {
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
    const entry: Held = { socket, streams: 0, idle: undefined };
    this.byAddress.set(address, held + 1);
    this.connections.set(key, entry);
    this.idleFrom(entry);
    socket.once("close", () => {
      clearTimeout(entry.idle);
      this.connections.delete(key);
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

  /** Connections held now: all of them, or those of one remote address. */
  held(address?: string): number {
    return address === undefined ? this.connections.size : (this.byAddress.get(address) ?? 0);
  }

  private idleFrom(entry: Held): void {
    entry.idle = setTimeout(() => entry.socket.destroy(), this.limits.idleMs);
    entry.idle.unref();
  }
}
