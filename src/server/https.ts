// The HTTPS listener: TLS 1.2+ (1.2 with forward-secret AEAD suites only,
// TLS12_CIPHERS), hot reload of the key pair when its files change
// (certificate rotation without a restart), a graceful stop, and limits on
// connections: how many, and how long they may take to be worth keeping.

import { readFileSync, watchFile, unwatchFile } from "node:fs";
import https from "node:https";
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { Logger } from "../observability/logger.js";
import { TLS12_CIPHERS } from "../dataplane/xds/ads-tls.js";
import { gracefulStop } from "./graceful-stop.js";

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

export interface HttpsServerOptions {
  host: string;
  port: number;
  tls: TlsFiles | { cert: string; key: string };
  /** Time given to in-flight requests on stop, once the listener closed, before connections are cut. */
  drainMs?: number;
  /** Time the listener keeps accepting after stop() begins (see graceful-stop.ts). */
  shutdownDelayMs?: number;
  /**
   * PEM CA bundle: ask every client for a certificate and check it against
   * these. The handshake never fails on it (probes and the watcher come
   * without one); the app refuses the paths that need one.
   */
  clientCa?: string;
  /**
   * On stop, how long kept-alive connections are left to their clients, each
   * answering its next request with Connection: close, before the idle ones
   * are closed here (default 10 s).
   */
  closeIdleAfterMs?: number;
  /**
   * How long a request's headers may take (default 5 s). A connection's first
   * request counts from the end of its handshake: a connection that never
   * sends one is answered 408 and closed then.
   */
  headersTimeoutMs?: number;
  /** How long a whole request, headers and body, may take to arrive (default 30 s). */
  requestTimeoutMs?: number;
  /** How long a TLS handshake may take (default 5 s; Node's own is 120 s). */
  handshakeTimeoutMs?: number;
  /** Connections held at once, by all peers (default MAX_CONNECTIONS). */
  maxConnections?: number;
  /** Connections one peer (a remote address) may hold at once (default MAX_CONNECTIONS_PER_PEER). */
  maxConnectionsPerPeer?: number;
  /** How long an answer's writes may stand still (the caller reads none of it) before the connection is cut (default 10 s). */
  writeStallTimeoutMs?: number;
  /** Told each key pair loaded after the first (files changed, or a renewal): other ports follow it. */
  onReload?: (pair: { cert: string; key: string }) => void;
  log: Logger;
}

/**
 * The apiserver writes a webhook request at once and waits 10 s for the answer
 * by default (the chart: 5 s), 30 s at most; what has not arrived in time is
 * for nobody. A body has a deadline of its own (request-body.ts); this is the
 * bound for the rest (a body no handler reads).
 */
export const HEADERS_TIMEOUT_MS = 5_000;
export const REQUEST_TIMEOUT_MS = 30_000;
/**
 * An answer a caller stops reading keeps its request's share of the body
 * budget (a large one is written as the socket drains) and its bytes in
 * memory; nothing else ends it while the request is open.
 */
export const WRITE_STALL_TIMEOUT_MS = 10_000;
/** A handshake is a few round trips: seconds are plenty, and Node's 120 s let each idle one cost memory for two minutes. */
export const HANDSHAKE_TIMEOUT_MS = 5_000;
/**
 * Each open TLS connection costs the process about 32 KiB (5.6 KiB of it on
 * V8's heap), measured with 2,000 kept-alive connections: 1,024 of them are
 * about 32 MiB of the chart's 768 MiB. One peer may hold a quarter: the
 * apiserver keeps 25 idle connections per webhook host, and opens one per call
 * in flight beyond them.
 */
export const MAX_CONNECTIONS = 1_024;
export const MAX_CONNECTIONS_PER_PEER = 256;

export interface RunningServer {
  readonly server: https.Server;
  readonly address: AddressInfo;
  /** Loads a new key pair into the live server; new handshakes use it at once. */
  reload(pair?: { cert: string; key: string }): void;
  /** Keeps serving for the shutdown delay (every answer says Connection: close), stops accepting, lets in-flight requests finish, then closes. */
  stop(): Promise<void>;
}

