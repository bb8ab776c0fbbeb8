// Mutual TLS binds a node id to the client's certificate: a proxy is known by
// its certificate's name and the id it sent, so another client with a
// certificate of its own cannot claim that proxy's id, in the list of
// clients or in the words of a NACK that status shows.

import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { sotwStream } from "../../../test/xds/raw-ads-client.js";
import { createCa, issueCertificate, type KeyPair } from "../../certs/pki.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { boundNodeId } from "./node-identity.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const HOST = "bound.example.com";
const snapshot = adsSnapshot(
  [
    edgeRoute(
      "r",
      [HOST],
      [{ matches: [{ path: { type: "PathPrefix", value: "/" } }], backends: [{ name: "blue", port: PORT }] }],
    ),
  ],
  endpoints({ blue: [1] }),
);

let plane: XdsDataPlane;
let port: number;
let serverCa: KeyPair;
let proxies: KeyPair;
const clients: grpc.Client[] = [];

function connect(cert: KeyPair): grpc.Client {
  const creds = grpc.credentials.createSsl(
    Buffer.from(serverCa.cert),
    Buffer.from(cert.key),
    Buffer.from(cert.cert),
  );
  const c = new grpc.Client(`127.0.0.1:${port}`, creds);
  clients.push(c);
  return c;
}

/** A gRPC-like client on `HOST`; NACKs its route configuration with `nack` if given. */
async function proxy(cert: KeyPair, nodeId: string, nack?: string): Promise<void> {
  const s = sotwStream(connect(cert));
  s.send({
    node: { id: nodeId, cluster: "edge" },
    type_url: TYPE_URL.routeConfiguration,
    resource_names: [`edge/${HOST}`],
  });
  const m = (await s.next()).message;
  s.send({
    type_url: TYPE_URL.routeConfiguration,
    resource_names: [`edge/${HOST}`],
    response_nonce: m.nonce,
    ...(nack ? { error_detail: { code: 3, message: nack } } : { version_info: m.version_info }),
  });
}

beforeAll(async () => {
  serverCa = createCa();
  proxies = createCa({ commonName: "proxies" });
  const serving = issueCertificate(serverCa, {
    commonName: "edge-operator",
    ips: ["127.0.0.1"],
    usage: "server",
  });
  plane = new XdsDataPlane({ tls: { ...serving, clientCa: proxies.cert }, ackTimeoutMs: 1_000 });
  port = await plane.listen("127.0.0.1", 0);
  void plane.program(snapshot);
});

afterAll(async () => {
  for (const c of clients) c.close();
  await plane.stop();
});

describe("a node id bound to the client certificate", () => {
  it("is the certificate's name and the id sent, unless the id already begins with that name", () => {
    expect(boundNodeId("envoy", "edge-envoy-7d9f")).toBe("envoy/edge-envoy-7d9f");
    expect(boundNodeId("envoy", "envoy/edge-envoy-7d9f")).toBe("envoy/edge-envoy-7d9f");
    expect(boundNodeId("envoy", "envoy")).toBe("envoy");
    expect(boundNodeId("envoy", "")).toBe("envoy");
    // A prefix that is not the whole name speaks for nobody else.
    expect(boundNodeId("envoy", "envoy-other")).toBe("envoy/envoy-other");
    expect(boundNodeId("evil", "envoy/edge-envoy-7d9f")).toBe("evil/envoy/edge-envoy-7d9f");
  });

  it("another certificate claiming a proxy's id NACKs under its own name, never the proxy's", async () => {
    const envoy = issueCertificate(proxies, { commonName: "envoy", usage: "client" });
    const evil = issueCertificate(proxies, { commonName: "evil", usage: "client" });
    await proxy(envoy, "envoy/edge-envoy-1");
    await proxy(evil, "envoy/edge-envoy-1", "I am not who I say");
    await new Promise((r) => setTimeout(r, 200));
    expect(plane.clients().map((c) => c.id)).toEqual(["envoy/edge-envoy-1", "evil/envoy/edge-envoy-1"]);
    const verdict = plane.server.verdict();
    expect(verdict).toMatchObject({ kind: "rejected" });
    expect(verdict.kind === "rejected" ? verdict.message : "").toMatch(
      /^xDS client evil\/envoy\/edge-envoy-1 rejected it/,
    );
  });
});
