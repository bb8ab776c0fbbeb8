// `serve --dataplane xds`: the ADS port's TLS follows the serving key pair
// wherever it comes from, without a restart: files rewritten (cert-manager's
// Secret mounted, or a user's rotation), and the built-in Secret renewed by
// the server itself. What a proxy would see: the certificate a new handshake
// on the ADS port gets, the same as the HTTPS port's.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import crypto from "node:crypto";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCa, issueCertificate, type KeyPair } from "../../src/certs/pki.js";
import { httpsJson } from "../../tools/testenv/https-json.js";
import { startControlPlane } from "../harness/control-plane.js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startCli, startServe, type ServeProcess } from "../../tools/testenv/operator.js";
import { freePort, must, waitFor } from "../../tools/testenv/process.js";

let cp: ControlPlane;
let dir: string;

beforeAll(async () => {
  cp = await startControlPlane();
  dir = mkdtempSync(path.join(os.tmpdir(), "edge-xds-tls-"));
});

afterAll(async () => {
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The certificate a new TLS handshake on `port` is shown, or undefined if it fails. gRPC asks for h2; the HTTPS port speaks http/1.1. */
function presented(port: number, caPem: string, alpn = "h2"): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = tls.connect(
      { host: "127.0.0.1", port, ca: caPem, ALPNProtocols: [alpn], servername: "localhost" },
      () => {
        const fp = socket.getPeerCertificate().fingerprint256;
        socket.destroy();
        resolve(fp);
      },
    );
    socket.setTimeout(3_000, () => socket.destroy(new Error("timeout")));
    socket.once("error", () => resolve(undefined));
  });
}

const fingerprint = (pem: string) => new crypto.X509Certificate(pem).fingerprint256;
const leaf = (ca: KeyPair) =>
  issueCertificate(ca, {
    commonName: "localhost",
    dnsNames: ["localhost"],
    ips: ["127.0.0.1"],
    usage: "server",
  });

describe("the ADS port's TLS is reloaded with the serving key pair", () => {
  it("files: rewritten on disk, both ports present the new certificate within seconds", async () => {
    const [oldCa, newCa] = [createCa({ commonName: "old" }), createCa({ commonName: "new" })];
    const first = leaf(oldCa);
    const certFile = path.join(dir, "tls.crt");
    const keyFile = path.join(dir, "tls.key");
    writeFileSync(certFile, first.cert);
    writeFileSync(keyFile, first.key);
    const adsPort = await freePort();
    let serve: ServeProcess | undefined;
    try {
      serve = await startServe({
        tls: { caPem: oldCa.cert, certFile, keyFile },
        args: ["--kubeconfig", cp.kubeconfig, "--dataplane", "xds", "--xds-listen", `127.0.0.1:${adsPort}`],
      });
      expect(await presented(adsPort, oldCa.cert)).toBe(fingerprint(first.cert));
      // Without --debug-routes there is no debug route at all.
      for (const route of ["/debug/xds", "/debug/dataplane"])
        expect((await httpsJson(`${serve.url}${route}`, oldCa.cert, "GET")).status, route).toBe(404);

      const renewed = leaf(newCa);
      writeFileSync(keyFile, renewed.key);
      writeFileSync(certFile, renewed.cert);
      const want = fingerprint(renewed.cert);
      await waitFor(
        "the ADS port to present the new certificate",
        async () => ((await presented(adsPort, newCa.cert)) === want ? true : undefined),
        15_000,
        200,
      );
      expect(await presented(serve.port, newCa.cert, "http/1.1")).toBe(want);
      // The old CA no longer verifies what the ADS port shows.
      expect(await presented(adsPort, oldCa.cert)).toBeUndefined();
    } finally {
      await serve?.stop();
    }
  });

  it("--cert-secret: the server renews the pair in its Secret, and the ADS port serves the renewed one", async () => {
    const ns = "xds-tls";
    await must("create namespace", cp.kubectl(["create", "namespace", ns]));
    const [port, adsPort] = [await freePort(), await freePort()];
    const server = startCli("serve-managed-xds", [
      "serve",
      "--listen",
      `127.0.0.1:${port}`,
      "--kubeconfig",
      cp.kubeconfig,
      "--dataplane",
      "xds",
      "--xds-listen",
      `127.0.0.1:${adsPort}`,
      "--cert-secret",
      `${ns}/serving`,
      "--cert-ip",
      "127.0.0.1",
      "--cert-dns",
      "localhost",
      "--cert-check-interval",
      "1",
    ]);
    try {
      const secret = async () =>
        JSON.parse(
          await must("get secret", cp.kubectl(["get", "secret", "serving", "-n", ns, "-o", "json"])),
        ) as { data: Record<string, string> };
      const data = await waitFor(
        "the Secret",
        async () => {
          const r = await cp.kubectl(["get", "secret", "serving", "-n", ns, "-o", "json"]);
          return r.code === 0 ? (JSON.parse(r.stdout) as { data: Record<string, string> }).data : undefined;
        },
        30_000,
        200,
      );
      const pem = (k: string, d: Record<string, string>) => Buffer.from(d[k] ?? "", "base64").toString();
      const ca = pem("ca.crt", data);
      const firstFp = fingerprint(pem("tls.crt", data));
      await waitFor(
        "the ADS port up",
        async () => ((await presented(adsPort, ca)) === firstFp ? true : undefined),
        30_000,
        200,
      );

      // A serving certificate the stored CA did not issue: the next check renews it.
      const stranger = leaf(createCa({ commonName: "stranger" }));
      const patch = { data: { "tls.crt": Buffer.from(stranger.cert).toString("base64") } };
      await must(
        "patch secret",
        cp.kubectl(["patch", "secret", "serving", "-n", ns, "--type=merge", "-p", JSON.stringify(patch)]),
      );
      const renewed = await waitFor(
        "the server to renew the pair in its Secret",
        async () => {
          const d = (await secret()).data;
          const fp = fingerprint(pem("tls.crt", d));
          return fp !== firstFp && fp !== fingerprint(stranger.cert) ? fp : undefined;
        },
        30_000,
        250,
      );
      await waitFor(
        "the ADS port to present the renewed certificate",
        async () => ((await presented(adsPort, ca)) === renewed ? true : undefined),
        15_000,
        200,
      );
      expect(await presented(port, ca, "http/1.1")).toBe(renewed);
    } finally {
      await server.stop();
    }
  });
});
