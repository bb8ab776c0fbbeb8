import https from "node:https";
import tls, { type TLSSocket } from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCa, describeCertificate, issueCertificate, type KeyPair } from "../certs/pki.js";
import { startHttpsServer, type RunningServer } from "./https.js";
import { silentLogger } from "../observability/logger.js";

interface Answer {
  connection: string | undefined;
  /** The serial of the certificate the connection was handshaken with. */
  serial: string;
  /** Which connection carried the request, by the client's local port. */
  localPort: number;
}

describe("the HTTPS listener's certificate reload", () => {
  const ca = createCa();
  const leaf = (): KeyPair =>
    issueCertificate(ca, { commonName: "localhost", ips: ["127.0.0.1"], usage: "server" });
  const first = leaf();
  const second = leaf();
  let server: RunningServer;
  // One pooled connection at a time, as a keep-alive client reuses it.
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1, ca: ca.cert });

  const get = (): Promise<Answer> =>
    new Promise((resolve, reject) => {
      const req = https.get({ host: "127.0.0.1", port: server.address.port, path: "/", agent }, (res) => {
        const socket = res.socket as TLSSocket;
        const answer: Answer = {
          connection: res.headers.connection,
          serial: socket.getPeerCertificate().serialNumber.toLowerCase(),
          localPort: socket.localPort ?? 0,
        };
        res.resume();
        res.on("end", () => resolve(answer));
      });
      req.on("error", reject);
    });
  const serialOf = (pair: KeyPair): string => describeCertificate(pair.cert).serial.replace(/^0+/, "");
  const bare = (serial: string): string => serial.replace(/^0+/, "");

  beforeAll(async () => {
    server = await startHttpsServer((_req, res) => res.end("ok"), {
      host: "127.0.0.1",
      port: 0,
      tls: first,
      log: silentLogger(),
    });
  });
  afterAll(async () => {
    agent.destroy();
    await server.stop();
  });

  it("keeps a connection alive until a reload, then closes it after its next answer, and the next connection meets the new certificate", async () => {
    const a = await get();
    const b = await get();
    expect(bare(a.serial)).toBe(serialOf(first));
    expect(b.localPort).toBe(a.localPort);
    expect(b.connection).toBe("keep-alive");

    server.reload(second);
    // The request already pooled on the old connection is answered, and told to close.
    const c = await get();
    expect(c.localPort).toBe(a.localPort);
    expect(bare(c.serial)).toBe(serialOf(first));
    expect(c.connection).toBe("close");

    // The client opens a new connection, handshaken with the new certificate, and keeps it.
    const d = await get();
    const e = await get();
    expect(d.localPort).not.toBe(a.localPort);
    expect(bare(d.serial)).toBe(serialOf(second));
    expect(d.connection).toBe("keep-alive");
    expect(e.localPort).toBe(d.localPort);
  });
});

/** The protocol and suite a handshake settles on, or its error's message. */
function handshake(port: number, ca: string, opts: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve) => {
    const socket = tls.connect(
      { host: "127.0.0.1", port, ca, ALPNProtocols: ["h2", "http/1.1"], ...opts },
      () => {
        const agreed = `${socket.getProtocol() ?? "?"} ${socket.getCipher().name}`;
        socket.destroy();
        resolve(agreed);
      },
    );
    socket.once("error", (err) => resolve(`failed: ${err.message}`));
  });
}

/** TLS 1.2 clients offering one suite each: only the forward-secret AEAD ones get in; TLS 1.3 as before. */
async function expectForwardSecretSuitesOnly(port: number, ca: string): Promise<void> {
  const tls12 = (ciphers: string) => handshake(port, ca, { maxVersion: "TLSv1.2", ciphers });
  // Static RSA key exchange (no forward secrecy), and CBC with SHA-1.
  for (const weak of ["AES128-GCM-SHA256", "AES256-SHA256", "AES128-SHA", "ECDHE-RSA-AES128-SHA"])
    expect(await tls12(weak), weak).toMatch(/^failed: .*(handshake failure|no shared cipher)/i);
  for (const good of [
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-RSA-CHACHA20-POLY1305",
  ])
    expect(await tls12(good)).toBe(`TLSv1.2 ${good}`);
  expect(await handshake(port, ca, {})).toBe("TLSv1.3 TLS_AES_256_GCM_SHA384");
  for (const suite of ["TLS_AES_128_GCM_SHA256", "TLS_CHACHA20_POLY1305_SHA256"])
    expect(await handshake(port, ca, { minVersion: "TLSv1.3", ciphers: suite })).toBe(`TLSv1.3 ${suite}`);
}

describe("the HTTPS listener's TLS 1.2 cipher suites", () => {
  it("takes only ECDHE with AEAD ciphers, TLS 1.3 as before, also after a reload", async () => {
    const ca = createCa();
    const leaf = (): KeyPair =>
      issueCertificate(ca, { commonName: "localhost", ips: ["127.0.0.1"], usage: "server" });
    const server = await startHttpsServer((_req, res) => res.end("ok"), {
      host: "127.0.0.1",
      port: 0,
      tls: leaf(),
      log: silentLogger(),
    });
    try {
      await expectForwardSecretSuitesOnly(server.address.port, ca.cert);
      server.reload(leaf());
      await expectForwardSecretSuitesOnly(server.address.port, ca.cert);
    } finally {
      await server.stop();
    }
  });
});
