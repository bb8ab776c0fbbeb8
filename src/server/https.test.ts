import https from "node:https";
import type { TLSSocket } from "node:tls";
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
