// The record a replica writes for its own clients (XdsDataPlane.ownRecord),
// driven by hand-written ADS clients: each stream's standing on the version
// served comes from that stream now, not from what a client of the same node
// id, or the same client earlier, did.

import type * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { adsClient, sotwStream } from "../../../test/xds/raw-ads-client.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { combineRecords } from "./ack-records.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const snapshot = adsSnapshot(
  [
    edgeRoute(
      "a",
      ["a.example.com"],
      [{ matches: [{ path: { type: "PathPrefix", value: "/" } }], backends: [{ name: "a", port: PORT }] }],
    ),
  ],
  endpoints({ a: [1001] }),
);
const V = snapshot.version;

let plane: XdsDataPlane;
let client: grpc.Client;

beforeAll(async () => {
  plane = new XdsDataPlane({ ackTimeoutMs: 200 });
  client = adsClient(await plane.listen("127.0.0.1", 0));
  await plane.program(snapshot);
});

afterAll(async () => {
  client?.close();
  await plane?.stop();
});

describe("XdsDataPlane.ownRecord", () => {
  it("two streams of one node id: the one that ACKed holds the version, the other does not", async () => {
    const s1 = sotwStream(client);
    const s2 = sotwStream(client);
    // Each asks for Envoy's route configuration: a client that holds routes.
    for (const s of [s1, s2])
      s.send({
        node: { id: "dup", cluster: "edge" },
        type_url: TYPE_URL.routeConfiguration,
        resource_names: ["edge"],
      });
    const m1 = (await s1.next()).message;
    await s2.next();
    s1.send({
      type_url: TYPE_URL.routeConfiguration,
      version_info: m1.version_info,
      response_nonce: m1.nonce,
      resource_names: ["edge"],
    });
    await expectSoon(() => plane.ownRecord().clients.filter((c) => c.acked === V).length === 1);
    const record = plane.ownRecord();
    expect(record.served).toBe(V);
    expect(record.clients.map((c) => c.acked ?? "-").sort()).toEqual(["-", V]);
    expect(combineRecords([record], V)).toEqual({ kind: "pending", waiting: ["dup"] });

    // The one that held it asks for more (its clusters' endpoints): pending again until it ACKs those.
    s1.send({ type_url: TYPE_URL.clusterLoadAssignment, resource_names: ["shop/a:" + PORT] });
    const eds = (await s1.next()).message;
    expect(plane.ownRecord().clients.filter((c) => c.acked === V)).toEqual([]);
    s1.send({
      type_url: TYPE_URL.clusterLoadAssignment,
      version_info: eds.version_info,
      response_nonce: eds.nonce,
      resource_names: ["shop/a:" + PORT],
    });
    await expectSoon(() => plane.ownRecord().clients.filter((c) => c.acked === V).length === 1);
    s1.end();
    s2.end();
  });
});

async function expectSoon(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 50 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  expect(ok()).toBe(true);
}
