// XdsDataPlane.onStandingChange: told when a client connects, leaves or
// answers while no push waits on it, and not for what a waiting push reports
// itself (the reconcile that pushed writes that).

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adsSnapshot, edgeRoute, endpoints, NS, PORT } from "../../../test/xds/fixtures.js";
import { startSotwClient, type SotwClient } from "../../../test/xds/scripted-ads-client.js";
import { TYPE_URL } from "../../envoy/envoy-resources.js";
import { XdsDataPlane } from "./xds-dataplane.js";

const HOST = "change.example.com";
const CLUSTER = `${NS}/blue:${PORT}`;

function routeTo(prefix: string) {
  return adsSnapshot(
    [
      edgeRoute(
        "r",
        [HOST],
        [
          {
            matches: [{ path: { type: "PathPrefix", value: prefix } }],
            backends: [{ name: "blue", port: PORT }],
          },
        ],
      ),
    ],
    endpoints({ blue: [1] }),
  );
}

let plane: XdsDataPlane;
let port: number;
let told = 0;
const clients: SotwClient[] = [];

function client(node: string): SotwClient {
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
  return c;
}

async function toldWithin(ms: number): Promise<number> {
  const before = told;
  const deadline = Date.now() + ms;
  while (told === before && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  return told - before;
}

beforeAll(async () => {
  plane = new XdsDataPlane({ ackTimeoutMs: 300 });
  port = await plane.listen("127.0.0.1", 0);
  plane.onStandingChange(() => told++);
  expect((await plane.program(routeTo("/a"))).ok).toBe(false); // no client: NoDataPlane at once
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await plane.stop();
});

describe("onStandingChange", () => {
  it("a client connecting is told", async () => {
    const before = told;
    const c = client("joiner");
    await c.waitFor(TYPE_URL.routeConfiguration, () => true);
    await toldWithin(2_000);
    expect(told).toBeGreaterThan(before);
  });

  it("a push the client ACKs while program() waits tells nobody: the push reports it", async () => {
    await new Promise((r) => setTimeout(r, 200));
    const before = told;
    const res = await plane.program(routeTo("/b"));
    expect(res.ok).toBe(true);
    await new Promise((r) => setTimeout(r, 300));
    expect(told - before).toBe(0);
  });

  it("an ACK that comes after program() stopped waiting is told", async () => {
    const late = client("late");
    late.answer(TYPE_URL.routeConfiguration, { kind: "hold" });
    await late.waitFor(TYPE_URL.routeConfiguration, () => true);
    await toldWithin(500); // its connect
    const res = await plane.program(routeTo("/c"));
    expect(res).toMatchObject({ ok: false, reason: "Pending" });
    const before = told;
    late.answer(TYPE_URL.routeConfiguration, { kind: "ack" });
    expect(await toldWithin(2_000)).toBeGreaterThan(0);
    expect(told).toBeGreaterThan(before);
    expect(await plane.current()).toBe(routeTo("/c").version);
  });

  it("a client leaving is told", async () => {
    const before = told;
    const c = clients.shift();
    await c?.close();
    await toldWithin(2_000);
    expect(told).toBeGreaterThan(before);
  });
});