function readPair(tls: HttpsServerOptions["tls"]): { cert: string; key: string } {
  if ("cert" in tls) return tls;
  return { cert: readFileSync(tls.certFile, "utf8"), key: readFileSync(tls.keyFile, "utf8") };
}

/** Parses HOST:PORT, [v6]:PORT or :PORT. */
export function parseListen(listen: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(listen);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !(port >= 0 && port <= 65535))
    throw new Error(`--listen must be HOST:PORT, got ${JSON.stringify(listen)}`);
  return { host: m[1] ?? (m[2] || "0.0.0.0"), port };
}

export async function startHttpsServer(
  handler: RequestListener,
  opts: HttpsServerOptions,
): Promise<RunningServer> {
  const pair = readPair(opts.tls);
  const logger = opts.log;
  // Which key pair each connection was handshaken with. After a reload, a
  // connection from before it answers its next request with Connection: close,
  // so keep-alive clients (the apiserver pools them) handshake again and meet
  // the new certificate at once, not whenever the pool happens to grow. Closing
  // after a response, never while idle, leaves no request racing a close.
  let generation = 0;
  const handshakenWith = new WeakMap<Socket, number>();
  const clientAuth = opts.clientCa ? { ca: opts.clientCa, requestCert: true, rejectUnauthorized: false } : {};
  const headersTimeout = opts.headersTimeoutMs ?? HEADERS_TIMEOUT_MS;
  const server = https.createServer({
    ...pair,
    ...clientAuth,
    minVersion: "TLSv1.2",
    ciphers: TLS12_CIPHERS,
    handshakeTimeout: opts.handshakeTimeoutMs ?? HANDSHAKE_TIMEOUT_MS,
    // How often Node looks for requests past those timeouts (its default, 30 s, would stretch a 5 s one sixfold).
    connectionsCheckingInterval: Math.max(20, Math.min(1000, Math.floor(headersTimeout / 4))),
  });
  const graceful = gracefulStop(server);
  const caps = new ConnectionCaps(
    opts.maxConnections ?? MAX_CONNECTIONS,
    opts.maxConnectionsPerPeer ?? MAX_CONNECTIONS_PER_PEER,
  );
  let refused = 0;
  let evicted = 0;
  let loggedAt = 0;
  server.on("connection", (socket: Socket) => {
    const outcome = caps.admit(socket);
    if (outcome === "admitted") return;
    if (outcome === "evicted") evicted++;
    else refused++;
    // At most one warning a second: a flood must not become a flood of logs.
    const now = Date.now();
    if (now - loggedAt < 1_000) return;
    logger.warn(
      {
        refused,
        evicted,
        last: { address: socket.remoteAddress, outcome },
        limits: { total: caps.total, perPeer: caps.perPeer },
      },
      "HTTPS connections over the connection limits: refused, or others closed to make room",
    );
    refused = 0;
    evicted = 0;
    loggedAt = now;
  });
  trackAnswers(server);
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    graceful.track(req, res);
    caps.requestOn(req.socket, res);
    if ((handshakenWith.get(req.socket) ?? generation) < generation) res.setHeader("Connection", "close");
    void handler(req, res);
  });
  server.on("secureConnection", (socket) => handshakenWith.set(socket, generation));
  const stalls = watchWriteStalls(server, opts.writeStallTimeoutMs ?? WRITE_STALL_TIMEOUT_MS);
  // The apiserver's webhook client (client-go, Go's http.Transport) drops idle
  // connections after 90 s. Keeping them longer lets the client, never the
  // server, close an idle one: a server-side close can cross a request the
  // client has just written, and that admission fails with EOF. That is
  // between requests: headers and bodies have their own, far shorter, deadlines.
  server.keepAliveTimeout = 95_000;
  server.headersTimeout = headersTimeout;
  server.requestTimeout = Math.max(headersTimeout, opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS);

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, opts.host, () => {
      server.off("error", reject);
      resolve();
    });
  });

  const reload = (next?: { cert: string; key: string }): void => {
    const p = next ?? readPair(opts.tls);
    // The whole context is replaced: the client CA goes with the new pair.
    server.setSecureContext({
      ...p,
      ...(opts.clientCa ? { ca: opts.clientCa } : {}),
      minVersion: "TLSv1.2",
      ciphers: TLS12_CIPHERS,
    });
    generation++;
    opts.onReload?.(p);
    logger.info("TLS key pair reloaded");
  };

  const files = "certFile" in opts.tls ? [opts.tls.certFile, opts.tls.keyFile] : [];
  const onChange = (): void => {
    try {
      reload();
    } catch (err) {
      // A half-written pair (cert renewed, key not yet) fails here; the next change retries.
      logger.warn({ err }, "TLS reload failed; keeping the current key pair");
    }
  };
  for (const f of files) watchFile(f, { interval: 1000 }, onChange);

  const stop = async (): Promise<void> => {
    for (const f of files) unwatchFile(f, onChange);
    clearInterval(stalls);
    await graceful.stop({
      delayMs: opts.shutdownDelayMs ?? 0,
      idleWaitMs: opts.closeIdleAfterMs ?? 10_000,
      drainMs: opts.drainMs ?? 20_000,
    });
  };

  return { server, address: server.address() as AddressInfo, reload, stop };
}

