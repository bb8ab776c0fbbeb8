// The rules of api/xds_protocol.rst the server relies on, each against a
// client that follows them: the legacy wildcard and its end, unsubscribing
// (one name, or a whole type with the empty list), make-before-break across
// every kind of change, checked response by response, on both variants; and
// the status that follows: a client counts only for the routes it was sent.

import { status as grpcStatus, type Client } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adsSnapshot, edgeRoute, endpoints, PORT } from "../../../test/xds/fixtures.js";
import { ModelAdsClient } from "../../../test/xds/model-ads-client.js";
import { adsClient, deltaStream, sotwStream } from "../../../test/xds/raw-ads-client.js";
import type { EdgeRouteV2 } from "../../api/types.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import type { EndpointsByService, Snapshot } from "../../translate/snapshot.js";
import { decodeResource } from "./proto-codec.js";
import { SPARE_NAMES } from "./resources.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const route = (name: string, service: string, hosts = [`${name}.example.com`]): EdgeRouteV2 =>
  edgeRoute(name, hosts, [
    { matches: [{ path: { type: "PathPrefix", value: "/api" } }], backends: [{ name: service, port: PORT }] },
  ]);
const cluster = (service: string) => `shop/${service}:${PORT}`;

const ALL = endpoints({ a: [1001], b: [1002], c: [1003], d: [1004] });
const base = () => adsSnapshot([route("a", "a"), route("b", "b")], ALL);

function without(eps: EndpointsByService, service: string): EndpointsByService {
  const m = new Map(eps);
  m.delete(`shop/${service}`);
  return m;
}

/** Every kind of change, each from `base`. */
const CHANGES: readonly { readonly name: string; readonly next: () => Snapshot }[] = [
  { name: "backend switched", next: () => adsSnapshot([route("a", "c"), route("b", "b")], ALL) },
  { name: "route deleted", next: () => adsSnapshot([route("a", "a")], ALL) },
  { name: "Service deleted", next: () => adsSnapshot([route("a", "a"), route("b", "b")], without(ALL, "b")) },
  {
    name: "endpoints moved",
    next: () => adsSnapshot([route("a", "a"), route("b", "b")], endpoints({ a: [2001], b: [1002] })),
  },
  {
    name: "host added",
    next: () => adsSnapshot([route("a", "a"), route("b", "b"), route("d", "d", ["a.example.com"])], ALL),
  },
  {
    name: "host removed",
    next: () => adsSnapshot([route("a", "a", ["a.example.com", "b.example.com"])], ALL),
  },
];

let plane: XdsDataPlane;
let client: Client;

beforeAll(async () => {
  plane = new XdsDataPlane({ ackTimeoutMs: 3_000 });
  client = adsClient(await plane.listen("127.0.0.1", 0));
});

afterAll(async () => {
  client?.close();
  await plane?.stop();
});

async function until(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  expect(ok()).toBe(true);
}

function clustersOf(s: Snapshot): string[] {
  return s.resources.clusters.map((c) => c.name).sort();
}

describe("make-before-break: no moment in which a route names a cluster the client does not hold", () => {
  for (const protocol of ["sotw", "delta"] as const)
    for (const kind of ["envoy", "grpc"] as const)
      it(`${protocol}, ${kind === "envoy" ? "an Envoy-like client" : "a gRPC-like client"}: every kind of change and back`, async () => {
        expect(await plane.program(base())).toMatchObject({ ok: false, reason: "NoDataPlane" });
        const model = new ModelAdsClient(client, {
          protocol,
          kind: kind === "envoy" ? { envoy: true } : { hosts: ["a.example.com", "b.example.com"] },
          nodeId: `${protocol}-${kind}`,
        });
        try {
          // Until it asked for its listeners: before that it holds no route.
          await until(() =>
            plane
              .clients()
              .some((c) => c.id === `${protocol}-${kind}` && c.types[TYPE_URL.listener] !== undefined),
          );
          const first = await plane.program(base());
          expect(first, JSON.stringify(first)).toMatchObject({ ok: true });
          for (const change of CHANGES) {
            for (const s of [change.next(), base()]) {
              const result = await plane.program(s);
              expect(result, `${change.name}: ${JSON.stringify(result)}`).toMatchObject({
                ok: true,
                version: s.version,
              });
              expect(model.breaks, `${change.name}: ${JSON.stringify(model.log.slice(-8))}`).toEqual([]);
              // Removals came last, but they came: the client holds what the snapshot has.
              if (kind === "envoy") expect(model.clusters(), change.name).toEqual(clustersOf(s));
            }
          }
        } finally {
          await model.close();
        }
      });
});

