// TLS on the ADS port follows a renewed serving certificate without a restart
// (new handshakes get the new pair, open streams keep theirs), mutual TLS
// refuses a proxy without a client certificate the CA signed, and the
// plaintext port for gRPC's own xDS clients sits beside the TLS one on the
// same server (the same snapshot, the same clients).

import * as grpc from "@grpc/grpc-js";
import crypto from "node:crypto";
import tls from "node:tls";
import { afterEach, describe, expect, it } from "vitest";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { adsClient, sotwStream } from "../../../test/xds/raw-ads-client.js";
import { createCa, issueCertificate, type KeyPair } from "../../certs/pki.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const NODE = { id: "envoy-1", cluster: "edge" };
// Each n routes to a Service of its own, so the clusters differ: a push for a SotW CDS stream.
const snapshot = (n: number) =>
  adsSnapshot(
    [
      edgeRoute(
        "a",
        ["a.example.com"],
        [
          {
            matches: [{ path: { type: "PathPrefix", value: "/api" } }],
            backends: [{ name: `b${n}`, port: PORT }],
          },
        ],
      ),
    ],
    endpoints({ [`b${n}`]: [1000 + n] }),
  );

const serving = (ca: KeyPair) =>
  issueCertificate(ca, { commonName: "edge-operator", ips: ["127.0.0.1"], usage: "server" });

/** The certificate the port presents to a new handshake (h2, as gRPC asks), by its fingerprint. */
function presented(port: number, ca: KeyPair): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: "127.0.0.1", port, ca: ca.cert, ALPNProtocols: ["h2"] }, () => {
      const fp = socket.getPeerCertificate().fingerprint256;
      socket.destroy();
      resolve(fp);
    });
    socket.once("error", reject);
  });
}

/** The protocol and suite a handshake settles on, or its error's message. */
function handshake(port: number, ca: string, opts: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: "127.0.0.1", port, ca, ALPNProtocols: ["h2"], ...opts }, () => {
      const agreed = `${socket.getProtocol() ?? "?"} ${socket.getCipher().name}`;
      socket.destroy();
      resolve(agreed);
    });
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
}

const fingerprint = (pem: string) => new crypto.X509Certificate(pem).fingerprint256;

/** A DiscoveryRequest for clusters and the version answered, or the error when none comes. */
async function versionOver(creds: grpc.ChannelCredentials, port: number): Promise<string> {
  const client = new grpc.Client(`127.0.0.1:${port}`, creds);
  const s = sotwStream(client);
  try {
    s.send({ node: NODE, type_url: TYPE_URL.cluster });
    return (await s.next(3_000)).message.version_info;
  } finally {
    s.end();
    client.close();
  }
}

let plane: XdsDataPlane | undefined;
afterEach(() => {
  plane?.stop();
  plane = undefined;
});

