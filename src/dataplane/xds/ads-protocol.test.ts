// The ADS protocol as a client written by hand sees it, both variants: what is
// sent for wildcard and named subscriptions, in which order, with which
// versions and nonces; ACK, NACK and stale nonces; Delta's diffs and removals.
// (grpc-client.test.ts drives the same server with gRPC's real xDS client.)

import * as grpc from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { adsClient, deltaStream, sotwStream } from "../../../test/xds/raw-ads-client.js";
import { createCa, issueCertificate } from "../../certs/pki.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { decodeResource } from "./proto-codec.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const route = (name: string, service: string) =>
  edgeRoute(
    name,
    [`${name}.example.com`],
    [
      {
        matches: [{ path: { type: "PathPrefix", value: "/api" } }],
        backends: [{ name: service, port: PORT }],
      },
    ],
  );
const cluster = (service: string) => `shop/${service}:${PORT}`;
const NODE = { id: "envoy-1", cluster: "edge" };

/** The client's answer to `m`: an ACK, asking for `names` (none: as before, or the wildcard). */
function ack(
  s: ReturnType<typeof sotwStream>,
  m: { type_url: string; version_info: string; nonce: string },
  names: string[] = [],
): void {
  s.send({
    type_url: m.type_url,
    version_info: m.version_info,
    response_nonce: m.nonce,
    resource_names: names,
  });
}

let plane: XdsDataPlane;
let client: grpc.Client;

beforeAll(async () => {
  plane = new XdsDataPlane({ ackTimeoutMs: 3_000 });
  client = adsClient(await plane.listen("127.0.0.1", 0));
});

afterAll(() => {
  client?.close();
  plane?.stop();
});

const two = adsSnapshot([route("a", "a"), route("b", "b")], endpoints({ a: [1001], b: [1002] }));
const three = adsSnapshot(
  [route("a", "a"), route("b", "b"), route("c", "c")],
  endpoints({ a: [1001], b: [1002], c: [1003] }),
);