describe("subscriptions as the protocol defines them", () => {
  it("SotW: a later empty list unsubscribes (no answer, and the type no longer holds the client's status)", async () => {
    const s = sotwStream(client);
    const snapshot = adsSnapshot([route("a", "a"), route("b", "b", ["a2.example.com"])], ALL);
    await plane.program(snapshot);
    // gRPC-like, host a: LDS, RDS, then its cluster and its endpoints.
    const steps: [string, string[]][] = [
      [TYPE_URL.listener, ["a.example.com"]],
      [TYPE_URL.routeConfiguration, ["edge/a.example.com"]],
      [TYPE_URL.cluster, [cluster("a")]],
      [TYPE_URL.clusterLoadAssignment, [cluster("a")]],
    ];
    const nonces = new Map<string, string>();
    for (const [i, [type_url, names]] of steps.entries()) {
      s.send({ ...(i === 0 ? { node: { id: "grpc-unsub" } } : {}), type_url, resource_names: names });
      const m = (await s.next()).message;
      expect(m.type_url).toBe(type_url);
      s.send({ type_url, version_info: m.version_info, response_nonce: m.nonce, resource_names: names });
      nonces.set(type_url, m.nonce);
    }
    expect(await plane.program(snapshot)).toMatchObject({ ok: true });
    // Route a deleted: its host's routes name no cluster now.
    const next = adsSnapshot([route("b", "b", ["a2.example.com"])], ALL);
    const t0 = Date.now();
    const pushed = plane.program(next);
    // Endpoints without a's may come first (left out is not removed, in State of the World).
    let rds = (await s.next()).message;
    if (rds.type_url === TYPE_URL.clusterLoadAssignment) {
      s.send({ type_url: rds.type_url, response_nonce: rds.nonce, resource_names: [cluster("a")] });
      nonces.set(rds.type_url, rds.nonce);
      rds = (await s.next()).message;
    }
    expect(rds.type_url).toBe(TYPE_URL.routeConfiguration);
    s.send({
      type_url: rds.type_url,
      version_info: rds.version_info,
      response_nonce: rds.nonce,
      resource_names: ["edge/a.example.com"],
    });
    // Its routes name no cluster now: grpc-go unsubscribes CDS and EDS with empty lists.
    for (const type_url of [TYPE_URL.cluster, TYPE_URL.clusterLoadAssignment])
      s.send({ type_url, response_nonce: nonces.get(type_url) ?? "", resource_names: [] });
    expect(await pushed).toMatchObject({ ok: true, version: next.version });
    expect(Date.now() - t0).toBeLessThan(1_000);
    // An empty CDS list is not a wildcard once the stream named clusters: nothing is sent.
    expect(await s.quiet(300)).toBe(true);
    expect(plane.clients().find((c) => c.id === "grpc-unsub")?.types[TYPE_URL.cluster]?.names).toEqual([]);
    s.end();
  });

  it("SotW: a first request with no names is a wildcard for clusters, not for endpoints", async () => {
    const snapshot = base();
    await plane.program(snapshot);
    const s = sotwStream(client);
    s.send({ node: { id: "legacy" }, type_url: TYPE_URL.cluster, resource_names: [] });
    const cds = (await s.next()).message;
    expect(cds.resources.map((r) => decodeResource(r).name)).toEqual([cluster("a"), cluster("b")]);
    // Still the legacy wildcard: no name was ever asked for.
    s.send({ type_url: TYPE_URL.cluster, version_info: cds.version_info, response_nonce: cds.nonce });
    s.send({ type_url: TYPE_URL.clusterLoadAssignment, resource_names: [] });
    expect(await s.quiet(300)).toBe(true);
    expect(plane.clients().find((c) => c.id === "legacy")?.types).toMatchObject({
      [TYPE_URL.cluster]: { names: "*" },
      [TYPE_URL.clusterLoadAssignment]: { names: [] },
    });
    s.end();
  });

  it("Delta: the legacy wildcard ends once a name is asked for; a name unsubscribed is not removed", async () => {
    await plane.program(base());
    const d = deltaStream(client);
    d.send({ node: { id: "delta-legacy" }, type_url: TYPE_URL.cluster });
    const all = (await d.next()).message;
    expect(all.resources.map((r) => r.name)).toEqual([cluster("a"), cluster("b")]);
    // Naming one resource leaves the legacy wildcard: b is no longer asked for; the
    // client drops it itself, the server sends no removal for it.
    d.send({
      type_url: TYPE_URL.cluster,
      response_nonce: all.nonce,
      resource_names_subscribe: [cluster("a")],
      resource_names_unsubscribe: [cluster("b")],
    });
    expect(await d.quiet(300)).toBe(true);
    expect(plane.clients().find((c) => c.id === "delta-legacy")?.types[TYPE_URL.cluster]?.names).toEqual([
      cluster("a"),
    ]);
    // A change to b is not sent to it any more.
    await plane.program(adsSnapshot([route("a", "a"), route("b", "b")], endpoints({ a: [1001], b: [9] })));
    expect(await d.quiet(300)).toBe(true);
    d.end();
  });
});

