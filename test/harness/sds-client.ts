// A proxy's view of one SDS Secret: an xds server (`serve --dataplane xds`,
// mutual TLS with the proxies' pair from the operator's CA, as the chart runs
// it) and a raw ADS client holding that pair, subscribed to the Secret
// `namespace/name` over State of the World, ACKing what it gets. For the TLS
// integration test and bench:tls-rotation.

import * as grpc from "@grpc/grpc-js";
import type { ControlPlane } from "../../tools/testenv/control-plane.js";
import { startCli } from "../../tools/testenv/operator.js";
import { freePort, waitFor, type Supervised } from "../../tools/testenv/process.js";
import { sotwStream } from "../xds/raw-ads-client.js";

/** TYPE_URL.secret, as the contract names it. */
export const SDS_SECRET = "type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret";

/**
 * An xds server (`serve --dataplane xds`, mutual TLS with the proxies' pair
 * from the operator's CA, as the chart runs it) and a raw ADS client holding
 * that pair, subscribed to one SDS Secret. Only with ADS_SERVES_TLS_SECRETS.
 */
export async function adsSecretClient(
  cp: ControlPlane,
  namespace: string,
  secret: string,
): Promise<{
  seen(pem: string, withinMs: number): Promise<number>;
  /** The xds server's log so far. */
  output(): string;
  close(): Promise<void>;
}> {
  const [port, adsPort] = [await freePort(), await freePort()];
  const server: Supervised = startCli("serve-tls-sds", [
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
    `${namespace}/serving`,
    "--cert-ip",
    "127.0.0.1",
    "--xds-client-cert-secret",
    "envoy-ads-client",
  ]);
  type SecretJson = { data?: Record<string, string> };
  const read = async (name: string): Promise<SecretJson | undefined> => {
    const r = await cp.kubectl(["get", "secret", name, "-n", namespace, "-o", "json"]);
    return r.code === 0 ? (JSON.parse(r.stdout) as SecretJson) : undefined;
  };
  const pem = (s: SecretJson, key: string): Buffer => Buffer.from(s.data?.[key] ?? "", "base64");
  const pair = await waitFor("the proxies' client pair", () => read("envoy-ads-client"), 30_000, 200);
  const creds = grpc.credentials.createSsl(pem(pair, "ca.crt"), pem(pair, "tls.key"), pem(pair, "tls.crt"));
  const client = new grpc.Client(`127.0.0.1:${adsPort}`, creds);
  // The ADS port opens once the server's cache has listed and its certificate is in place.
  await new Promise<void>((resolve, reject) =>
    client.waitForReady(Date.now() + 30_000, (err) => (err ? reject(err) : resolve())),
  ).catch((err: unknown) => {
    throw new Error(`the ADS port did not take the client: ${String(err)}\n${server.output().slice(-2000)}`);
  });
  const stream = sotwStream(client);
  const node = { id: "envoy-tls-test", cluster: "edge" };
  stream.send({ node, type_url: SDS_SECRET, resource_names: [`${namespace}/${secret}`] });
  return {
    async seen(certificate, withinMs) {
      // A base64 line of the certificate (node-forge ends lines with CRLF): it is in the SDS resource's bytes.
      const line = certificate.split(/\r?\n/)[2] ?? certificate;
      const start = Date.now();
      for (;;) {
        const left = withinMs - (Date.now() - start);
        if (left <= 0) throw new Error(`no SDS response with the renewed certificate within ${withinMs} ms`);
        const { message } = await stream.next(left);
        stream.send({
          node,
          type_url: SDS_SECRET,
          resource_names: [`${namespace}/${secret}`],
          version_info: message.version_info,
          response_nonce: message.nonce,
        });
        if (message.resources.some((r) => Buffer.from(r.value).toString("latin1").includes(line)))
          return Date.now() - start;
      }
    },
    output: () => server.output(),
    async close() {
      stream.end();
      client.close();
      await server.stop();
    },
  };
}