describe("State of the World", () => {
  it("wildcard and named subscriptions, versions, nonces, ACKs, and the push order", async () => {
    await plane.program(two);
    const s = sotwStream(client);
    s.send({ node: NODE, type_url: TYPE_URL.cluster });
    const cds = (await s.next()).message;
    expect(cds).toMatchObject({ version_info: two.version, type_url: TYPE_URL.cluster });
    expect(cds.resources.map((r) => decodeResource(r).name)).toEqual([cluster("a"), cluster("b")]);
    s.send({ type_url: TYPE_URL.clusterLoadAssignment, resource_names: [cluster("a"), cluster("b")] });
    const eds = (await s.next()).message;
    expect(eds.resources.map((r) => decodeResource(r).cluster_name)).toEqual([cluster("a"), cluster("b")]);
    // A wildcard LDS client (Envoy) gets Envoy's listener only: no API listener.
    s.send({ type_url: TYPE_URL.listener });
    const lds = (await s.next()).message;
    expect(lds.resources.map((r) => decodeResource(r).name)).toEqual(["http"]);
    // The route configuration names clusters the client has not ACKed: it waits for them.
    s.send({ type_url: TYPE_URL.routeConfiguration, resource_names: ["edge"] });
    expect(await s.quiet(200)).toBe(true);
    ack(s, cds);
    expect(await s.quiet(200)).toBe(true);
    ack(s, eds, [cluster("a"), cluster("b")]);
    const rds = (await s.next()).message;
    expect(rds.type_url).toBe(TYPE_URL.routeConfiguration);
    expect(new Set([cds.nonce, eds.nonce, lds.nonce, rds.nonce]).size).toBe(4);
    // Not ACKed yet: pending, and nothing claims the version.
    expect(plane.server.verdict()).toEqual({ kind: "pending", waiting: ["envoy-1"] });
    expect(await plane.current()).toBeUndefined();
    ack(s, lds);
    ack(s, rds, ["edge"]);
    expect(await plane.program(two)).toEqual({ ok: true, version: two.version, pushed: false });
    expect(await plane.current()).toBe(two.version);

    // A new route with a new Service: the cluster goes first; the route configuration
    // that names it only once the client holds it and its endpoints.
    const pushed = plane.program(three);
    const first = (await s.next()).message;
    expect(first.type_url).toBe(TYPE_URL.cluster);
    expect(first.version_info).toBe(three.version);
    expect(await s.quiet(200)).toBe(true);
    ack(s, first);
    // Holding the cluster but not its endpoints (not even asked for): still no routes.
    expect(await s.quiet(200)).toBe(true);
    expect(plane.server.verdict().kind).toBe("pending");
    // A stale nonce (an answer to an older response) is ignored, names and all.
    s.send({ type_url: TYPE_URL.clusterLoadAssignment, response_nonce: "0", resource_names: [cluster("c")] });
    expect(await s.quiet(200)).toBe(true);
    const abc = [cluster("a"), cluster("b"), cluster("c")];
    s.send({ type_url: TYPE_URL.clusterLoadAssignment, response_nonce: eds.nonce, resource_names: abc });
    const eds3 = (await s.next()).message;
    expect(eds3.resources.map((r) => decodeResource(r).cluster_name)).toEqual(abc);
    ack(s, eds3, abc);
    const rds3 = (await s.next()).message;
    expect(rds3).toMatchObject({ type_url: TYPE_URL.routeConfiguration, version_info: three.version });
    ack(s, rds3, ["edge"]);
    expect(await pushed).toEqual({ ok: true, version: three.version, pushed: true });

    // Routes b and c deleted: the route configuration goes first; the clusters it no
    // longer names are removed only once the client took it. Then a NACK: the
    // client's words, and the version is nobody's.
    const four = adsSnapshot([route("a", "a")], endpoints({ a: [1001] }));
    const refused = plane.program(four);
    // Endpoints without b's and c's may come first: in State of the World an
    // endpoint assignment left out is not removed.
    let rds4 = (await s.next()).message;
    if (rds4.type_url === TYPE_URL.clusterLoadAssignment) {
      ack(s, rds4, abc);
      rds4 = (await s.next()).message;
    }
    expect(rds4.type_url).toBe(TYPE_URL.routeConfiguration);
    expect(await s.quiet(200)).toBe(true);
    ack(s, rds4, ["edge"]);
    const cds4 = (await s.next()).message;
    expect(cds4.type_url).toBe(TYPE_URL.cluster);
    expect(cds4.resources.map((r) => decodeResource(r).name)).toEqual([cluster("a")]);
    s.send({
      type_url: TYPE_URL.cluster,
      response_nonce: cds4.nonce,
      error_detail: { code: 3, message: "cluster a: no" },
    });
    expect(await refused).toEqual({
      ok: false,
      version: four.version,
      reason: "Rejected",
      message: "xDS client envoy-1 rejected it: cluster a: no",
      detail: "xDS client envoy-1 rejected it: cluster a: no",
    });
    expect(plane.clients()[0]?.types[TYPE_URL.cluster]).toMatchObject({
      acked: three.version,
      nacked: { version: four.version },
    });
    s.end();
  });

  it("a named LDS subscription gets an API listener for that host, through ADS to a route configuration of that host's own", async () => {
    await plane.program(two);
    const s = sotwStream(client);
    s.send({
      node: { id: "grpc-1" },
      type_url: TYPE_URL.listener,
      resource_names: ["a.example.com", "nowhere.example.com"],
    });
    const lds = (await s.next()).message;
    const listeners = lds.resources.map((r) => decodeResource(r));
    expect(listeners.map((l) => l.name)).toEqual(["a.example.com", "nowhere.example.com"]);
    expect(listeners[0]).toMatchObject({
      api_listener: {
        api_listener: {
          "@type": TYPE_URL.httpConnectionManager,
          rds: {
            config_source: { ads: {}, resource_api_version: "V3" },
            route_config_name: "edge/a.example.com",
          },
        },
      },
    });
    const names = ["a.example.com", "nowhere.example.com"];
    s.send({ type_url: TYPE_URL.listener, response_nonce: lds.nonce, resource_names: names });
    const rdsNames = names.map((n) => `edge/${n}`);
    s.send({ type_url: TYPE_URL.routeConfiguration, resource_names: rdsNames });
    const rds = (await s.next()).message;
    const [own, none] = rds.resources.map((r) => decodeResource(r));
    // Only the virtual host a.example.com lands on: b's routes are not sent to a's clients.
    expect(own).toMatchObject({ name: "edge/a.example.com" });
    expect((own?.virtual_hosts as { domains: string[] }[]).map((v) => v.domains)).toEqual([
      ["a.example.com"],
    ]);
    // A host no route names lands on the catch-all, which has no routes.
    expect(none).toEqual({
      "@type": TYPE_URL.routeConfiguration,
      name: "edge/nowhere.example.com",
      virtual_hosts: [{ name: "*", domains: ["*"] }],
    });
    s.send({ type_url: TYPE_URL.routeConfiguration, response_nonce: rds.nonce, resource_names: rdsNames });
    s.send({ type_url: TYPE_URL.cluster, resource_names: [cluster("a")] });
    const cds = (await s.next()).message;
    expect(cds.resources.map((r) => decodeResource(r).name)).toEqual([cluster("a")]);
    s.send({ type_url: TYPE_URL.cluster, response_nonce: cds.nonce, resource_names: [cluster("a")] });
    s.send({ type_url: TYPE_URL.clusterLoadAssignment, resource_names: [cluster("a")] });
    const eds = (await s.next()).message;
    s.send({
      type_url: TYPE_URL.clusterLoadAssignment,
      response_nonce: eds.nonce,
      resource_names: [cluster("a")],
    });
    expect(await plane.program(two)).toMatchObject({ ok: true });
    // b's route changes: nothing is sent to a's client, which holds the new version as it is.
    const bMoved = adsSnapshot(
      [
        route("a", "a"),
        edgeRoute(
          "b",
          ["b.example.com"],
          [
            {
              matches: [{ path: { type: "PathPrefix", value: "/v2" } }],
              backends: [{ name: "b", port: PORT }],
            },
          ],
        ),
      ],
      endpoints({ a: [1001], b: [1002] }),
    );
    expect(await plane.program(bMoved)).toMatchObject({ ok: true, version: bMoved.version });
    expect(await s.quiet(200)).toBe(true);
    s.end();
  });
});