describe("ACKs and NACKs by nonce", () => {
  it("Delta: an answer with a nonce never sent, or already answered, changes nothing", async () => {
    const snapshot = base();
    await plane.program(snapshot);
    const d = deltaStream(client);
    d.send({
      node: { id: "delta-nonces" },
      type_url: TYPE_URL.routeConfiguration,
      resource_names_subscribe: ["edge"],
    });
    const rds = (await d.next()).message;
    const standing = () => plane.server.statuses().find((c) => c.id === "delta-nonces")?.status.kind;
    // A NACK of a nonce this stream never sent: not a refusal of anything.
    d.send({
      type_url: TYPE_URL.routeConfiguration,
      response_nonce: "no-such",
      error_detail: { message: "stale" },
    });
    expect(await d.quiet(200)).toBe(true);
    expect(standing()).toBe("pending");
    d.send({ type_url: TYPE_URL.routeConfiguration, response_nonce: rds.nonce });
    await until(() => standing() === "acked");
    // The same nonce again, now as a NACK: already answered, so ignored.
    d.send({
      type_url: TYPE_URL.routeConfiguration,
      response_nonce: rds.nonce,
      error_detail: { message: "late" },
    });
    expect(await d.quiet(200)).toBe(true);
    expect(standing()).toBe("acked");
    d.end();
  });
});

describe("status per client", () => {
  it("a stream that asked for nothing, or only for clusters, holds no route and counts for none", async () => {
    const snapshot = base();
    const s = sotwStream(client);
    s.send({ node: { id: "silent" }, type_url: "type.googleapis.com/envoy.unknown.v3.Thing" });
    const c = sotwStream(client);
    c.send({ node: { id: "clusters-only" }, type_url: TYPE_URL.cluster });
    const cds = (await c.next()).message;
    c.send({ type_url: TYPE_URL.cluster, version_info: cds.version_info, response_nonce: cds.nonce });
    await new Promise((r) => setTimeout(r, 100));
    expect(await plane.program(snapshot)).toMatchObject({ ok: false, reason: "NoDataPlane" });
    expect(plane.standing(snapshot.version)?.live("shop/a")).toMatchObject({
      ok: false,
      reason: "NoDataPlane",
    });
    s.end();
    c.end();
  });

  it("a NACK marks only the routes in what that client was sent; a deleted route waits only for clients of its hosts", async () => {
    const snapshot = base();
    await plane.program(snapshot);
    const grpcLike = async (host: string, service: string) => {
      const s = sotwStream(client);
      const steps: [string, string[]][] = [
        [TYPE_URL.listener, [host]],
        [TYPE_URL.routeConfiguration, [`edge/${host}`]],
        [TYPE_URL.cluster, [cluster(service)]],
        [TYPE_URL.clusterLoadAssignment, [cluster(service)]],
      ];
      for (const [i, [type_url, names]] of steps.entries()) {
        s.send({ ...(i === 0 ? { node: { id: `grpc-${service}` } } : {}), type_url, resource_names: names });
        const m = (await s.next()).message;
        s.send({ type_url, version_info: m.version_info, response_nonce: m.nonce, resource_names: names });
      }
      return s;
    };
    const a = await grpcLike("a.example.com", "a");
    const b = await grpcLike("b.example.com", "b");
    expect(await plane.program(snapshot)).toMatchObject({ ok: true });
    // Route b's path changes; b's client refuses the new route configuration.
    const next = adsSnapshot(
      [
        route("a", "a"),
        edgeRoute(
          "b",
          ["b.example.com"],
          [{ matches: [{ path: { type: "Exact", value: "/v2" } }], backends: [{ name: "b", port: PORT }] }],
        ),
      ],
      ALL,
    );
    const pushed = plane.program(next);
    const rds = (await b.next()).message;
    b.send({
      type_url: rds.type_url,
      response_nonce: rds.nonce,
      resource_names: ["edge/b.example.com"],
      error_detail: { code: 3, message: "route b: no" },
    });
    expect(await pushed).toMatchObject({ ok: false, reason: "Rejected" });
    const standing = plane.standing(next.version);
    expect(standing?.live("shop/a")).toEqual({ ok: true });
    expect(standing?.live("shop/b")).toMatchObject({
      ok: false,
      reason: "Rejected",
      message: "xDS client grpc-b rejected it: route b: no",
    });
    // A route deleted from host a waits for a's client only: b's refusal does not hold it.
    expect(standing?.deleted(["a.example.com"])).toEqual({ ok: true });
    expect(standing?.deleted(["b.example.com"])).toMatchObject({ ok: false, reason: "Rejected" });
    expect(standing?.deleted(["*.example.com"])).toMatchObject({ ok: false, reason: "Rejected" });
    expect(standing?.deleted(["nowhere.example.org"])).toMatchObject({
      ok: false,
      reason: "NoDataPlane",
      unserved: true,
    });
    a.end();
    b.end();
  });
});

