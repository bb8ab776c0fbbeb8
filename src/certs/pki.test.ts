// What a CA from createCa lets a client trust, checked by Node's TLS (OpenSSL:
// the watcher, grpc-js) over loopback: a leaf it signed, never a chain through
// an intermediate CA signed with its key. The apiserver's Go verifier is
// checked in test/integration/ca-path-length.test.ts.

import https from "node:https";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { intermediateCa } from "../../test/fixtures/rogue-ca.js";
import { createCa, describeCertificate, issueCertificate, type KeyPair } from "./pki.js";

/** The TLS client's verdict on a server presenting `chain`, trusting `ca` alone. */
async function handshake(ca: string, chain: KeyPair): Promise<string> {
  const server = https.createServer({ cert: chain.cert, key: chain.key }, (_req, res) => res.end("ok"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  try {
    return await new Promise<string>((resolve) => {
      const req = https.get({ host: "127.0.0.1", port, ca, agent: false, servername: "localhost" }, (res) => {
        res.resume();
        resolve("trusted");
      });
      req.on("error", (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    });
  } finally {
    server.close();
  }
}

const leafOf = (issuer: KeyPair): KeyPair =>
  issueCertificate(issuer, { commonName: "localhost", dnsNames: ["localhost"], usage: "server" });

describe("createCa", { timeout: 30_000 }, () => {
  const ca = createCa();

  it("is a CA that may sign leaves only: pathLenConstraint 0", () => {
    expect(describeCertificate(ca.cert)).toMatchObject({ isCa: true, pathLen: 0 });
  });

  it("is trusted for a leaf it signed, not for one behind an intermediate CA signed with its key", async () => {
    expect(await handshake(ca.cert, leafOf(ca))).toBe("trusted");
    const rogue = intermediateCa(ca);
    const leaf = leafOf(rogue);
    expect(await handshake(ca.cert, { cert: leaf.cert + rogue.cert, key: leaf.key })).toBe(
      "PATH_LENGTH_EXCEEDED",
    );
  });
});
