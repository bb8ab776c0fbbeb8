// A TCP proxy on loopback in front of the real kube-apiserver, that a test
// steers: clients (the operator's serve and watch) reach the apiserver only
// through it, and the test can cut every connection (a reset, as a broken
// network or a restarted load balancer does), cut them in the middle of
// what they carry, or answer every new connection with 429 and a Retry-After
// for a while (as an apiserver shedding load does).
//
// Connections pass as raw TCP: TLS runs end to end and the client's
// certificate reaches the apiserver. To say 429 the proxy must speak HTTP,
// so while it refuses it ends TLS itself with the apiserver's own serving
// certificate, which the clients already trust.

import { readFileSync } from "node:fs";
import https from "node:https";
import net from "node:net";

export interface FaultProxyStats {
  /** Connections accepted. */
  connections: number;
  /** Connections the proxy reset on purpose. */
  resets: number;
  /** Requests answered 429. */
  tooManyRequests: number;
  /** Bytes passed from the apiserver to the clients (TLS records included): what the clients read. */
  bytesFromServer: number;
}

export interface FaultProxy {
  /** https://127.0.0.1:PORT: put this in the clients' kubeconfig. */
  readonly url: string;
  readonly stats: FaultProxyStats;
  /** Open connections now. */
  open(): number;
  /** Resets every open connection (RST to both sides); returns how many. */
  resetAll(): number;
  /**
   * Resets each connection once it has carried `bytes` more bytes from the
   * apiserver (a watch or a list cut in the middle), until `stop()` is called.
   */
  resetAfterBytes(bytes: number): { stop(): void };
  /** For `seconds`, answers every request 429 with `Retry-After: retryAfterSeconds`; open connections are reset first. */
  tooManyRequests(seconds: number, retryAfterSeconds: number): Promise<void>;
  close(): Promise<void>;
}

export async function startFaultProxy(
  upstream: { host: string; port: number },
  tlsFiles: { cert: string; key: string },
): Promise<FaultProxy> {
  const stats: FaultProxyStats = { connections: 0, resets: 0, tooManyRequests: 0, bytesFromServer: 0 };
  const pairs = new Set<{ client: net.Socket; server: net.Socket; carried: number; reset(): void }>();
  let refuseUntil = 0;
  let retryAfter = 1;
  let cutAfter: number | undefined;

  // Only for the 429 stretch: TLS ended here, one answer a request, then close.
  const refuser = https.createServer(
    { cert: readFileSync(tlsFiles.cert), key: readFileSync(tlsFiles.key) },
    (req, res) => {
      stats.tooManyRequests++;
      req.resume();
      const body = JSON.stringify({
        kind: "Status",
        apiVersion: "v1",
        status: "Failure",
        reason: "TooManyRequests",
        code: 429,
        message: "the fault proxy is shedding load",
        details: { retryAfterSeconds: retryAfter },
      });
      res.writeHead(429, {
        "content-type": "application/json",
        "retry-after": String(retryAfter),
        connection: "close",
      });
      res.end(body);
    },
  );
  refuser.on("tlsClientError", () => undefined);

  const proxy = net.createServer((client) => {
    stats.connections++;
    client.on("error", () => undefined);
    if (Date.now() < refuseUntil) {
      refuser.emit("connection", client);
      return;
    }
    const server = net.connect(upstream.port, upstream.host);
    server.on("error", () => client.destroy());
    client.on("error", () => server.destroy());
    const pair = {
      client,
      server,
      carried: 0,
      reset() {
        client.resetAndDestroy();
        server.resetAndDestroy();
      },
    };
    pairs.add(pair);
    server.on("data", (chunk: Buffer) => {
      pair.carried += chunk.length;
      stats.bytesFromServer += chunk.length;
      if (cutAfter !== undefined && pair.carried > cutAfter) {
        stats.resets++;
        pair.reset();
      }
    });
    client.pipe(server);
    server.pipe(client);
    const done = (): void => void pairs.delete(pair);
    client.on("close", done);
    server.on("close", () => client.destroy());
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  const port = (proxy.address() as net.AddressInfo).port;

  const resetAll = (): number => {
    const n = pairs.size;
    for (const p of [...pairs]) p.reset();
    stats.resets += n;
    return n;
  };

  return {
    url: `https://127.0.0.1:${port}`,
    stats,
    open: () => pairs.size,
    resetAll,
    resetAfterBytes(bytes) {
      for (const p of pairs) p.carried = 0;
      cutAfter = bytes;
      return { stop: () => (cutAfter = undefined) };
    },
    async tooManyRequests(seconds, retryAfterSeconds) {
      retryAfter = retryAfterSeconds;
      refuseUntil = Date.now() + seconds * 1000;
      resetAll();
      await new Promise((r) => setTimeout(r, seconds * 1000));
    },
    async close() {
      resetAll();
      refuser.closeAllConnections();
      await new Promise<void>((r) => proxy.close(() => r()));
    },
  };
}