/** Per connection (the TLS socket): requests seen so far, and the latest one's answer. */
interface Answers {
  readonly requests: WeakMap<Duplex, number>;
  readonly last: WeakMap<Duplex, ServerResponse>;
}

function trackAnswers(server: https.Server): void {
  const answers: Answers = { requests: new WeakMap(), last: new WeakMap() };
  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    answers.requests.set(req.socket, (answers.requests.get(req.socket) ?? 0) + 1);
    answers.last.set(req.socket, res);
  });
  // Node checks headersTimeout and requestTimeout from a timer (every
  // connectionsCheckingInterval). After the event loop was busy past a
  // deadline, that timer runs before the poll that would read a request which
  // did arrive in time, and Node's default answers 408 and destroys the socket
  // at once with that request unread: the kernel then resets the connection,
  // and a reset drops what the caller had received but not yet read. The 408
  // has no Content-Length (its body runs to the close), so a caller that read
  // its status line fails on the body: client-go's "unexpected error when
  // reading response body ... connection reset by peer". The apiserver's first
  // request can come as that timeout ends: Go's transport pools connections it
  // dialed and then did not need, with no request sent. So a timeout is acted
  // on after the poll (setImmediate, as request-body.ts does for a body), and
  // a connection whose request began meanwhile is kept.
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code !== "ERR_HTTP_REQUEST_TIMEOUT") return refuseClient(answers, err, socket);
    const seen = answers.requests.get(socket) ?? 0;
    setImmediate(() => {
      if (!socket.destroyed && (answers.requests.get(socket) ?? 0) === seen)
        refuseClient(answers, err, socket);
    });
  });
}

/** Status lines of Node's own answers to a client error (lib/_http_server.js, socketOnError). */
const CLIENT_ERROR_STATUS: Readonly<Record<string, string>> = {
  HPE_HEADER_OVERFLOW: "431 Request Header Fields Too Large",
  HPE_CHUNK_EXTENSIONS_OVERFLOW: "413 Payload Too Large",
  ERR_HTTP_REQUEST_TIMEOUT: "408 Request Timeout",
};

