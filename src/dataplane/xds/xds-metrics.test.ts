// The xDS figures a scrape shows, driven by a client written by hand: clients
// by protocol, the version each holds, ACKs and NACKs by type, the time to
// answer, and the bytes sent.

import type * as grpc from "@grpc/grpc-js";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { adsClient, sotwStream } from "../../../test/xds/raw-ads-client.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { typeLabel } from "./xds-metrics.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const route = edgeRoute(
  "a",
  ["a.example.com"],
  [{ matches: [{ path: { type: "PathPrefix", value: "/api" } }], backends: [{ name: "a", port: PORT }] }],
);
const snap = adsSnapshot([route], endpoints({ a: [1001] }));

let registry: Registry;
let plane: XdsDataPlane;
let client: grpc.Client;

beforeAll(async () => {
  registry = new Registry();
  plane = new XdsDataPlane({ ackTimeoutMs: 2_000, registry });
  client = adsClient(await plane.listen("127.0.0.1", 0));
});

afterAll(() => {
  client?.close();
  void plane?.stop();
});

/** `name{labels}` → value, from the text a scrape gets. */
async function scrape(): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await registry.metrics()).split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    out.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return out;
}

describe("xDS metrics", () => {
  it("names types by their short name, and nothing else", () => {
    expect(typeLabel(TYPE_URL.listener)).toBe("Listener");
    expect(typeLabel(TYPE_URL.clusterLoadAssignment)).toBe("ClusterLoadAssignment");
    expect(typeLabel("type.googleapis.com/x.y.Not-A-Type!")).toBe("other");
  });

  it("a client that takes clusters and refuses a listener shows in every figure", async () => {
    await plane.program(snap);
    const s = sotwStream(client);
    s.send({ node: { id: "envoy-1", cluster: "edge" }, type_url: TYPE_URL.cluster });
    const cds = (await s.next()).message;
    let m = await scrape();
    expect(m.get('edge_operator_xds_clients{protocol="sotw"}')).toBe(1);
    expect(m.get('edge_operator_xds_clients{protocol="delta"}')).toBe(0);
    expect(m.get('edge_operator_xds_responses_total{type="Cluster"}')).toBe(1);
    expect(m.get('edge_operator_xds_sent_bytes_total{type="Cluster"}')).toBeGreaterThan(0);
    expect(m.get(`edge_operator_xds_served_version_info{version="${snap.version}"}`)).toBe(1);
    expect(m.get('edge_operator_xds_client_versions{version="none"}')).toBe(1);

    s.send({ type_url: TYPE_URL.cluster, version_info: cds.version_info, response_nonce: cds.nonce });
    s.send({ type_url: TYPE_URL.listener });
    const lds = (await s.next()).message;
    s.send({
      type_url: TYPE_URL.listener,
      response_nonce: lds.nonce,
      error_detail: { code: 3, message: "no listener for me" },
    });
    await s.quiet(100);
    m = await scrape();
    expect(m.get('edge_operator_xds_acks_total{type="Cluster"}')).toBe(1);
    expect(m.get('edge_operator_xds_nacks_total{type="Listener"}')).toBe(1);
    expect(m.get('edge_operator_xds_response_ack_seconds_count{type="Cluster"}')).toBe(1);
    expect(m.get('edge_operator_xds_response_ack_seconds_count{type="Listener"}')).toBe(1);

    s.end();
    for (let i = 0; i < 50 && (await scrape()).get('edge_operator_xds_clients{protocol="sotw"}') !== 0; i++)
      await new Promise((r) => setTimeout(r, 20));
    m = await scrape();
    expect(m.get('edge_operator_xds_clients{protocol="sotw"}')).toBe(0);
    expect([...m.keys()].some((k) => k.startsWith("edge_operator_xds_client_versions"))).toBe(false);
  });
});
