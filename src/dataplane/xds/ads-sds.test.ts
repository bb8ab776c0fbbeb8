// Secrets by SDS over ADS go only to proxies that proved who they are: a raw
// ADS client with a client certificate the operator's CA signed gets the
// Secret (State of the World and Delta); one on the plaintext port, and one on
// a TLS port without mutual TLS, get none (and no HTTPS listener that would
// wait for one). A renewed Secret reaches a connected client as a change of
// the Secret alone. A fuzzed set of bad Secrets never crashes the server and
// no key byte reaches a log line or an outcome message.

import * as grpc from "@grpc/grpc-js";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { GOLDEN_NOW, goldenInput } from "../../../test/golden/xds-cases.js";
import { adsClient, deltaStream, sotwStream } from "../../../test/xds/raw-ads-client.js";
import { createCa, issueCertificate, type KeyPair } from "../../certs/pki.js";
import { HTTPS_LISTENER_NAME, TYPE_URL } from "../../envoy/envoy-resources.js";
import { createLogger } from "../../observability/logger.js";
import { buildSnapshot, type Snapshot, type TlsSecret, type TlsSecrets } from "../../translate/snapshot.js";
import { decodeResource } from "./proto-codec.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const FIXTURES = join(import.meta.dirname, "../../../test/fixtures/tls");
const pem = (file: string) => readFileSync(join(FIXTURES, file), "utf8");
const SECRET = "shop/shop-tls";
const NODE = { id: "envoy-1", cluster: "edge" };

/** The golden case's routes and endpoints with these Secrets, served over ADS. */
function tlsSnapshot(secrets: TlsSecrets): Snapshot {
  const { routes, endpoints } = goldenInput("tls-single-host");
  return buildSnapshot(routes, endpoints, { configSource: { kind: "ads" }, now: GOLDEN_NOW }, secrets);
}
const shop: TlsSecret = { certificate: pem("shop.crt"), privateKey: pem("shop.key") };
const renewed: TlsSecret = { certificate: pem("shop-renewed.crt"), privateKey: pem("shop-renewed.key") };

/** Every piece of a key that would give it away: the base64 body whole, each of its lines, and its base64 again. */
function keyPieces(key: string): string[] {
  const body = key.replace(/-----[A-Z ]+-----/g, "").replace(/\s+/g, "");
  return [
    body,
    Buffer.from(key).toString("base64").slice(0, 40),
    ...key.split("\n").filter((l) => l.length >= 16 && !l.startsWith("-----")),
  ];
}

interface Setup {
  readonly plane: XdsDataPlane;
  readonly tlsPort: number;
  readonly plainPort: number;
  readonly ca: KeyPair;
  /** Credentials with the operator's CA as trust and a client certificate it signed. */
  readonly proxy: grpc.ChannelCredentials;
  readonly logs: string[];
}

let plane: XdsDataPlane | undefined;
const clients: grpc.Client[] = [];
afterEach(() => {
  for (const c of clients.splice(0)) c.close();
  plane?.stop();
  plane = undefined;
});

async function setup(mutual: boolean): Promise<Setup> {
  const ca = createCa();
  const serving = issueCertificate(ca, { commonName: "edge-operator", ips: ["127.0.0.1"], usage: "server" });
  const client = issueCertificate(ca, { commonName: "envoy", usage: "client" });
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(chunk.toString("utf8"));
      done();
    },
  });
  const log = createLogger({ level: "trace", destination });
  plane = new XdsDataPlane({
    tls: { ...serving, ...(mutual ? { clientCa: ca.cert } : {}) },
    ackTimeoutMs: 300,
    log,
  });
  const tlsPort = await plane.listen("127.0.0.1", 0);
  const plainPort = await plane.server.listen("127.0.0.1", 0, true);
  const proxy = grpc.credentials.createSsl(
    Buffer.from(ca.cert),
    Buffer.from(client.key),
    Buffer.from(client.cert),
  );
  return { plane, tlsPort, plainPort, ca, proxy, logs };
}

function connect(port: number, creds?: grpc.ChannelCredentials): grpc.Client {
  const c = creds === undefined ? adsClient(port) : new grpc.Client(`127.0.0.1:${port}`, creds);
  clients.push(c);
  return c;
}

