// Mutual TLS on the ADS port by default, on the real apiserver: `serve
// --cert-secret ... --dataplane xds` (as the chart runs it) keeps a client
// pair for the proxies in a Secret of its own, issued by the operator's CA;
// the TLS ADS port refuses a client without a certificate, serves one that
// presents the Secret's pair, and knows it as `envoy/<its node id>`.

import * as grpc from "@grpc/grpc-js";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCrd } from "../../src/api/crd.js";
import { CRD_NAME } from "../../src/api/types.js";
import { describeCertificate, isIssuedBy } from "../../src/certs/pki.js";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import { httpsJson } from "../../tools/testenv/https-json.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startCli } from "../../tools/testenv/operator.js";
import { watcherIdentity } from "../harness/operator-stack.js";
import { freePort, must, waitFor, type Supervised } from "../../tools/testenv/process.js";
import { sotwStream } from "../xds/raw-ads-client.js";

const NS = "xds-mtls";
let cp: ControlPlane;
let dir: string;

beforeAll(async () => {
  cp = await startControlPlane();
  dir = mkdtempSync(path.join(os.tmpdir(), "edge-xds-mtls-"));
  await must("create namespace", cp.kubectl(["create", "namespace", NS]));
  // The server's cache lists routes before it serves a snapshot: the CRD must be there (v2 storage, no conversion).
  await must("apply CRD", cp.kubectl(["apply", "-f", "-"], { input: JSON.stringify(buildCrd()) }));
  await must(
    "CRD established",
    cp.kubectl(["wait", "--for=condition=Established", `crd/${CRD_NAME}`, "--timeout=60s"]),
  );
});

afterAll(async () => {
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

type SecretJson = { type?: string; data?: Record<string, string> };

async function secret(name: string): Promise<SecretJson | undefined> {
  const r = await cp.kubectl(["get", "secret", name, "-n", NS, "-o", "json"]);
  return r.code === 0 ? (JSON.parse(r.stdout) as SecretJson) : undefined;
}

const pem = (s: SecretJson, key: string): string => Buffer.from(s.data?.[key] ?? "", "base64").toString();

/** The version a CDS request over these credentials is answered with, or the error when none comes. */
async function cdsOver(creds: grpc.ChannelCredentials, port: number, nodeId: string): Promise<string> {
  const client = new grpc.Client(`127.0.0.1:${port}`, creds);
  const s = sotwStream(client);
  try {
    s.send({ node: { id: nodeId, cluster: "edge" }, type_url: TYPE_URL.cluster });
    return (await s.next(15_000)).message.version_info;
  } finally {
    s.end();
    client.close();
  }
}

describe("mutual TLS on the ADS port with the built-in certificates", () => {
  let server: Supervised | undefined;
  afterAll(async () => {
    await server?.stop();
  });

  it("issues the proxies' pair into its Secret, refuses a client without a certificate, serves one with the pair as envoy/<node id>", async () => {
    const { token } = await watcherIdentity(cp, dir);
    const [port, adsPort] = [await freePort(), await freePort()];
    server = startCli("serve-xds-mtls", [
      "serve",
      "--listen",
      `127.0.0.1:${port}`,
      "--kubeconfig",
      cp.kubeconfig,
      "--dataplane",
      "xds",
      "--xds-listen",
      `127.0.0.1:${adsPort}`,
      "--debug-routes",
      "--cert-secret",
      `${NS}/serving`,
      "--cert-ip",
      "127.0.0.1",
      "--xds-client-cert-secret",
      "envoy-ads-client",
    ]);
    const client = await waitFor("the client Secret", () => secret("envoy-ads-client"), 30_000, 200);
    const serving = (await secret("serving")) as SecretJson;
    // A kubernetes.io/tls Secret a proxy mounts whole: its pair and the CA bundle, never the CA key.
    expect(client.type).toBe("kubernetes.io/tls");
    expect(Object.keys(client.data ?? {}).sort()).toEqual(["ca.crt", "tls.crt", "tls.key"]);
    const caBundle = pem(serving, "ca.crt");
    expect(pem(client, "ca.crt")).toBe(caBundle);
    const cert = pem(client, "tls.crt");
    expect(isIssuedBy(pem(serving, "ca.crt"), cert)).toBe(true);
    expect(describeCertificate(cert).commonName).toBe("envoy");

    const trust = Buffer.from(caBundle);
    const withPair = grpc.credentials.createSsl(
      trust,
      Buffer.from(pem(client, "tls.key")),
      Buffer.from(cert),
    );
    let last = "";
    const served = await waitFor(
      "the ADS port to serve the pair's holder",
      async () => {
        try {
          return await cdsOver(withPair, adsPort, "edge-envoy-7d9f");
        } catch (err) {
          last = String(err);
          return undefined;
        }
      },
      30_000,
      250,
    ).catch((err: unknown) => {
      throw new Error(`${String(err)}: ${last}\n${server?.output() ?? ""}`);
    });
    expect(typeof served).toBe("string");
    // No certificate: refused in the handshake, however the client asks.
    await expect(cdsOver(grpc.credentials.createSsl(trust), adsPort, "edge-envoy-7d9f")).rejects.toThrow();

    // The client is known by its certificate's name and the id it sent.
    const known = async (): Promise<string | undefined> => {
      const holder = grpc.credentials.createSsl(
        trust,
        Buffer.from(pem(client, "tls.key")),
        Buffer.from(cert),
      );
      const c = new grpc.Client(`127.0.0.1:${adsPort}`, holder);
      const s = sotwStream(c);
      try {
        s.send({ node: { id: "edge-envoy-7d9f", cluster: "edge" }, type_url: TYPE_URL.cluster });
        await s.next(15_000);
        const r = await httpsJson(`https://127.0.0.1:${port}/debug/xds`, caBundle, "GET", undefined, token);
        return JSON.stringify(r.body);
      } finally {
        s.end();
        c.close();
      }
    };
    const debug = await known();
    expect(debug).toContain('"envoy/edge-envoy-7d9f"');
  });
});
