// The HTTPS port's connections are bounded: per peer address and in all
// (each open TLS connection costs the process about 32 KiB), and in time: a
// handshake that does not finish, and a connection that never sends a first
// request, are closed within seconds, while a connection that served a
// request is kept alive between requests (the apiserver pools them). Small
// caps through options; every peer is a loopback address (127.0.0.N, by
// `localAddress`), and every wait is bounded.

import net from "node:net";
import tls from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { createCa, issueCertificate } from "../certs/pki.js";
import { silentLogger } from "../observability/logger.js";
import { parseServeArgs } from "../cli/serve.js";
import { startHttpsServer, type HttpsServerOptions, type RunningServer } from "./https.js";

const ca = createCa();
const pair = issueCertificate(ca, { commonName: "localhost", ips: ["127.0.0.1"], usage: "server" });
let server: RunningServer | undefined;

afterEach(async () => {
  server?.server.closeAllConnections();
  await server?.stop();
  server = undefined;
});

async function serve(limits: Partial<HttpsServerOptions>): Promise<RunningServer> {
  server = await startHttpsServer((_req, res) => res.end("ok"), {
    host: "0.0.0.0",
    port: 0,
    tls: pair,
    log: silentLogger(),
    closeIdleAfterMs: 0,
    ...limits,
  });
  return server;
}

interface Client {
  readonly socket: tls.TLSSocket;
  /** Whether the handshake finished (false: the connection was closed first). */
  readonly handshaken: Promise<boolean>;
  /** When the connection closed, from when it was opened. */
  readonly closed: Promise<number>;
  /** One GET on this connection, kept alive; answers the status line, or "" if the connection closed first. */
  get(): Promise<string>;
}

function connect(port: number, from: string): Client {
  const opened = Date.now();
  const socket = tls.connect({
    socket: net.connect({ host: "127.0.0.1", port, localAddress: from }),
    ca: ca.cert,
    servername: "localhost",
  });
  socket.on("error", () => undefined);
  let received = "";
  socket.on("data", (d: Buffer) => (received += d.toString("latin1")));
  const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now() - opened)));
  const handshaken = Promise.race([
    new Promise<boolean>((resolve) => socket.once("secureConnect", () => resolve(true))),
    closed.then(() => false),
  ]);
  const get = async (): Promise<string> => {
    received = "";
    socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    const deadline = Date.now() + 3_000;
    while (!/\r\n\r\nok$/.test(received) && !socket.destroyed && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    return /\r\n\r\nok$/.test(received) ? (received.split("\r\n")[0] ?? "") : "";
  };
  return { socket, handshaken, closed, get };
}

/** A connection that served one request and stays open, kept alive. */
async function kept(port: number, from: string): Promise<Client> {
  const c = connect(port, from);
  expect(await c.handshaken).toBe(true);
  expect(await c.get()).toBe("HTTP/1.1 200 OK");
  return c;
}

const settle = () => new Promise((r) => setTimeout(r, 100));
/** The promise's value, or Infinity once `ms` passed without one. */
const within = (p: Promise<number> | undefined, ms: number) =>
  Promise.race([
    p ?? Promise.resolve(Infinity),
    new Promise<number>((r) => setTimeout(() => r(Infinity), ms)),
  ]);
const openCount = (s: RunningServer) =>
  new Promise<number>((resolve, reject) =>
    s.server.getConnections((err, n) => (err ? reject(err) : resolve(n))),
  );