describe("what one stream may ask for", () => {
  it("more names of a type than the snapshot has and 10,000 spare: RESOURCE_EXHAUSTED, the stream ends, others go on", async () => {
    const snapshot = base();
    await plane.program(snapshot);
    const limit = plane.server.addressNameLimit(TYPE_URL.listener);
    expect(limit).toBe(SPARE_NAMES + 1 + 2); // Envoy's listener and the two hosts
    const d = deltaStream(client);
    // 4,000 names a request (a request is at most 4 MiB): the third goes past the limit.
    const batch = (k: number) => Array.from({ length: 4_000 }, (_, i) => `h${k}-${i}.example.com`);
    d.send({ node: { id: "greedy" }, type_url: TYPE_URL.listener, resource_names_subscribe: batch(0) });
    await d.next();
    d.send({ type_url: TYPE_URL.listener, resource_names_subscribe: batch(1) });
    await d.next();
    const ended = new Promise<{ code: number; details: string }>((resolve) =>
      d.call.on("error", (e: { code: number; details: string }) => resolve(e)),
    );
    d.send({ type_url: TYPE_URL.listener, resource_names_subscribe: [...batch(2), ...batch(3)] });
    expect(await ended).toMatchObject({
      code: grpcStatus.RESOURCE_EXHAUSTED,
      details: `a stream may subscribe to at most ${limit} resources of ${TYPE_URL.listener}`,
    });
    await until(() => !plane.clients().some((c) => c.id === "greedy"));
    // A SotW request past the limit, at once.
    const s = sotwStream(client);
    const sotwEnded = new Promise<{ code: number }>((resolve) =>
      s.call.on("error", (e: { code: number }) => resolve(e)),
    );
    s.send({
      node: { id: "greedy-sotw" },
      type_url: TYPE_URL.routeConfiguration,
      resource_names: Array.from({ length: limit + 1 }, (_, i) => `edge/h${i}.example.com`),
    });
    expect(await sotwEnded).toMatchObject({ code: grpcStatus.RESOURCE_EXHAUSTED });
    // More streams from the same address buy no more names: they share the limit.
    const first = deltaStream(client);
    first.send({ node: { id: "share-1" }, type_url: TYPE_URL.listener, resource_names_subscribe: batch(4) });
    await first.next();
    first.send({ type_url: TYPE_URL.listener, resource_names_subscribe: batch(5) });
    await first.next();
    const second = deltaStream(client);
    const secondEnded = new Promise<{ code: number; details: string }>((resolve) =>
      second.call.on("error", (e: { code: number; details: string }) => resolve(e)),
    );
    second.send({ node: { id: "share-2" }, type_url: TYPE_URL.listener, resource_names_subscribe: batch(6) });
    expect(await secondEnded).toMatchObject({
      code: grpcStatus.RESOURCE_EXHAUSTED,
      details: `a stream may subscribe to at most ${limit - 8_000} resources of ${TYPE_URL.listener}`,
    });
    first.end();
    // Another client is served as before.
    const ok = sotwStream(client);
    ok.send({ node: { id: "modest" }, type_url: TYPE_URL.cluster });
    expect((await ok.next()).message.resources.length).toBe(clustersOf(snapshot).length);
    ok.end();
  });
});