describe("Delta", () => {
  it("sends what differs from what the client holds, removals by name and last, and takes ACKs and NACKs per nonce", async () => {
    await plane.program(two);
    const d = deltaStream(client);
    d.send({ node: { id: "envoy-delta" }, type_url: TYPE_URL.cluster, resource_names_subscribe: ["*"] });
    const cds = (await d.next()).message;
    expect(cds).toMatchObject({
      system_version_info: two.version,
      type_url: TYPE_URL.cluster,
      removed_resources: [],
    });
    expect(cds.resources.map((r) => r.name)).toEqual([cluster("a"), cluster("b")]);
    d.send({ type_url: TYPE_URL.cluster, response_nonce: cds.nonce });
    d.send({
      type_url: TYPE_URL.clusterLoadAssignment,
      resource_names_subscribe: [cluster("a"), cluster("b")],
    });
    const eds = (await d.next()).message;
    d.send({ type_url: TYPE_URL.clusterLoadAssignment, response_nonce: eds.nonce });
    const versions = new Map(eds.resources.map((r) => [r.name, r.version]));
    d.send({ type_url: TYPE_URL.listener, resource_names_subscribe: ["*"] });
    const lds = (await d.next()).message;
    d.send({ type_url: TYPE_URL.listener, response_nonce: lds.nonce });
    d.send({ type_url: TYPE_URL.routeConfiguration, resource_names_subscribe: ["edge"] });
    const rds = (await d.next()).message;
    d.send({ type_url: TYPE_URL.routeConfiguration, response_nonce: rds.nonce });
    expect(await plane.program(two)).toMatchObject({ ok: true });

    // b's endpoints move: one ClusterLoadAssignment goes, nothing else.
    const moved = adsSnapshot([route("a", "a"), route("b", "b")], endpoints({ a: [1001], b: [2002] }));
    const pushed = plane.program(moved);
    const diff = (await d.next()).message;
    expect(diff.type_url).toBe(TYPE_URL.clusterLoadAssignment);
    expect(diff.resources.map((r) => r.name)).toEqual([cluster("b")]);
    expect(diff.resources[0]?.version).not.toBe(versions.get(cluster("b")));
    expect(await d.quiet(200)).toBe(true);
    d.send({ type_url: TYPE_URL.clusterLoadAssignment, response_nonce: diff.nonce });
    expect(await pushed).toEqual({ ok: true, version: moved.version, pushed: true });

    // Route b deleted: the route configuration goes first; its cluster is removed by
    // name once the client took routes that no longer name it.
    const onlyA = adsSnapshot([route("a", "a")], endpoints({ a: [1001], b: [2002] }));
    const removed = plane.program(onlyA);
    const routes = (await d.next()).message;
    expect(routes).toMatchObject({ type_url: TYPE_URL.routeConfiguration, removed_resources: [] });
    expect(await d.quiet(200)).toBe(true);
    d.send({ type_url: TYPE_URL.routeConfiguration, response_nonce: routes.nonce });
    const gone = (await d.next()).message;
    expect(gone).toMatchObject({
      type_url: TYPE_URL.cluster,
      resources: [],
      removed_resources: [cluster("b")],
    });
    const goneEds = (await d.next()).message;
    expect(goneEds).toMatchObject({
      type_url: TYPE_URL.clusterLoadAssignment,
      removed_resources: [cluster("b")],
    });
    d.send({ type_url: TYPE_URL.cluster, response_nonce: gone.nonce, error_detail: { message: "keep b" } });
    expect(await removed).toMatchObject({
      ok: false,
      reason: "Rejected",
      message: "xDS client envoy-delta rejected it: keep b",
    });
    d.end();
  });

  it("a client of several hosts gets only the route configuration of the host that changed", async () => {
    await plane.program(two);
    const d = deltaStream(client);
    const hosts = ["edge/a.example.com", "edge/b.example.com"];
    d.send({
      node: { id: "grpc-delta" },
      type_url: TYPE_URL.routeConfiguration,
      resource_names_subscribe: hosts,
    });
    const first = (await d.next()).message;
    expect(first.resources.map((r) => r.name)).toEqual(hosts);
    d.send({ type_url: TYPE_URL.routeConfiguration, response_nonce: first.nonce });
    const bMoved = adsSnapshot(
      [
        route("a", "a"),
        edgeRoute(
          "b",
          ["b.example.com"],
          [{ matches: [{ path: { type: "Exact", value: "/v2" } }], backends: [{ name: "b", port: PORT }] }],
        ),
      ],
      endpoints({ a: [1001], b: [1002] }),
    );
    const pushed = plane.program(bMoved);
    const diff = (await d.next()).message;
    expect(diff.resources.map((r) => r.name)).toEqual(["edge/b.example.com"]);
    expect(diff.removed_resources).toEqual([]);
    const [b] = diff.resources.map((r) => decodeResource(r.resource));
    expect(JSON.stringify(b)).toContain('"path":"/v2"');
    d.send({ type_url: TYPE_URL.routeConfiguration, response_nonce: diff.nonce });
    expect(await pushed).toMatchObject({ ok: true, version: bMoved.version });
    d.end();
  });

  it("a reconnecting client that says what it holds gets only what changed", async () => {
    await plane.program(two);
    const first = deltaStream(client);
    first.send({ node: { id: "envoy-again" }, type_url: TYPE_URL.cluster, resource_names_subscribe: ["*"] });
    const all = (await first.next()).message;
    first.end();
    const held = Object.fromEntries(all.resources.map((r) => [r.name, r.version]));
    held[cluster("b")] = "stale";
    const again = deltaStream(client);
    again.send({
      node: { id: "envoy-again" },
      type_url: TYPE_URL.cluster,
      resource_names_subscribe: ["*"],
      initial_resource_versions: held,
    });
    const diff = (await again.next()).message;
    expect(diff.resources.map((r) => r.name)).toEqual([cluster("b")]);
    again.end();
  });
});

describe("TLS", () => {
  it("with the operator's serving key pair, a client that trusts the CA gets the snapshot; a plaintext one does not", async () => {
    const ca = createCa();
    const leaf = issueCertificate(ca, {
      commonName: "edge-operator",
      dnsNames: ["localhost"],
      ips: ["127.0.0.1"],
      usage: "server",
    });
    const tls = new XdsDataPlane({ tls: { cert: Buffer.from(leaf.cert), key: Buffer.from(leaf.key) } });
    const port = await tls.listen("127.0.0.1", 0);
    try {
      await tls.program(two);
      const trusted = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createSsl(Buffer.from(ca.cert)));
      const s = sotwStream(trusted);
      s.send({ node: NODE, type_url: TYPE_URL.cluster });
      expect((await s.next()).message.version_info).toBe(two.version);
      s.end();
      trusted.close();
      const plain = adsClient(port);
      const p = sotwStream(plain);
      p.send({ node: NODE, type_url: TYPE_URL.cluster });
      await expect(p.next(1_500)).rejects.toThrow();
      p.end();
      plain.close();
    } finally {
      tls.stop();
    }
  });
});