describe("the HTTPS port's connection caps", () => {
  it("turns away an address past its cap before any TLS work, while another address gets in", async () => {
    const s = await serve({ maxConnectionsPerPeer: 3, maxConnections: 10 });
    const port = s.address.port;
    const mine = [
      await kept(port, "127.0.0.2"),
      await kept(port, "127.0.0.2"),
      await kept(port, "127.0.0.2"),
    ];
    const fourth = connect(port, "127.0.0.2");
    expect(await fourth.handshaken).toBe(false);
    const other = await kept(port, "127.0.0.3");
    // The three kept ones still serve.
    for (const c of mine) expect(await c.get()).toBe("HTTP/1.1 200 OK");
    expect(await other.get()).toBe("HTTP/1.1 200 OK");
    // One closes: the address may open one again.
    mine[0]?.socket.destroy();
    await settle();
    expect(await (await kept(port, "127.0.0.2")).get()).toBe("HTTP/1.1 200 OK");
  });

  it("holds the total: a new address takes the place of the oldest connection that sent nothing, else of the longest idle one of the address holding the most", async () => {
    const s = await serve({ maxConnectionsPerPeer: 10, maxConnections: 5 });
    const port = s.address.port;
    const a = [await kept(port, "127.0.0.2"), await kept(port, "127.0.0.2"), await kept(port, "127.0.0.2")];
    const b = await kept(port, "127.0.0.3");
    // Handshaken, and then silent.
    const silent = connect(port, "127.0.0.4");
    expect(await silent.handshaken).toBe(true);
    await settle();
    expect(await openCount(s)).toBe(5);

    // The total is reached: the silent one gives way.
    const c = await kept(port, "127.0.0.5");
    expect(await within(silent.closed, 3_000)).toBeLessThan(3_000);
    await settle();
    expect(await openCount(s)).toBe(5);

    // Every one has served a request: the longest idle of 127.0.0.2 (three of five) gives way.
    const d = await kept(port, "127.0.0.6");
    expect(await within(a[0]?.closed, 3_000)).toBeLessThan(3_000);
    await settle();
    expect(await openCount(s)).toBe(5);
    for (const x of [a[1], a[2], b, c, d]) expect(await x?.get()).toBe("HTTP/1.1 200 OK");
  });

  it("closes a handshake that does not finish and a connection that sends no request within their timeouts; one that served a request stays open between requests", async () => {
    const s = await serve({ handshakeTimeoutMs: 500, headersTimeoutMs: 500 });
    const port = s.address.port;
    // TCP, and no TLS ClientHello.
    const raw = net.connect({ host: "127.0.0.1", port, localAddress: "127.0.0.2" });
    raw.on("error", () => undefined);
    const rawOpened = Date.now();
    const rawClosed = new Promise<number>((resolve) =>
      raw.once("close", () => resolve(Date.now() - rawOpened)),
    );
    raw.resume();
    const silent = connect(port, "127.0.0.3");
    expect(await silent.handshaken).toBe(true);
    const served = await kept(port, "127.0.0.4");

    expect(await within(rawClosed, 3_000)).toBeLessThan(2_000);
    expect(await within(silent.closed, 3_000)).toBeLessThan(2_000);
    raw.destroy();
    // Three times the first-request timeout later, the kept-alive one still serves.
    await new Promise((r) => setTimeout(r, 1_500));
    expect(served.socket.destroyed).toBe(false);
    expect(await served.get()).toBe("HTTP/1.1 200 OK");
  });

  it("serves a first request that arrived within the headers timeout even when the event loop was busy past it", async () => {
    // Node checks headersTimeout from a timer (connectionsCheckingInterval).
    // After a busy spell the timers run before the poll that would read a
    // request that arrived in time, and Node's default answers 408 (no
    // Content-Length: its body runs to the close) and destroys the socket with
    // the request unread, which resets the connection: a caller that had read
    // the status line fails reading the body (client-go: "unexpected error when
    // reading response body ... connection reset by peer"). Go's transport keeps
    // connections it dialed but did not need in its pool without a request, so
    // the apiserver's first request on one can come as its timeout ends.
    const s = await serve({ headersTimeoutMs: 300 });
    const c = connect(s.address.port, "127.0.0.2");
    expect(await c.handshaken).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    // The request is sent at 100 ms, and the event loop held until 600 ms, in
    // a setImmediate: next come the timers (Node's check), then the poll.
    const answer = await new Promise<Promise<string>>((resolve) =>
      setImmediate(() => {
        const sent = c.get();
        const until = Date.now() + 500;
        while (Date.now() < until);
        resolve(sent);
      }),
    );
    expect(await answer).toBe("HTTP/1.1 200 OK");
    // The connection is kept for the next request.
    expect(await c.get()).toBe("HTTP/1.1 200 OK");
  });
});

describe("serve's connection flags", () => {
  const base = ["--tls-cert", "c", "--tls-key", "k"];
  it("takes --max-connections and --max-connections-per-peer, with defaults", () => {
    const opts = parseServeArgs([...base, "--max-connections", "64", "--max-connections-per-peer", "8"]);
    expect(opts).toMatchObject({ maxConnections: 64, maxConnectionsPerPeer: 8 });
    expect(parseServeArgs(base)).toMatchObject({ maxConnections: 1_024, maxConnectionsPerPeer: 256 });
  });

  it("refuses what is not a positive integer, and a per-peer cap above the total", () => {
    for (const bad of ["0", "-1", "1.5", "many"])
      expect(() => parseServeArgs([...base, `--max-connections=${bad}`])).toThrow(
        `--max-connections must be a positive integer, got "${bad}"`,
      );
    expect(() =>
      parseServeArgs([...base, "--max-connections", "10", "--max-connections-per-peer", "20"]),
    ).toThrow("--max-connections-per-peer (20) must not be more than --max-connections (10)");
  });
});