/** What Node does with a client error when no one listens: an answer if none is under way, then the end. */
function refuseClient(answers: Answers, err: NodeJS.ErrnoException, socket: Duplex): void {
  const res = answers.last.get(socket);
  const answering = res !== undefined && res.headersSent && !res.writableFinished;
  if (socket.writable && !answering) {
    const status = CLIENT_ERROR_STATUS[err.code ?? ""] ?? "400 Bad Request";
    socket.write(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
  }
  socket.destroy(err);
}

/**
 * Cuts connections whose writes stood still for `stallMs`: bytes waiting to be
 * written all along, and no drain. A caller that reads slowly but reads gets
 * a drain each time the socket's buffer empties.
 */
function watchWriteStalls(server: https.Server, stallMs: number): NodeJS.Timeout {
  const movedAt = new Map<Socket, number>();
  server.on("secureConnection", (socket: Socket) => {
    movedAt.set(socket, Date.now());
    socket.on("drain", () => movedAt.set(socket, Date.now()));
    socket.once("close", () => movedAt.delete(socket));
  });
  const timer = setInterval(
    () => {
      const now = Date.now();
      for (const [socket, at] of movedAt) {
        if (socket.writableLength === 0) movedAt.set(socket, now);
        else if (now - at > stallMs) socket.destroy();
      }
    },
    Math.max(20, Math.min(1000, Math.floor(stallMs / 4))),
  );
  timer.unref();
  return timer;
}

interface Held {
  readonly socket: Socket;
  /** socketKey(socket), kept: a closed socket may no longer know its peer. */
  readonly key: string;
  readonly peer: string;
  /** Requests that arrived on it so far. */
  served: number;
  /** Requests being answered on it now. */
  active: number;
  /** When its last answer was sent (or it opened). */
  idleSince: number;
}

/**
 * Connections held at once, by peer and in all. A peer at its cap is turned
 * away: its new socket is closed before any TLS work. At the total, a new
 * socket takes the place of one worth less, so that an address the total has
 * not yet seen still gets in: first the oldest that has not yet sent a
 * request (a client that means to send one does so at once), else the longest
 * idle of the peer holding the most; when every one of those is answering a
 * request, the new one is turned away. Kept-alive connections stay open
 * between requests (see keepAliveTimeout) but count all the while, so the cap
 * holds.
 */
class ConnectionCaps {
  /** By remoteAddress:remotePort, oldest first. */
  private readonly held = new Map<string, Held>();
  private readonly byPeer = new Map<string, number>();

  constructor(
    readonly total: number,
    readonly perPeer: number,
  ) {}

  admit(socket: Socket): "admitted" | "evicted" | "per-peer" | "total" {
    const peer = socket.remoteAddress ?? "";
    if ((this.byPeer.get(peer) ?? 0) >= this.perPeer) {
      socket.destroy();
      return "per-peer";
    }
    let outcome: "admitted" | "evicted" = "admitted";
    if (this.held.size >= this.total) {
      const room = this.roomFor();
      if (room === undefined) {
        socket.destroy();
        return "total";
      }
      this.drop(room);
      room.socket.destroy();
      outcome = "evicted";
    }
    const entry: Held = { socket, key: socketKey(socket), peer, served: 0, active: 0, idleSince: Date.now() };
    this.held.set(entry.key, entry);
    this.byPeer.set(peer, (this.byPeer.get(peer) ?? 0) + 1);
    socket.once("close", () => this.drop(entry));
    return outcome;
  }

  /** A request arrived on `socket` (the TLS socket over an admitted one); counted until its answer ends. */
  requestOn(socket: Socket, res: ServerResponse): void {
    const entry = this.held.get(socketKey(socket));
    if (entry === undefined) return;
    entry.served++;
    entry.active++;
    res.once("close", () => {
      entry.active--;
      entry.idleSince = Date.now();
    });
  }

  /** Which connection gives way to a new one at the total, if any may. */
  private roomFor(): Held | undefined {
    for (const h of this.held.values()) if (h.served === 0) return h;
    let top: string | undefined;
    let most = 0;
    for (const [peer, n] of this.byPeer) {
      if (n > most) {
        top = peer;
        most = n;
      }
    }
    let pick: Held | undefined;
    for (const h of this.held.values()) {
      if (h.peer === top && h.active === 0 && (pick === undefined || h.idleSince < pick.idleSince)) pick = h;
    }
    return pick;
  }

  private drop(entry: Held): void {
    if (this.held.get(entry.key) !== entry) return;
    this.held.delete(entry.key);
    const left = (this.byPeer.get(entry.peer) ?? 1) - 1;
    if (left <= 0) this.byPeer.delete(entry.peer);
    else this.byPeer.set(entry.peer, left);
  }
}

/** The TCP socket and the TLS socket over it answer the same address and port. */
function socketKey(socket: Socket): string {
  return `${socket.remoteAddress ?? ""}:${socket.remotePort ?? ""}`;
}