describe("TLS on the ADS port", () => {
  it("takes a renewed key pair: new handshakes get it, a stream opened before keeps working", async () => {
    const oldCa = createCa({ commonName: "old-ca" });
    const newCa = createCa({ commonName: "new-ca" });
    const first = serving(oldCa);
    const renewed = serving(newCa);
    plane = new XdsDataPlane({ tls: first, ackTimeoutMs: 2_000 });
    const port = await plane.listen("127.0.0.1", 0);
    await plane.program(snapshot(1));

    expect(await presented(port, oldCa)).toBe(fingerprint(first.cert));
    const before = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(oldCa.cert)));
    const open = sotwStream(before);
    open.send({ node: NODE, type_url: TYPE_URL.cluster });
    const got = (await open.next()).message;
    open.send({
      node: NODE,
      type_url: TYPE_URL.cluster,
      version_info: got.version_info,
      response_nonce: got.nonce,
    });

    plane.server.reloadTls(renewed);

    expect(await presented(port, newCa)).toBe(fingerprint(renewed.cert));
    await expect(presented(port, oldCa)).rejects.toThrow(/certificate/);
    expect(await versionOver(grpc.credentials.createSsl(Buffer.from(newCa.cert)), port)).toBe(
      snapshot(1).version,
    );
    // The stream from before the swap still gets the next push.
    await plane.program(snapshot(2));
    expect((await open.next()).message.version_info).toBe(snapshot(2).version);
    open.end();
    before.close();
  });

  it("mutual TLS: a proxy without a client certificate the CA signed is refused, one with it served, also after a reload", async () => {
    const ca = createCa();
    const proxies = createCa({ commonName: "proxies" });
    const stranger = createCa({ commonName: "stranger" });
    const proxy = issueCertificate(proxies, { commonName: "envoy", usage: "client" });
    const impostor = issueCertificate(stranger, { commonName: "envoy", usage: "client" });
    plane = new XdsDataPlane({ tls: { ...serving(ca), clientCa: proxies.cert }, ackTimeoutMs: 2_000 });
    const port = await plane.listen("127.0.0.1", 0);
    await plane.program(snapshot(1));
    const trust = Buffer.from(ca.cert);
    const withCert = (p: KeyPair) =>
      grpc.credentials.createSsl(trust, Buffer.from(p.key), Buffer.from(p.cert));

    expect(await versionOver(withCert(proxy), port)).toBe(snapshot(1).version);
    await expect(versionOver(grpc.credentials.createSsl(trust), port)).rejects.toThrow();
    await expect(versionOver(withCert(impostor), port)).rejects.toThrow();

    plane.server.reloadTls(serving(ca));
    expect(await versionOver(withCert(proxy), port)).toBe(snapshot(1).version);
    await expect(versionOver(grpc.credentials.createSsl(trust), port)).rejects.toThrow();
  });

  it("mutual TLS: a reload with a new client CA (the operator's CA rotated) takes the new CA's proxies, and only those", async () => {
    const ca = createCa();
    const [before, after] = [createCa({ commonName: "ca-1" }), createCa({ commonName: "ca-2" })];
    const [oldProxy, newProxy] = [before, after].map((c) =>
      issueCertificate(c, { commonName: "envoy", usage: "client" }),
    ) as [KeyPair, KeyPair];
    plane = new XdsDataPlane({ tls: { ...serving(ca), clientCa: before.cert }, ackTimeoutMs: 2_000 });
    const port = await plane.listen("127.0.0.1", 0);
    await plane.program(snapshot(5));
    const trust = Buffer.from(ca.cert);
    const withCert = (p: KeyPair) =>
      grpc.credentials.createSsl(trust, Buffer.from(p.key), Buffer.from(p.cert));
    expect(await versionOver(withCert(oldProxy), port)).toBe(snapshot(5).version);
    await expect(versionOver(withCert(newProxy), port)).rejects.toThrow();

    // The rotated bundle: the new CA first, the old one while it is valid (renewal.ts).
    plane.server.reloadTls(serving(ca), after.cert + before.cert);
    expect(await versionOver(withCert(newProxy), port)).toBe(snapshot(5).version);
    expect(await versionOver(withCert(oldProxy), port)).toBe(snapshot(5).version);
    plane.server.reloadTls(serving(ca), after.cert);
    await expect(versionOver(withCert(oldProxy), port)).rejects.toThrow();
    // A reload without a client CA keeps the one it has.
    plane.server.reloadTls(serving(ca));
    expect(await versionOver(withCert(newProxy), port)).toBe(snapshot(5).version);
    await expect(versionOver(grpc.credentials.createSsl(trust), port)).rejects.toThrow();
  });

  it("TLS 1.2 takes only ECDHE with AEAD ciphers, TLS 1.3 as before, also after a reload", async () => {
    const ca = createCa();
    plane = new XdsDataPlane({ tls: serving(ca), ackTimeoutMs: 2_000 });
    const port = await plane.listen("127.0.0.1", 0);
    await expectForwardSecretSuitesOnly(port, ca.cert);
    plane.server.reloadTls(serving(ca));
    await expectForwardSecretSuitesOnly(port, ca.cert);
    // Still an ADS server to a client on an agreed suite.
    await plane.program(snapshot(4));
    expect(await versionOver(grpc.credentials.createSsl(Buffer.from(ca.cert)), port)).toBe(
      snapshot(4).version,
    );
  });

  it("a plaintext port beside the TLS one serves the same snapshot to the same server's clients", async () => {
    const ca = createCa();
    plane = new XdsDataPlane({ tls: serving(ca), ackTimeoutMs: 2_000 });
    const tlsPort = await plane.listen("127.0.0.1", 0);
    const plainPort = await plane.server.listen("127.0.0.1", 0, true);
    await plane.program(snapshot(3));
    expect(await versionOver(grpc.credentials.createSsl(Buffer.from(ca.cert)), tlsPort)).toBe(
      snapshot(3).version,
    );
    const plain = adsClient(plainPort);
    const s = sotwStream(plain);
    s.send({ node: NODE, type_url: TYPE_URL.cluster });
    expect((await s.next()).message.version_info).toBe(snapshot(3).version);
    // Both ports feed one set of clients: the one on the plaintext port counts.
    expect(plane.clients()).toHaveLength(1);
    s.end();
    plain.close();
    // And the TLS port stays TLS.
    await expect(versionOver(grpc.credentials.createInsecure(), tlsPort)).rejects.toThrow();
  });
});
