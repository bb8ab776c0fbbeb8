// 10,000 routes served to 10 connected clients (BENCHMARKS.md, xDS over gRPC): the ADS server in a
// process of its own with the chart's NODE_OPTIONS, and ten clients on
// loopback: Envoy's subscriptions on both protocols, and a gRPC-like process
// with a channel to each of the 500 hosts on both protocols. Each must hold
// every route, cluster and endpoint set, the server must stay within 155 MiB,
// and a one-route change must reach a Delta client of every host as that one
// host's route configuration, not the whole table. Needs `npm run build`.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { messageType } from "../../src/dataplane/xds/proto-codec.js";
import { TYPE_URL } from "../../src/envoy/envoy-resources.js";
import { scaleClient, type ScaleClient } from "../xds/scale-client.js";
import { scaleHosts, scaleInput } from "../xds/scale-input.js";
import { startScaleServer, type ScaleServer } from "../xds/scale-process.js";

const ROUTES = 10_000;
const MIB = 1024 * 1024;
// 150 MiB until the snapshot's guard ran admission's rule set: this process
// then loads ajv's compiled schemas too (3.5 MiB more live heap: 39.6-39.7
// against 36.1-36.2 MiB), which the serve process always held for /validate.
const LIMIT = 155 * MIB;

const input = scaleInput(ROUTES, 1);
const hosts = scaleHosts(input);
const base = input.base();
const accepted = base.outcomes.filter((o) => o.accepted).map((o) => o.key);
let server: ScaleServer;
let clients: ScaleClient[] = [];

beforeAll(async () => {
  server = await startScaleServer(ROUTES);
  const kinds = [
    ...[1, 2, 3, 4].flatMap((i) => [
      { protocol: "sotw" as const, id: `envoy-sotw-${i}` },
      { protocol: "delta" as const, id: `envoy-delta-${i}` },
    ]),
    { protocol: "sotw" as const, id: "grpc-sotw", hosts },
    { protocol: "delta" as const, id: "grpc-delta", hosts },
  ];
  clients = kinds.map((k) => scaleClient({ port: server.port, ...k }));
}, 180_000);

afterAll(() => {
  for (const c of clients) c.stop();
  server?.stop();
});

const routeConfiguration = messageType(TYPE_URL.routeConfiguration);

/**
 * The route keys (`namespace/name`) a route configuration's entries come from.
 * Decoded, not converted to JSON: ten 2.76 MB conversions would stall this
 * process past the server's keepalive, and it would drop the clients.
 */
function routeKeys(value: Uint8Array, into: Set<string>): void {
  const rc = routeConfiguration.decode(value) as unknown as {
    virtual_hosts?: { routes?: { name: string }[] }[];
  };
  for (const vh of rc.virtual_hosts ?? [])
    for (const r of vh.routes ?? []) into.add(r.name.slice(0, r.name.lastIndexOf("/r")));
}

async function programmed(change: "base" | "route", k: number): Promise<number> {
  const r = await server.program(change, k);
  expect(r.reason ?? "ok", `program ${change} ${k}`).toBe("ok");
  return r.ms;
}

describe("10,000 routes, 10 clients", () => {
  it("every client holds every route, cluster and endpoint set, and the server stays within 155 MiB", async () => {
    // Bounded: each program() waits at most 120 s for every client's ACK.
    for (let i = 0; i < 10 && (await server.clients()) < clients.length; i++)
      await new Promise((r) => setTimeout(r, 500));
    expect(await server.clients()).toBe(clients.length);
    await programmed("base", 0);
    const clusters = base.resources.clusters.map((c) => c.name).sort();
    expect(accepted.length).toBe(ROUTES);
    for (const c of clients) {
      const keys = new Set<string>();
      for (const v of c.held.get(TYPE_URL.routeConfiguration)?.values() ?? []) routeKeys(v, keys);
      expect(keys.size, `${c.id}: routes held`).toBe(ROUTES);
      expect([...(c.held.get(TYPE_URL.cluster)?.keys() ?? [])].sort(), `${c.id}: clusters`).toEqual(clusters);
      expect(c.held.get(TYPE_URL.clusterLoadAssignment)?.size, `${c.id}: endpoint sets`).toBe(
        clusters.length,
      );
    }
    const mem = await server.memory();
    expect(mem.maxRss, `peak RSS ${(mem.maxRss / MIB).toFixed(1)} MiB`).toBeLessThanOrEqual(LIMIT);
    expect(mem.heapUsed).toBeLessThanOrEqual(LIMIT);
  }, 300_000);

  it("a one-route change reaches every client; a Delta client of every host gets that host only", async () => {
    const before = new Map(clients.map((c) => [c.id, c.bytes()]));
    await programmed("route", 1);
    const changedHost = input.routes[0]?.spec.hostnames?.[0] as string;
    const edgeSize = clients[0]?.held.get(TYPE_URL.routeConfiguration)?.get("edge")?.byteLength ?? 0;
    expect(edgeSize).toBeGreaterThan(2 * MIB);
    for (const c of clients) {
      const rcs = c.held.get(TYPE_URL.routeConfiguration);
      const own = rcs?.get("edge") ?? rcs?.get(`edge/${changedHost}`);
      expect(Buffer.from(own ?? []).includes("/changed/v1"), `${c.id} holds the change`).toBe(true);
    }
    const sent = (id: string) => (clients.find((c) => c.id === id)?.bytes() ?? 0) - (before.get(id) ?? 0);
    // Delta and many hosts: one host's route configuration (about 5 KB), not the table.
    expect(sent("grpc-delta")).toBeLessThan(edgeSize / 100);
    // State of the World sends every route configuration the client names again.
    expect(sent("grpc-sotw")).toBeGreaterThan(edgeSize / 2);
    const mem = await server.memory();
    expect(mem.maxRss, `peak RSS ${(mem.maxRss / MIB).toFixed(1)} MiB`).toBeLessThanOrEqual(LIMIT);
    process.stdout.write(
      `xds-scale: server peak RSS ${(mem.maxRss / MIB).toFixed(1)} MiB, heap used ${(mem.heapUsed / MIB).toFixed(1)} MiB ` +
        `(${(mem.heapUsedAfterGc / MIB).toFixed(1)} MiB live, external ${(mem.externalAfterGc / MIB).toFixed(1)} MiB live, RSS after ${(mem.rssAfterGc / MIB).toFixed(1)} MiB), node options ${server.nodeOptions.join(" ")}\n`,
    );
  }, 300_000);
});
