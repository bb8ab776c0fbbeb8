// A client whose connection goes silent (a partition: no FIN) may still serve
// what it held, so it keeps counting, as not answering, until it is back or
// forgotten; a client that leaves (its FIN) stops counting at once. Through a
// relay that cuts the link without closing a socket, with keepalive at 300 ms.

import { afterEach, describe, expect, it } from "vitest";
import { adsSnapshot, edgeRoute, endpoints, NS, PORT } from "../../../test/xds/fixtures.js";
import { startPartitionRelay, type PartitionRelay } from "../../../test/xds/partition-relay.js";
import { startSotwClient, type SotwClient } from "../../../test/xds/scripted-ads-client.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const HOST = "silent.example.com";
const CLUSTER = `${NS}/blue:${PORT}`;
const route = edgeRoute(
  "r",
  [HOST],
  [{ matches: [{ path: { type: "PathPrefix", value: "/" } }], backends: [{ name: "blue", port: PORT }] }],
);
const withRoute = adsSnapshot([route], endpoints({ blue: [1] }));
const withoutRoute = adsSnapshot([], endpoints({ blue: [1] }));

let plane: XdsDataPlane | undefined;
let relay: PartitionRelay | undefined;
const clients: SotwClient[] = [];

afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await relay?.close();
  await plane?.stop();
  plane = relay = undefined;
});

async function setUp(
  forgetUnreachableAfterMs = 60_000,
): Promise<{ plane: XdsDataPlane; relay: PartitionRelay }> {
  plane = new XdsDataPlane({
    ackTimeoutMs: 500,
    forgetUnreachableAfterMs,
    keepalive: { timeMs: 300, timeoutMs: 300 },
  });
  const port = await plane.listen("127.0.0.1", 0);
  relay = await startPartitionRelay(port);
  return { plane, relay };
}

/** A client through the relay, connected and subscribed. */
async function client(port: number, node = "proxy-1"): Promise<SotwClient> {
  const c = startSotwClient({
    port,
    node,
    subscriptions: [
      [TYPE_URL.listener, [HOST]],
      [TYPE_URL.routeConfiguration, [`edge/${HOST}`]],
      [TYPE_URL.cluster, [CLUSTER]],
      [TYPE_URL.clusterLoadAssignment, [CLUSTER]],
    ],
  });
  clients.push(c);
  await until("the client connected and subscribed", () =>
    plane?.server.statuses().some((v) => v.id === node && v.scope !== "*" && v.scope.length > 0)
      ? true
      : undefined,
  );
  return c;
}

async function until<T>(what: string, probe: () => T | undefined, ms = 5_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const unreachable = (p: XdsDataPlane) => p.server.statuses().filter((s) => s.unreachableSince !== undefined);

describe("a client whose connection goes silent", () => {
  it("keeps a deleted route's standing at Pending, naming it, until it is back and ACKs", async () => {
    const { plane, relay } = await setUp();
    await client(relay.port);
    expect((await plane.program(withRoute)).ok).toBe(true);

    relay.cut();
    // The server's keepalive finds the link dead and closes the connection: no FIN came.
    await until("the client counted as unreachable", () =>
      unreachable(plane).length === 1 ? true : undefined,
    );
    const push = await plane.program(withoutRoute);
    expect(push).toMatchObject({ ok: false, reason: "Pending" });
    expect(!push.ok && push.message).toMatch(/xDS client proxy-1 has not answered since .*went silent/);
    const standing = plane.standing(withoutRoute.version);
    const deleted = standing?.deleted([HOST]);
    expect(deleted).toMatchObject({ ok: false, reason: "Pending" });
    expect(deleted && !deleted.ok && deleted.unserved).not.toBe(true);

    // Back: the client connects again (its own reconnect: the same node id), takes the
    // snapshot without the route, and the silent one is gone.
    relay.up();
    await client(relay.port);
    await until("the client back and synced", () =>
      plane.standing(withoutRoute.version)?.deleted([HOST]).ok ? true : undefined,
    );
    expect(unreachable(plane)).toEqual([]);
  }, 20_000);

  it("a client that leaves (FIN) stops counting at once: nothing serves the route, its finalizer may go", async () => {
    const { plane, relay } = await setUp();
    const c = await client(relay.port);
    expect((await plane.program(withRoute)).ok).toBe(true);
    await c.close();
    await until("no client connected", () => (plane.server.statuses().length === 0 ? true : undefined));
    // Past the keepalive and the gate's close wait: still nobody remembered.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(unreachable(plane)).toEqual([]);
    const push = await plane.program(withoutRoute);
    expect(push).toMatchObject({ ok: false, reason: "NoDataPlane", unserved: true });
  }, 20_000);

  it("is forgotten after forgetUnreachableAfter, and then counts for nothing", async () => {
    const { plane, relay } = await setUp(1_500);
    await client(relay.port);
    expect((await plane.program(withRoute)).ok).toBe(true);
    relay.cut();
    await until("unreachable", () => (unreachable(plane).length === 1 ? true : undefined));
    await until("forgotten", () => (unreachable(plane).length === 0 ? true : undefined), 5_000);
    const push = await plane.program(withoutRoute);
    expect(push).toMatchObject({ ok: false, reason: "NoDataPlane", unserved: true });
  }, 20_000);
});