const decoded = (r: { type_url: string; value: Uint8Array }) => decodeResource(r) as Record<string, unknown>;

describe("SDS over ADS", () => {
  it("State of the World: a client with a client certificate gets the Secret, and the HTTPS listener that names it", async () => {
    const s0 = await setup(true);
    await s0.plane.program(tlsSnapshot(new Map([[SECRET, shop]])));
    const s = sotwStream(connect(s0.tlsPort, s0.proxy));
    s.send({ node: NODE, type_url: TYPE_URL.secret, resource_names: [SECRET] });
    const got = (await s.next()).message;
    expect(got.type_url).toBe(TYPE_URL.secret);
    expect(got.resources.map(decoded)).toEqual([
      {
        "@type": TYPE_URL.secret,
        name: SECRET,
        tls_certificate: {
          certificate_chain: { inline_string: shop.certificate },
          private_key: { inline_string: shop.privateKey },
        },
      },
    ]);
    s.send({ node: NODE, type_url: TYPE_URL.listener });
    const lds = (await s.next()).message;
    expect(lds.resources.map((r) => decoded(r).name)).toEqual(["http", HTTPS_LISTENER_NAME]);
    // A NACK that quotes the key: its words are kept nowhere (/debug/xds prints clients()).
    s.send({
      node: NODE,
      type_url: TYPE_URL.secret,
      resource_names: [SECRET],
      response_nonce: got.nonce,
      version_info: got.version_info,
      error_detail: { code: 3, message: `bad key: ${shop.privateKey}` },
    });
    await new Promise((r) => setTimeout(r, 200));
    const report = JSON.stringify([s0.plane.clients(), s0.plane.server.verdict()]);
    expect(report).toContain("the client refused a Secret");
    for (const piece of keyPieces(shop.privateKey)) expect(report).not.toContain(piece);
    expect(s0.plane.clients()[0]?.mayHoldSecrets).toBe(true);
    s.end();
  });

  it("Delta: a client with a client certificate gets the Secret with its own version", async () => {
    const s0 = await setup(true);
    await s0.plane.program(tlsSnapshot(new Map([[SECRET, shop]])));
    const d = deltaStream(connect(s0.tlsPort, s0.proxy));
    d.send({ node: NODE, type_url: TYPE_URL.secret, resource_names_subscribe: [SECRET] });
    const got = (await d.next()).message;
    expect(got.resources.map((r) => r.name)).toEqual([SECRET]);
    expect(got.resources[0]?.version).toMatch(/^[0-9a-f]{16}$/);
    expect(decoded(got.resources[0]!.resource)).toMatchObject({ name: SECRET });
    d.end();
  });

  it("the plaintext port never offers a Secret, nor the HTTPS listener (SotW and Delta)", async () => {
    const s0 = await setup(true);
    await s0.plane.program(tlsSnapshot(new Map([[SECRET, shop]])));
    const s = sotwStream(connect(s0.plainPort));
    s.send({ node: NODE, type_url: TYPE_URL.secret, resource_names: [SECRET] });
    // Answered as if no such Secret existed: an empty list.
    expect((await s.next()).message.resources).toEqual([]);
    s.send({ node: NODE, type_url: TYPE_URL.listener });
    const lds = (await s.next()).message;
    expect(lds.resources.map((r) => decoded(r).name)).toEqual(["http"]);
    s.end();
    const d = deltaStream(connect(s0.plainPort));
    d.send({ node: NODE, type_url: TYPE_URL.secret, resource_names_subscribe: [SECRET, "*"] });
    expect(await d.quiet(500)).toBe(true);
    d.end();
    expect(s0.logs.join("")).not.toMatch(/"level":50/);
  });

  it("TLS without mutual TLS: a client (even one with a certificate) gets no Secret", async () => {
    const s0 = await setup(false);
    await s0.plane.program(tlsSnapshot(new Map([[SECRET, shop]])));
    for (const creds of [grpc.credentials.createSsl(Buffer.from(s0.ca.cert)), s0.proxy]) {
      const s = sotwStream(connect(s0.tlsPort, creds));
      s.send({ node: NODE, type_url: TYPE_URL.secret, resource_names: [SECRET] });
      expect((await s.next()).message.resources).toEqual([]);
      s.end();
    }
  });

  it("a renewed Secret reaches a connected client as a new Secret version, and nothing else is sent", async () => {
    const s0 = await setup(true);
    await s0.plane.program(tlsSnapshot(new Map([[SECRET, shop]])));
    const s = sotwStream(connect(s0.tlsPort, s0.proxy));
    const types = [TYPE_URL.cluster, TYPE_URL.clusterLoadAssignment, TYPE_URL.secret, TYPE_URL.listener];
    const names: Record<string, string[]> = {
      [TYPE_URL.clusterLoadAssignment]: ["shop/web:80"],
      [TYPE_URL.secret]: [SECRET],
    };
    for (const type_url of types) {
      s.send({ node: NODE, type_url, resource_names: names[type_url] ?? [] });
      const r = (await s.next()).message;
      s.send({
        node: NODE,
        type_url,
        resource_names: names[type_url] ?? [],
        response_nonce: r.nonce,
        version_info: r.version_info,
      });
    }
    const rotated = tlsSnapshot(new Map([[SECRET, renewed]]));
    const started = Date.now();
    void s0.plane.program(rotated);
    const next = (await s.next(5_000)).message;
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(next.type_url).toBe(TYPE_URL.secret);
    expect(next.version_info).toBe(rotated.version);
    expect(decoded(next.resources[0]!)).toMatchObject({
      tls_certificate: { private_key: { inline_string: renewed.privateKey } },
    });
    s.send({
      node: NODE,
      type_url: TYPE_URL.secret,
      resource_names: [SECRET],
      response_nonce: next.nonce,
      version_info: next.version_info,
    });
    expect(await s.quiet(500)).toBe(true);
    s.end();
  });

  it("fuzzed bad Secrets: the server keeps serving, and no key byte reaches a log line or an outcome", async () => {
    const s0 = await setup(true);
    const key = pem("shop.key");
    const other = pem("other.key");
    const cert = pem("shop.crt");
    const bad: TlsSecret[] = [
      { certificate: "not a certificate", privateKey: key },
      { certificate: cert, privateKey: key.slice(0, Math.floor(key.length / 2)) },
      { certificate: cert.slice(0, 300), privateKey: key },
      { certificate: cert, privateKey: other },
      { certificate: key, privateKey: cert },
      {
        certificate: cert,
        privateKey: `-----BEGIN PRIVATE KEY-----\n${"QUFB".repeat(200_000)}\n-----END PRIVATE KEY-----\n`,
      },
      {
        certificate: String.fromCharCode(...Array.from({ length: 4096 }, (_, i) => i % 256)),
        privateKey: "\u0000\uffff",
      },
      { certificate: Buffer.from(cert).toString("base64"), privateKey: Buffer.from(key).toString("base64") },
      { certificate: pem("expired.crt"), privateKey: pem("expired.key") },
    ];
    const watched = sotwStream(connect(s0.tlsPort, s0.proxy));
    watched.send({ node: NODE, type_url: TYPE_URL.secret, resource_names: [SECRET] });
    const outcomes: string[] = [];
    for (const secret of bad) {
      const snapshot = tlsSnapshot(new Map([[SECRET, secret]]));
      outcomes.push(JSON.stringify(snapshot.outcomes));
      // A bad Secret serves no host: no Secret resource, no HTTPS listener.
      expect(snapshot.resources.secrets).toEqual([]);
      await s0.plane.program(snapshot);
    }
    // Still serving: a good one goes out to the client that asked.
    await s0.plane.program(tlsSnapshot(new Map([[SECRET, shop]])));
    let last = (await watched.next()).message;
    while (last.resources.length === 0) last = (await watched.next()).message;
    expect(decoded(last.resources[0]!)).toMatchObject({ name: SECRET });
    watched.end();
    const everything = [...s0.logs, ...outcomes].join("\n");
    expect(s0.logs.length).toBeGreaterThan(0);
    for (const k of [key, other, pem("expired.key"), pem("shop-renewed.key")])
      for (const piece of keyPieces(k)) expect(everything.includes(piece), piece.slice(0, 12)).toBe(false);
  });
});
